"""JSON encoding of state snapshots that re-encodes only what changed since the last call.

The domain's ``SnapshotEncoder`` hands out the very same dict for every pod and container that
did not change between two snapshots. Keeping the text of each list element, and of the other
values (configuration, policy data), by the identity of the object makes a write next to
thousands of containers cost the encoding of what changed plus a join, instead of a full
``json.dumps`` that holds the GIL for milliseconds and stalls the event loop answering the
runtime.
"""

from __future__ import annotations

import json
import json.encoder as json_encoder
import operator
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import Any

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

_Split = tuple[int, ...] | None
"""Where each field of a dict element's text ends (None: not known, the text was made whole)."""
_Encoded = tuple[list[Any], list[str], list[_Split]]
"""List elements, their texts and splits, position by position."""

_EMPTY: _Encoded = ([], [], [])

PAUSE_EVERY = 4
"""Elements encoded between two calls of the encoder's ``pause`` (a few tens of microseconds
of work each)."""


class SnapshotJsonEncoder:
    """Encodes snapshot mappings to compact JSON, caching texts by identity.

    Output equals ``json.dumps(snapshot, separators=(",", ":"), allow_nan=False)``. Raises
    ``TypeError``/``ValueError`` like ``json.dumps`` for data that is not JSON-compatible.
    Callers must not modify anything they handed over (the ``StateStore`` contract already
    requires that); a cached object is kept alive by the cache, so its id cannot be reused by
    another object while cached. Not thread-safe: one writer uses it.

    A list element that replaces a dict in its place (the new version of a container) is
    encoded field by field: a field holding the very object it held before keeps its text
    (the domain's snapshot encoder shares the unchanged parts of a container's form), so a
    container whose cpus moved costs the encoding of its resources, not of its mounts,
    labels and annotations.
    """

    def __init__(self, pause: Callable[[], None] | None = None) -> None:
        self._lists: dict[str, _Encoded] = {}
        self._values: dict[str, tuple[object, str]] = {}
        self._pause = pause

    def encode(self, snapshot: Mapping[str, Any]) -> str:
        """The JSON text of ``snapshot``."""
        return "".join(self.encode_parts(snapshot))

    def encode_parts(self, snapshot: Mapping[str, Any]) -> list[str]:
        """The JSON text of ``snapshot`` in pieces, to be written one after another (the
        elements' texts are kept anyway; joining them would copy the whole text once more)."""
        lists: dict[str, _Encoded] = {}
        values: dict[str, tuple[object, str]] = {}
        parts = ["{"]
        for key, value in snapshot.items():
            if len(parts) > 1:
                parts.append(",")
            parts.append(_encode(str(key)) + ":")
            if isinstance(value, list):
                encoded = _reencode(value, self._lists.get(key, _EMPTY), self._pause)
                lists[key] = encoded
                texts = encoded[1]
                parts.append("[")
                if texts:
                    separated = [","] * (2 * len(texts) - 1)
                    separated[::2] = texts
                    parts.extend(separated)
                parts.append("]")
            else:
                cached = self._values.get(key)
                text = cached[1] if cached is not None and cached[0] is value else _encode(value)
                values[key] = (value, text)
                parts.append(text)
        parts.append("}")
        self._lists, self._values = lists, values
        return parts


def _reencode(
    values: list[Any], previous: _Encoded, pause: Callable[[], None] | None = None
) -> _Encoded:
    """The texts (and splits) of ``values``, reusing those of ``previous`` elements;
    ``pause`` (optional) is called between every :data:`PAUSE_EVERY` elements encoded.

    Between two snapshots almost every element is the same object in the same place: those
    are found position by position at C speed, and only the others are looked at.
    """
    old_values, old_texts, old_splits = previous
    same = list(map(operator.is_, values, old_values))
    texts = old_texts[: len(same)]
    splits = old_splits[: len(same)]
    changed = _positions_of_false(same)
    changed.extend(range(len(same), len(values)))
    # an element that moved (after a removal) is found by identity: the previous elements are
    # still referenced, so no other live object can have their id
    moved = {id(v): i for i, v in enumerate(old_values)} if len(changed) > 1 and old_values else {}
    for count, i in enumerate(changed, 1):
        if pause is not None and count % PAUSE_EVERY == 0:
            pause()
        value = values[i]
        found = moved.get(id(value))
        if found is not None:
            text, split = old_texts[found], old_splits[found]
        elif i < len(old_values) and type(value) is dict and type(old_values[i]) is dict:
            text, split = _encode_fields(value, old_values[i], old_texts[i], old_splits[i])
        else:
            text, split = _encode(value), None
        if i < len(texts):
            texts[i] = text
            splits[i] = split
        else:
            texts.append(text)
            splits.append(split)
    return values, texts, splits


def _encode_fields(
    value: dict[Any, Any], old: dict[Any, Any], old_text: str, old_split: _Split
) -> tuple[str, _Split]:
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
    ends = []
    length = 0
    for key, item in value.items():
        piece = pieces.get(key)
        if piece is None:
            if not isinstance(key, str):
                return _encode(value), None  # keys json turns into strings: no splits
            piece = _quote(key) + ":" + _encode(item)
        parts.append(piece)
        length += len(piece) + 1
        ends.append(length)
    return "{" + ",".join(parts) + "}", tuple(ends)


def _positions_of_false(flags: list[bool]) -> list[int]:
    positions: list[int] = []
    with suppress(ValueError):
        while True:
            positions.append(flags.index(False, positions[-1] + 1 if positions else 0))
    return positions
