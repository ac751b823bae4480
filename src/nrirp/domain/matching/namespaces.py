"""Which namespaces a setting applies to: a list of namespace globs compiled once, or every
namespace (the privileged annotations' ``allowedNamespaces`` unset)."""

from __future__ import annotations

from collections.abc import Iterable

from nrirp.domain.matching.globset import GlobSet


class NamespaceFilter:
    """``patterns`` (Go globs, compiled into a :class:`GlobSet`), or ``None`` for every
    namespace."""

    __slots__ = ("_globs", "patterns")

    def __init__(self, patterns: Iterable[str] | None) -> None:
        self._globs = None if patterns is None else GlobSet(patterns)
        self.patterns: tuple[str, ...] | None = (
            None if self._globs is None else self._globs.patterns
        )

    @property
    def everywhere(self) -> bool:
        return self._globs is None

    def allows(self, namespace: str) -> bool:
        return self._globs is None or self._globs.match(namespace)

    def describe(self, limit: int = 5) -> str:
        """The patterns for a message: the first ``limit`` and how many more."""
        if self.patterns is None:
            return "every namespace"
        if not self.patterns:
            return "no namespace"
        shown = ", ".join(self.patterns[:limit])
        more = len(self.patterns) - limit
        return shown + (f" and {more} more" if more > 0 else "")
