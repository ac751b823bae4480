"""RuntimeUpdates that records every submitted batch."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from nrirp.domain.model import Update


class RecordingRuntimeUpdates:
    """Keeps submitted batches in order; nothing is sent anywhere."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.batches: list[list[Update]] = []

    def submit(self, updates: Sequence[Update]) -> None:
        with self._lock:
            self.batches.append(list(updates))

    @property
    def updates(self) -> list[Update]:
        """All submitted updates, flattened, oldest first."""
        with self._lock:
            return [u for batch in self.batches for u in batch]

    def clear(self) -> None:
        with self._lock:
            self.batches.clear()
