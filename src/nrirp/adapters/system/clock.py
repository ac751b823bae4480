"""The process clock."""

from __future__ import annotations

import time


class SystemClock:
    """The process clock: ``time.time()`` and ``time.monotonic()``."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()
