"""Port: time."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Wall-clock and monotonic time in seconds."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def monotonic(self) -> float: ...


class SystemClock:
    """The process clock."""

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()
