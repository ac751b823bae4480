"""In-memory StateStore: keeps the latest snapshot and encodes it as JSON, like a file would."""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from nrirp.adapters.storage.json_encoding import SnapshotJsonEncoder
from nrirp.domain.ports.state_store import StateStoreError


class InMemoryStateStore:
    """Holds the last saved snapshot.

    :meth:`save` only keeps the mapping it is handed (the port's contract lets a store keep it),
    so saving costs nothing on the pipeline's path however big the state is: the resource
    manager's snapshot is not even unstructured until it is read. The snapshot is
    JSON-encoded, as a file store would, by :meth:`flush`, which :meth:`load` and :attr:`raw`
    call first: state that is not JSON-compatible fails there with :class:`StateStoreError`.
    Like the daemon's file store, a burst of saves is encoded once.
    """

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        self._lock = threading.Lock()
        self._text: str | None = None if initial is None else json.dumps(initial)
        self._latest: Mapping[str, Any] | None = None
        self._encoder = SnapshotJsonEncoder()
        self.saves = 0
        self.fail_saves = False
        """Set to make :meth:`save` raise (tests of failing storage)."""

    def save(self, snapshot: Mapping[str, Any]) -> None:
        if self.fail_saves:
            raise StateStoreError("in-memory store set to fail")
        with self._lock:
            self._latest = snapshot
            self.saves += 1

    def flush(self) -> None:
        """Encode the latest saved snapshot; raise :class:`StateStoreError` if it is not JSON."""
        with self._lock:
            latest, self._latest = self._latest, None
            if latest is None:
                return
            try:
                self._text = self._encoder.encode(latest)
            except (TypeError, ValueError) as exc:
                raise StateStoreError(f"state is not JSON-compatible: {exc}") from exc

    def load(self) -> Mapping[str, Any] | None:
        self.flush()
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

    def set_raw(self, text: str | None) -> None:
        """Replace the stored text verbatim (to simulate corrupt or foreign state)."""
        with self._lock:
            self._latest = None
            self._text = text

    @property
    def raw(self) -> str | None:
        """The stored JSON text (after encoding any pending snapshot)."""
        self.flush()
        return self._text
