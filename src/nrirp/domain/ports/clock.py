"""Port: time."""

from __future__ import annotations

from typing import Protocol


class Clock(Protocol):
    """Wall-clock and monotonic time in seconds."""

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def monotonic(self) -> float: ...


class StoppedClock:
    """A clock that stands at 0: what the domain uses when no clock is passed (the domain
    reads no time itself). The app's compositions pass ``adapters.system.SystemClock``; tests
    that move time use ``adapters.memory.FakeClock``."""

    def now(self) -> float:
        return 0.0

    def monotonic(self) -> float:
        return 0.0
