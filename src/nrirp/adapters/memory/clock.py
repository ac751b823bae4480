"""A clock that only moves when told to."""

from __future__ import annotations


class FakeClock:
    """Deterministic wall and monotonic time, in seconds."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self._now = now
        self._monotonic = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._monotonic

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("time does not go backwards")
        self._now += seconds
        self._monotonic += seconds
