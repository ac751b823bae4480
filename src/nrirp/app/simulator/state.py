"""The simulator's state store: saves coalesced per step, like the daemon's background writer."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.ports.state_store import StateStoreError


class CoalescingStateStore(InMemoryStateStore):
    """An :class:`InMemoryStateStore` that keeps the latest snapshot and encodes it once per
    :meth:`flush` (after every step), as the daemon's writer thread writes only the latest
    snapshot of a burst. Encoding every save of a big replay would dominate its run time."""

    def __init__(self, initial: Mapping[str, Any] | None = None) -> None:
        super().__init__(initial)
        self._latest: Mapping[str, Any] | None = None

    def save(self, snapshot: Mapping[str, Any]) -> None:
        if self.fail_saves:
            raise StateStoreError("in-memory store set to fail")
        self._latest = snapshot
        self.saves += 1

    def flush(self) -> None:
        """Encode the latest snapshot; raise :class:`StateStoreError` if it is not JSON."""
        latest, self._latest = self._latest, None
        if latest is None:
            return
        try:
            self.set_raw(json.dumps(latest))
        except (TypeError, ValueError) as exc:
            raise StateStoreError(f"state is not JSON-compatible: {exc}") from exc

    def load(self) -> Mapping[str, Any] | None:
        self.flush()
        return super().load()

    @property
    def raw(self) -> str | None:
        self.flush()
        return super().raw
