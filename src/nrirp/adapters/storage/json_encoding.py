"""JSON encoding of state snapshots that re-encodes only what changed since the last call.

The domain's ``SnapshotEncoder`` hands out the very same dict for every pod and container that
did not change between two snapshots. Knowing the text of each list element, and of the other
values (configuration, policy data), by the identity of the object makes a write next to
thousands of containers cost the encoding of what changed plus copying the rest, instead of a
full ``json.dumps`` that holds the GIL for milliseconds and stalls the event loop answering the
runtime.

The texts are kept in one of two places. :meth:`SnapshotJsonEncoder.encode` keeps them in
memory. A file store keeps them in the file it wrote last: :meth:`SnapshotJsonEncoder.draft`
finds what changed, :meth:`Draft.write` writes the next file (copying the unchanged texts over
from the previous one, in the kernel where it can, and encoding each changed object just
before its text is written), and :meth:`SnapshotJsonEncoder.commit`, once the file is in
place, remembers where each text lies in it: a few bytes per element instead of its text (the
state of 900 containers is about 4 MB of JSON), and at no time the texts of every element at
once, not even for the first file.
"""

from __future__ import annotations

import json
import json.encoder as json_encoder
import operator
import os
from array import array
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any, TypeAlias

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _make_encode() -> Callable[[Any], str]:
    """``_ENCODER.encode`` without its Python layers: what ``JSONEncoder.encode`` runs for a
    compact one-shot encoding (the C encoder, fresh circular-reference markers every call)."""
    make = getattr(json_encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the C accelerator
        return _ENCODER.encode
    default, quote = _ENCODER.default, json_encoder.encode_basestring_ascii

    def encode(value: Any) -> str:
        return "".join(make({}, default, quote, None, ":", ",", False, False, False)(value, 0))

    return encode


_encode = _make_encode()
_quote = json_encoder.encode_basestring_ascii

Piece: TypeAlias = "str | int"
"""A piece of the output: its text, or where it lies in the file written last, packed as
``offset << 32 | length`` (:func:`span`). Texts are ASCII (JSON's escapes), so a text's length
is its length in bytes."""

_LENGTH_BITS = 32
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1

Read: TypeAlias = "Callable[[int, int], str]"
"""``read(offset, length)``: the text at ``offset`` in the file written last."""

_Splits: TypeAlias = "array[int] | None"
"""Where each field of a dict element's text ends (None: not known, the text was made
whole)."""


def span(offset: int, length: int) -> int:
    """The piece for ``length`` bytes at ``offset`` of the file written last."""
    return offset << _LENGTH_BITS | length


def span_of(piece: int) -> tuple[int, int]:
    """``(offset, length)`` of a span piece."""
    return piece >> _LENGTH_BITS, piece & _LENGTH_MASK


class _Job:
    """An object to encode: its text is made as the output is written (``old``: the
    previous version of a list element, in the same place, with its piece and splits)."""

    __slots__ = ("length", "old", "old_piece", "old_split", "split", "value")

    def __init__(
        self,
        value: Any,
        old: Any = None,
        old_piece: Piece | None = None,
        old_split: _Splits = None,
    ) -> None:
        self.value = value
        self.old = old
        self.old_piece = old_piece
        self.old_split = old_split
        self.length = 0
        self.split: _Splits = None

    def run(self, read: Read | None) -> str:
        """Encode; the text's length and splits are kept."""
        value, old, old_piece = self.value, self.old, self.old_piece
        text: str
        if old_piece is not None and type(value) is dict and type(old) is dict:
            old_text = old_piece if type(old_piece) is str else None
            if old_text is None and read is not None:
                old_text = read(*span_of(old_piece))  # type: ignore[arg-type]
            if old_text is not None:
                text, self.split = _encode_fields(value, old, old_text, self.old_split)
            else:
                text = _encode(value)
        else:
            text = _encode(value)
        self.old = self.old_piece = self.old_split = None
        self.length = len(text)
        return text


_Entry: TypeAlias = "Piece | _Job"
_Encoded: TypeAlias = "tuple[list[Any], list[Piece], list[_Splits]]"
"""List elements, their pieces and splits, position by position."""
_Planned: TypeAlias = "tuple[list[Any], list[_Entry], list[_Splits]]"

_EMPTY: _Encoded = ([], [], [])

PAUSE_EVERY = 4
"""Objects encoded between two calls of the encoder's ``pause`` (a few tens of microseconds
of work each)."""

_WRITE_CHUNK = 1 << 16
"""Texts are written once this many bytes of them are waiting."""


class Draft:
    """The output for one snapshot: pieces and objects still to encode, in order."""

    __slots__ = ("_entries", "_lists", "_pause", "_values", "element_entries", "value_entries")

    def __init__(self, pause: Callable[[], None] | None) -> None:
        self._pause = pause
        self._entries: list[_Entry] = []
        self._lists: dict[str, _Planned] = {}
        self._values: dict[str, tuple[object, _Entry]] = {}
        self.element_entries: dict[str, list[int]] = {}
        """Per list, the index of each element in the output's entries."""
        self.value_entries: dict[str, int] = {}
        """Per other value, its index in the output's entries."""

    def texts(self) -> list[str]:
        """The output as texts (every object encoded; a draft without spans)."""
        out: list[str] = []
        encoded = 0
        for index, entry in enumerate(self._entries):
            if type(entry) is _Job:
                encoded += 1
                if self._pause is not None and encoded % PAUSE_EVERY == 0:
                    self._pause()
                out.append(entry.run(None))
            elif type(entry) is str:
                out.append(entry)
            else:
                raise ValueError(f"entry {index} lies in a file, and there is none")
        return out

    def write(self, out: int, previous: int | None, read: Read | None = None) -> None:
        """Write the output to the file descriptor ``out``: texts as they are, each object
        encoded just before its text is written, spans copied from ``previous`` (the file
        written last; ``read`` reads it, for a new version of an element encoded field by
        field). Spans that lie one after another in ``previous`` with only a comma between
        them (neighbouring elements that did not change) are copied as one."""
        entries = self._entries
        waiting: list[str] = []
        size = 0
        encoded = 0
        count = len(entries)
        i = 0
        while i < count:
            entry = entries[i]
            kind = type(entry)
            if kind is str:
                waiting.append(entry)  # type: ignore[arg-type]
                size += len(entry)  # type: ignore[arg-type]
                i += 1
            elif kind is _Job:
                encoded += 1
                if self._pause is not None and encoded % PAUSE_EVERY == 0:
                    self._pause()
                text = entry.run(read)  # type: ignore[union-attr]
                waiting.append(text)
                size += len(text)
                i += 1
            else:
                if waiting:
                    _write_all(out, "".join(waiting).encode("ascii"))
                    waiting, size = [], 0
                if previous is None:
                    raise ValueError(f"entry {i} lies in a file, and there is none")
                offset, length = span_of(entry)  # type: ignore[arg-type]
                end = offset + length
                i += 1
                while i + 1 < count and entries[i] == ",":
                    after = entries[i + 1]
                    if type(after) is not int or after >> _LENGTH_BITS != end + 1:
                        break
                    end = (after >> _LENGTH_BITS) + (after & _LENGTH_MASK)
                    i += 2
                _copy(previous, offset, end - offset, out)
            if size >= _WRITE_CHUNK:
                _write_all(out, "".join(waiting).encode("ascii"))
                waiting, size = [], 0
        if waiting:
            _write_all(out, "".join(waiting).encode("ascii"))


def _length(entry: _Entry) -> int:
    kind = type(entry)
    if kind is str:
        return len(entry)  # type: ignore[arg-type]
    if kind is _Job:
        return entry.length  # type: ignore[union-attr]
    return entry & _LENGTH_MASK  # type: ignore[operator]


class SnapshotJsonEncoder:
    """Encodes snapshot mappings to compact JSON, reusing texts by identity.

    Output equals ``json.dumps(snapshot, separators=(",", ":"), allow_nan=False)``. Raises
    ``TypeError``/``ValueError`` like ``json.dumps`` for data that is not JSON-compatible.
    Callers must not modify anything they handed over (the ``StateStore`` contract already
    requires that); an object whose text is known is kept alive by the encoder, so its id
    cannot be reused by another object meanwhile. Not thread-safe: one writer uses it.

    A list element that replaces a dict in its place (the new version of a container) is
    encoded field by field: a field holding the very object it held before keeps its text
    (the domain's snapshot encoder shares the unchanged parts of a container's form), so a
    container whose cpus moved costs the encoding of its resources, not of its mounts,
    labels and annotations.

    Use either :meth:`encode` (texts kept in memory) or :meth:`draft`, :meth:`Draft.write`
    and :meth:`commit` (texts kept in the file written last), not both.
    """

    def __init__(self, pause: Callable[[], None] | None = None) -> None:
        self._lists: dict[str, _Encoded] = {}
        self._values: dict[str, tuple[object, Piece]] = {}
        self._pause = pause
        self._in_file = False

    def encode(self, snapshot: Mapping[str, Any]) -> str:
        """The JSON text of ``snapshot``."""
        return "".join(self.encode_parts(snapshot))

    def encode_parts(self, snapshot: Mapping[str, Any]) -> list[str]:
        """The JSON text of ``snapshot`` in pieces (the texts of the objects, kept for the
        next call, and what lies between them)."""
        if self._in_file:
            raise ValueError("this encoder keeps its texts in a file: use draft()")
        draft = self.draft(snapshot)
        texts = draft.texts()
        self._keep(draft, lambda index: texts[index])
        return texts

    @property
    def in_file(self) -> bool:
        """True when the texts are known by where they lie in the file written last."""
        return self._in_file

    def forget(self) -> None:
        """Forget every text (the file written last is gone or was changed by someone else):
        the next draft encodes everything."""
        self._lists, self._values = {}, {}
        self._in_file = False

    def draft(self, snapshot: Mapping[str, Any]) -> Draft:
        """The output for ``snapshot``: the texts of unchanged objects as the pieces they
        were (spans of the file written last stay spans), the others to encode. Nothing
        changes in the encoder until :meth:`commit`."""
        draft = Draft(self._pause)
        entries = draft._entries
        entries.append("{")
        for key, value in snapshot.items():
            if len(entries) > 1:
                entries.append(",")
            entries.append(_encode(str(key)) + ":")
            if isinstance(value, list):
                planned = _replan(value, self._lists.get(key, _EMPTY))
                draft._lists[key] = planned
                entries.append("[")
                positions: list[int] = []
                for entry in planned[1]:
                    if positions:
                        entries.append(",")
                    positions.append(len(entries))
                    entries.append(entry)
                draft.element_entries[key] = positions
                entries.append("]")
            else:
                cached = self._values.get(key)
                known = cached[1] if cached is not None and cached[0] is value else _Job(value)
                draft._values[key] = (value, known)
                draft.value_entries[key] = len(entries)
                entries.append(known)
        entries.append("}")
        return draft

    def commit(self, draft: Draft) -> None:
        """``draft`` was written as the file to draw on from now on: every text is known by
        where it lies in it (and no longer kept)."""
        ends = []
        position = 0
        for entry in draft._entries:
            position += _length(entry)
            ends.append(position)

        def placed(index: int) -> Piece:
            length = _length(draft._entries[index])
            return span(ends[index] - length, length)

        self._keep(draft, placed)
        self._in_file = True

    def _keep(self, draft: Draft, piece_at: Callable[[int], Piece]) -> None:
        lists: dict[str, _Encoded] = {}
        for key, (values, entries, splits) in draft._lists.items():
            positions = draft.element_entries[key]
            lists[key] = (
                values,
                [piece_at(i) for i in positions],
                [e.split if type(e) is _Job else s for e, s in zip(entries, splits, strict=True)],
            )
        self._lists = lists
        self._values = {
            key: (value, piece_at(draft.value_entries[key]))
            for key, (value, _) in draft._values.items()
        }


def _replan(values: list[Any], previous: _Encoded) -> _Planned:
    """The pieces of ``values`` reused from ``previous`` elements, the others to encode.

    Between two snapshots almost every element is the same object in the same place: those
    are found position by position at C speed, and only the others are looked at.
    """
    old_values, old_pieces, old_splits = previous
    same = list(map(operator.is_, values, old_values))
    entries: list[_Entry] = list(old_pieces[: len(same)])
    splits = old_splits[: len(same)]
    changed = _positions_of_false(same)
    changed.extend(range(len(same), len(values)))
    # an element that moved (after a removal) is found by identity: the previous elements are
    # still referenced, so no other live object can have their id
    moved = {id(v): i for i, v in enumerate(old_values)} if len(changed) > 1 and old_values else {}
    for i in changed:
        value = values[i]
        found = moved.get(id(value))
        entry: _Entry
        split: _Splits = None
        if found is not None:
            entry, split = old_pieces[found], old_splits[found]
        elif i < len(old_values):  # most often a new version of the element that was here
            entry = _Job(value, old_values[i], old_pieces[i], old_splits[i])
        else:
            entry = _Job(value)
        if i < len(entries):
            entries[i] = entry
            splits[i] = split
        else:
            entries.append(entry)
            splits.append(split)
    return values, entries, splits


def _encode_fields(
    value: dict[Any, Any], old: dict[Any, Any], old_text: str, old_split: _Splits
) -> tuple[str, _Splits]:
    """``value`` (a new version of ``old``) encoded field by field, with the texts of the
    fields that hold the same objects as in ``old`` cut out of ``old_text``."""
    pieces: dict[Any, str] = {}
    if old_split is not None:
        start = 1  # after "{"
        for key, end in zip(old, old_split, strict=True):
            if key in value and value[key] is old[key]:
                pieces[key] = old_text[start:end]
            start = end + 1  # after ","
    parts = []
    ends = array("I")
    length = 0
    for key, item in value.items():
        piece = pieces.get(key)
        if piece is None:
            if not isinstance(key, str):
                return _encode(value), None  # keys json turns into strings: no splits
            piece = _quote(key) + ":" + _encode(item)
        parts.append(piece)
        length += len(piece) + 1
        if length > _LENGTH_MASK:
            return _encode(value), None
        ends.append(length)
    return "{" + ",".join(parts) + "}", ends


def _positions_of_false(flags: list[bool]) -> list[int]:
    positions: list[int] = []
    with suppress(ValueError):
        while True:
            positions.append(flags.index(False, positions[-1] + 1 if positions else 0))
    return positions


def _write_all(out: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(out, view) :]


_COPY_CHUNK = 1 << 16


def _copy(source: int, offset: int, length: int, out: int) -> None:
    """``length`` bytes at ``offset`` of ``source`` appended to ``out``: in the kernel
    (``copy_file_range``) where it can, else read and written in small chunks."""
    copy_range = getattr(os, "copy_file_range", None)
    while length > 0 and copy_range is not None:
        try:
            done = copy_range(source, out, length, offset)
        except OSError:
            break  # not supported here (file system, kernel): the plain way
        if done <= 0:
            break
        offset += done
        length -= done
    while length > 0:
        data = os.pread(source, min(length, _COPY_CHUNK), offset)
        if not data:
            raise OSError(f"the previous state file ended {length} bytes early")
        _write_all(out, data)
        offset += len(data)
        length -= len(data)
