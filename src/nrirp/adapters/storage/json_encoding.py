"""JSON encoding of state snapshots that re-encodes only what changed since the last call.

The domain's ``SnapshotEncoder`` hands out the very same dict for every pod and container that
did not change between two snapshots. Encoding a snapshot element by element and keeping the
text of each element by the identity of its dict makes a write next to thousands of containers
cost the encoding of the few that changed plus a join, instead of a full ``json.dumps`` that
holds the GIL for milliseconds and stalls the event loop answering the runtime.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


class SnapshotJsonEncoder:
    """Encodes snapshot mappings to compact JSON, caching list elements by identity.

    Output equals ``json.dumps(snapshot, separators=(",", ":"), allow_nan=False)``. Raises
    ``TypeError``/``ValueError`` like ``json.dumps`` for data that is not JSON-compatible.
    Callers must not modify an element dict after handing it over (the ``StateStore``
    contract already requires that); a cached element is kept alive by the cache, so its id
    cannot be reused by another object while cached. Not thread-safe: one writer uses it.
    """

    def __init__(self) -> None:
        self._texts: dict[int, tuple[object, str]] = {}

    def encode(self, snapshot: Mapping[str, Any]) -> str:
        previous, current = self._texts, {}
        fields = []
        for key, value in snapshot.items():
            if isinstance(value, list):
                parts = []
                for element in value:
                    cached = previous.get(id(element))
                    if cached is None or cached[0] is not element:
                        cached = (element, _ENCODER.encode(element))
                    current[id(element)] = cached
                    parts.append(cached[1])
                text = "[" + ",".join(parts) + "]"
            else:
                text = _ENCODER.encode(value)
            fields.append(_ENCODER.encode(str(key)) + ":" + text)
        self._texts = current
        return "{" + ",".join(fields) + "}"
