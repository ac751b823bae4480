"""A list of glob patterns compiled once, matched at a cost that does not grow with the list.

Configurations list namespaces as globs (``reservedPoolNamespaces``, a balloon type's
``namespaces``) and match expressions list values (``In``, ``MatchesAny``); a decision tests a
pod against them. Testing pattern after pattern makes every decision as slow as the list is
long (50,000 namespaces: seconds per container), so a :class:`GlobSet` is built once per
configuration and then answers with a few lookups:

* patterns without ``*``, ``?``, ``[`` or ``\\`` are exact names, kept in a set;
* the others are grouped by their literal prefix (``team-*`` under ``team-``), else their
  literal suffix (``*-system``), else in one general group; a group of several patterns becomes
  one regular expression. A value is tried against the groups of its own prefixes and
  suffixes only: a handful of dictionary lookups and, for each group found, one match.

The answers are those of :func:`~nrirp.domain.matching.glob.glob_match` (Go's
``filepath.Match``, as the reference): for a value without ``/`` (every Kubernetes namespace)
the translated expressions accept exactly what Go accepts; a value with ``/`` is checked by
Go's algorithm against the patterns of the groups whose expression accepted it. A malformed
pattern matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from nrirp.domain.matching.glob import _ANY, _Chunk, _Class, _compiled, _match, _Token

_META = frozenset("*?[\\")
_SEPARATOR = "/"


class GlobSet:
    """Whether a value matches any of ``patterns`` (Go globs); built once, matched often."""

    __slots__ = ("_exact", "_general", "_prefix_lengths", "_prefixes", "_suffix_lengths",
                 "_suffixes", "patterns")  # fmt: skip

    builds = 0
    """How many sets were built (for tests that check a set is built once per config)."""

    def __init__(self, patterns: Iterable[str]) -> None:
        GlobSet.builds += 1
        self.patterns: tuple[str, ...] = tuple(dict.fromkeys(patterns))
        exact: set[str] = set()
        by_prefix: dict[str, list[_Parsed]] = {}
        by_suffix: dict[str, list[_Parsed]] = {}
        general: list[_Parsed] = []
        for pattern in self.patterns:
            if not _META.intersection(pattern):
                exact.add(pattern)
                continue
            chunks = _compiled(pattern)[0]
            if chunks is None:
                continue  # malformed: matches nothing
            entry = (pattern, chunks)
            prefix, suffix = _literal_prefix(chunks), _literal_suffix(chunks)
            if prefix:
                by_prefix.setdefault(prefix, []).append(entry)
            elif suffix:
                by_suffix.setdefault(suffix, []).append(entry)
            else:
                general.append(entry)
        self._exact = frozenset(exact)
        self._prefixes = {key: _Group(entries) for key, entries in by_prefix.items()}
        self._suffixes = {key: _Group(entries) for key, entries in by_suffix.items()}
        self._prefix_lengths = sorted({len(key) for key in by_prefix})
        self._suffix_lengths = sorted({len(key) for key in by_suffix})
        self._general = _Group(general) if general else None

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def __repr__(self) -> str:
        return f"GlobSet({len(self.patterns)} patterns)"

    def match(self, value: str) -> bool:
        """Whether ``value`` matches one of the patterns (as ``glob_match`` would say)."""
        if value in self._exact:
            return True
        size = len(value)
        for length in self._prefix_lengths:
            if length > size:
                break
            group = self._prefixes.get(value[:length])
            if group is not None and group.match(value):
                return True
        for length in self._suffix_lengths:
            if length > size:
                break
            group = self._suffixes.get(value[size - length :])
            if group is not None and group.match(value):
                return True
        return self._general is not None and self._general.match(value)

    def groups_tried(self, value: str) -> int:
        """How many groups :meth:`match` would try for ``value`` at most (its cost beyond a
        few lookups; for tests that check the cost does not grow with the list)."""
        size = len(value)
        prefixes = [value[:n] for n in self._prefix_lengths if n <= size]
        suffixes = [value[size - n :] for n in self._suffix_lengths if n <= size]
        tried = sum(key in self._prefixes for key in prefixes)
        tried += sum(key in self._suffixes for key in suffixes)
        return tried + (self._general is not None)


_Parsed = tuple[str, tuple[_Chunk, ...]]


class _Group:
    """Patterns sharing a literal prefix or suffix: one is matched by Go's algorithm on its
    parsed form, several by one regular expression (compiled when the set is built)."""

    __slots__ = ("_chunks", "_regex", "patterns")

    def __init__(self, entries: list[_Parsed]) -> None:
        self.patterns = tuple(pattern for pattern, _ in entries)
        self._chunks = tuple(chunks for _, chunks in entries)
        self._regex = (
            re.compile("|".join(f"(?:{_expression(chunks)})" for chunks in self._chunks))
            if len(entries) > 1
            else None
        )

    def match(self, value: str) -> bool:
        if self._regex is None:
            return _match(self._chunks[0], value)
        if self._regex.fullmatch(value) is None:
            return False
        if _SEPARATOR not in value:
            return True
        # Go does not backtrack into an earlier '*': with a '/' in the value it may refuse
        # what the expression accepts (never the other way round), so ask Go's algorithm
        return any(_match(chunks, value) for chunks in self._chunks)


def _token_expression(token: _Token) -> str:
    if token is _ANY:
        return "[^/]"
    if isinstance(token, _Class):
        ranges = [(low, high) for low, high in token.ranges if low <= high]
        if not ranges:
            return "(?s:.)" if token.negated else "(?!)"
        body = "".join(
            re.escape(low) if low == high else f"{re.escape(low)}-{re.escape(high)}"
            for low, high in ranges
        )
        return f"[{'^' if token.negated else ''}{body}]"
    return re.escape(token)


def _expression(chunks: tuple[_Chunk, ...]) -> str:
    parts: list[str] = []
    for chunk in chunks:
        if chunk.star:
            parts.append("[^/]*")
        parts.extend(_token_expression(token) for token in chunk.tokens)
    return "".join(parts)


def _literal_prefix(chunks: tuple[_Chunk, ...]) -> str:
    if not chunks or chunks[0].star:
        return ""
    literal: list[str] = []
    for token in chunks[0].tokens:
        if not isinstance(token, str):
            break
        literal.append(token)
    return "".join(literal)


def _literal_suffix(chunks: tuple[_Chunk, ...]) -> str:
    if not chunks:
        return ""
    literal: list[str] = []
    for token in reversed(chunks[-1].tokens):
        if not isinstance(token, str):
            break
        literal.append(token)
    return "".join(reversed(literal))
