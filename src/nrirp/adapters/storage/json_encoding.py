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

_Encoded = tuple[list[Any], list[str]]
"""List elements and their texts, position by position."""


class SnapshotJsonEncoder:
    """Encodes snapshot mappings to compact JSON, caching texts by identity.

    Output equals ``json.dumps(snapshot, separators=(",", ":"), allow_nan=False)``. Raises
    ``TypeError``/``ValueError`` like ``json.dumps`` for data that is not JSON-compatible.
    Callers must not modify anything they handed over (the ``StateStore`` contract already
    requires that); a cached object is kept alive by the cache, so its id cannot be reused by
    another object while cached. Not thread-safe: one writer uses it.
    """

    def __init__(self) -> None:
        self._lists: dict[str, _Encoded] = {}
        self._values: dict[str, tuple[object, str]] = {}

    def encode(self, snapshot: Mapping[str, Any]) -> str:
        lists: dict[str, _Encoded] = {}
        values: dict[str, tuple[object, str]] = {}
        fields = []
        for key, value in snapshot.items():
            if isinstance(value, list):
                texts = _reencode(value, self._lists.get(key, ([], [])))
                lists[key] = (value, texts)
                text = "[" + ",".join(texts) + "]"
            else:
                cached = self._values.get(key)
                text = cached[1] if cached is not None and cached[0] is value else _encode(value)
                values[key] = (value, text)
            fields.append(_encode(str(key)) + ":" + text)
        self._lists, self._values = lists, values
        return "{" + ",".join(fields) + "}"


def _reencode(values: list[Any], previous: _Encoded) -> list[str]:
    """The texts of ``values``, reusing those of ``previous`` elements.

    Between two snapshots almost every element is the same object in the same place: those
    are found position by position at C speed, and only the others are looked at.
    """
    old_values, old_texts = previous
    same = list(map(operator.is_, values, old_values))
    texts = old_texts[: len(same)]
    changed = _positions_of_false(same)
    changed.extend(range(len(same), len(values)))
    # an element that moved (after a removal) is found by identity: the previous elements are
    # still referenced, so no other live object can have their id
    moved = dict(zip(map(id, old_values), old_texts, strict=True)) if len(changed) > 1 else {}
    for i in changed:
        value = values[i]
        text = moved.get(id(value))
        if text is None:
            text = _encode(value)
        if i < len(texts):
            texts[i] = text
        else:
            texts.append(text)
    return texts


def _positions_of_false(flags: list[bool]) -> list[int]:
    positions: list[int] = []
    with suppress(ValueError):
        while True:
            positions.append(flags.index(False, positions[-1] + 1 if positions else 0))
    return positions
