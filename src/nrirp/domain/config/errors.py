"""Configuration errors: one :class:`ConfigError` listing every problem with its path and value."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from nrirp.domain.ports.documents import DocumentError

PathSegment = str | int
Path = tuple[PathSegment, ...]

ROOT = "<document>"
MAX_SHOWN_PROBLEMS = 20
"""An error message lists this many problems, then counts the others."""
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_/-]+")
_MAX_QUOTED = 80


class ConfigProblem(NamedTuple):
    """One problem: where (``spec.balloonTypes[2].minCPUs``) and what (quotes the bad value)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class ConfigError(DocumentError):
    """A configuration that is invalid; ``problems`` lists every problem found (checking stops
    once a document has :data:`~nrirp.domain.config.converter.MAX_CHECKED_PROBLEMS` bad
    values). The message shows the first :data:`MAX_SHOWN_PROBLEMS` and counts the rest."""

    def __init__(self, problems: Sequence[ConfigProblem], *, subject: str = "configuration"):
        if not problems:
            raise ValueError("ConfigError needs at least one problem")
        self.problems: list[ConfigProblem] = list(problems)
        self.subject = subject
        super().__init__(self._render())

    def shown_problems(self) -> list[str]:
        """The first :data:`MAX_SHOWN_PROBLEMS` problems as text, then how many more."""
        shown = [str(p) for p in self.problems[:MAX_SHOWN_PROBLEMS]]
        if len(self.problems) > len(shown):
            shown.append(f"... and {len(self.problems) - len(shown)} more")
        return shown

    def _render(self) -> str:
        count = len(self.problems)
        head = f"invalid {self.subject} ({count} problem{'s' if count > 1 else ''})"
        return head + ":\n" + "\n".join(f"  {line}" for line in self.shown_problems())


class InvalidValue(ValueError):
    """Raised by structure hooks for a single bad value; the path is added by the caller."""

    def __init__(self, value: Any, expected: str, *, what: str = "value"):
        self.value = value
        self.expected = expected
        self.what = what
        super().__init__(self.describe())

    def describe(self, what: str | None = None) -> str:
        return f"invalid {what or self.what} {quote(self.value)}: {self.expected}"


Issue = tuple[Path, str]
"""A problem found by semantic validation, with a path relative to the checked object."""


class InvalidObject(ValueError):
    """Raised by a structure hook when a well-typed object breaks cross-field rules."""

    def __init__(self, issues: Iterable[Issue]):
        self.issues: list[Issue] = list(issues)
        super().__init__("; ".join(f"{format_path(p)}: {m}" for p, m in self.issues))


class ConflictingKeys(InvalidObject):
    """Raised when a mapping spells one field twice (its reference key and an alias)."""


def quote(value: Any) -> str:
    """Render a value as it would appear in YAML/JSON, shortened if long."""
    if isinstance(value, str):
        text = "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    elif value is None:
        text = "null"
    elif isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int | float):
        text = repr(value)
    else:
        try:
            text = json.dumps(value, default=str, ensure_ascii=False, sort_keys=False)
        except (TypeError, ValueError):
            text = repr(value)
    if len(text) > _MAX_QUOTED:
        text = text[: _MAX_QUOTED - 3] + "..."
    return text


def format_path(path: Path) -> str:
    """``("spec", "balloonTypes", 2, "minCPUs")`` -> ``spec.balloonTypes[2].minCPUs``."""
    out: list[str] = []
    for seg in path:
        if isinstance(seg, int):
            out.append(f"[{seg}]")
        elif _PLAIN_KEY.fullmatch(seg):
            out.append(f".{seg}" if out else seg)
        else:
            out.append(f"[{json.dumps(seg, ensure_ascii=False)}]")
    return "".join(out) or ROOT
