"""In-memory StateStore: keeps the snapshot as JSON text, like a file would."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from nrirp.domain.ports.state_store import StateStoreError


class InMemoryStateStore:
    """Holds the last saved snapshot; JSON-encodes it so non-JSON data fails like a file."""

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._text: str | None = None if initial is None else json.dumps(initial)
        self.saves = 0
        self.fail_saves = False
        """Set to make :meth:`save` raise (tests of failing storage)."""

    def load(self) -> Mapping[str, Any] | None:
        with self._lock:
            if self._text is None:
                return None
            try:
                data = json.loads(self._text)
            except ValueError as exc:
                raise StateStoreError(f"stored state is not JSON: {exc}") from exc
            if not isinstance(data, dict):
                raise StateStoreError("stored state is not a JSON object")
            return data

    def save(self, snapshot: Mapping[str, Any]) -> None:
        if self.fail_saves:
            raise StateStoreError("in-memory store set to fail")
        try:
            text = json.dumps(snapshot)
        except (TypeError, ValueError) as exc:
            raise StateStoreError(f"state is not JSON-compatible: {exc}") from exc
        with self._lock:
            self._text = text
            self.saves += 1

    def set_raw(self, text: str | None) -> None:
        """Replace the stored text verbatim (to simulate corrupt or foreign state)."""
        with self._lock:
            self._text = text

    @property
    def raw(self) -> str | None:
        return self._text
