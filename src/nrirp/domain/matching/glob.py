"""Shell globs with the semantics of Go's ``path/filepath.Match``, which the reference uses.

``*`` matches any run of characters except ``/``, ``?`` one character except ``/``,
``[...]`` one character of a class (``[^...]`` negates it; ranges ``a-z``; a class may match
``/``), and ``\\`` makes the next character literal, inside a class too. The whole value must
match. A malformed pattern (an unclosed class, an empty class, a dangling ``\\`` or ``-``)
matches nothing, as in the reference; :func:`glob_problem` tells what is wrong with it.

The matcher is a port of Go's algorithm rather than a regular expression: Go does not
backtrack into an earlier ``*`` once a later piece matched, so with classes that match ``/``
(``*[^a]*x``) it rejects some values a regular expression would accept, and we answer as the
reference does.
"""

from __future__ import annotations

from functools import lru_cache

import attrs

_SEPARATOR = "/"


class _BadPattern(ValueError):
    pass


@attrs.frozen
class _Class:
    negated: bool
    ranges: tuple[tuple[str, str], ...]

    def accepts(self, char: str) -> bool:
        inside = any(low <= char <= high for low, high in self.ranges)
        return inside != self.negated


_ANY = None  # token for '?'
_Token = str | _Class | None  # a literal character, a class, or '?'


@attrs.frozen
class _Chunk:
    """A piece of pattern without stars, after ``star`` (whether stars preceded it)."""

    star: bool
    tokens: tuple[_Token, ...]


def _scan_chunk(pattern: str) -> tuple[bool, str, str]:
    """Go's ``scanChunk``: leading stars, the text up to the next star outside a class, rest."""
    star = False
    while pattern.startswith("*"):
        pattern = pattern[1:]
        star = True
    in_range = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            if index + 1 < len(pattern):
                index += 1
        elif char == "[":
            in_range = True
        elif char == "]":
            in_range = False
        elif char == "*" and not in_range:
            break
        index += 1
    return star, pattern[:index], pattern[index:]


def _class_char(chunk: str, index: int) -> tuple[str, int]:
    """Go's ``getEsc``: one (possibly escaped) class character and the index after it."""
    end = len(chunk)
    if index >= end:
        raise _BadPattern("unclosed character class '['")
    char = chunk[index]
    if char in "-]":
        raise _BadPattern(f"unexpected '{char}' in a character class (escape it with '\\')")
    if char == "\\":
        index += 1
        if index >= end:
            raise _BadPattern("unclosed character class '['")
        char = chunk[index]
    index += 1
    if index >= end:
        raise _BadPattern("unclosed character class '['")
    return char, index


def _parse_class(chunk: str, index: int) -> tuple[_Class, int]:
    negated = index < len(chunk) and chunk[index] == "^"
    if negated:
        index += 1
    ranges: list[tuple[str, str]] = []
    while True:
        if index < len(chunk) and chunk[index] == "]" and ranges:
            return _Class(negated, tuple(ranges)), index + 1
        low, index = _class_char(chunk, index)
        high = low
        if chunk[index] == "-":
            high, index = _class_char(chunk, index + 1)
        ranges.append((low, high))


def _parse_chunk(chunk: str) -> tuple[_Token, ...]:
    tokens: list[_Token] = []
    index = 0
    while index < len(chunk):
        char = chunk[index]
        if char == "[":
            token, index = _parse_class(chunk, index + 1)
            tokens.append(token)
            continue
        if char == "?":
            tokens.append(_ANY)
        elif char == "\\":
            index += 1
            if index >= len(chunk):
                raise _BadPattern("the pattern ends with a lone '\\'")
            tokens.append(chunk[index])
        else:
            tokens.append(char)
        index += 1
    return tuple(tokens)


def _parse(pattern: str) -> tuple[_Chunk, ...]:
    chunks: list[_Chunk] = []
    while pattern:
        star, text, pattern = _scan_chunk(pattern)
        chunks.append(_Chunk(star, _parse_chunk(text)))
    return tuple(chunks)


@lru_cache(maxsize=1024)
def _compiled(pattern: str) -> tuple[tuple[_Chunk, ...] | None, str | None]:
    try:
        return _parse(pattern), None
    except _BadPattern as err:
        return None, str(err)


def _match_chunk(tokens: tuple[_Token, ...], value: str, start: int) -> int:
    """Index after ``tokens`` matched at ``value[start:]``, or -1."""
    if start + len(tokens) > len(value):
        return -1
    for offset, token in enumerate(tokens):
        char = value[start + offset]
        if token is _ANY:
            if char == _SEPARATOR:
                return -1
        elif isinstance(token, _Class):
            if not token.accepts(char):
                return -1
        elif token != char:
            return -1
    return start + len(tokens)


def _match(chunks: tuple[_Chunk, ...], value: str) -> bool:
    """Go's ``filepath.Match`` loop over pre-parsed chunks."""
    position = 0
    last = len(chunks) - 1
    for index, chunk in enumerate(chunks):
        if chunk.star and not chunk.tokens:  # a trailing star takes the rest, but not a '/'
            return _SEPARATOR not in value[position:]
        end = _match_chunk(chunk.tokens, value, position)
        if end >= 0 and (end == len(value) or index < last):
            position = end
            continue
        if not chunk.star:
            return False
        skip = position
        while skip < len(value) and value[skip] != _SEPARATOR:
            end = _match_chunk(chunk.tokens, value, skip + 1)
            if end >= 0 and (end == len(value) or index < last):
                break
            skip += 1
        else:
            return False
        position = end
    return position == len(value)


def glob_match(pattern: str, value: str) -> bool:
    """Whether the whole of ``value`` matches ``pattern`` (False for a malformed pattern)."""
    chunks = _compiled(pattern)[0]
    return chunks is not None and _match(chunks, value)


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is malformed, or ``None`` for a well-formed one."""
    return _compiled(pattern)[1]
