"""Timers that fire only when told to (tests, deterministic simulations)."""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections.abc import Callable

from nrirp.adapters.memory.clock import FakeClock


class ManualTimer:
    """A callback waiting in :class:`ManualTimers`."""

    def __init__(self, due: float, fn: Callable[[], None]) -> None:
        self.due = due
        self.fn = fn
        self.cancelled = False
        self.fired = False

    def cancel(self) -> None:
        self.cancelled = True


class ManualTimers:
    """The ``Timers`` port on a virtual time line that moves only by :meth:`advance`.

    Given a :class:`FakeClock`, the clock moves along: each callback runs with the clock at
    its due time. Callbacks run on the thread calling :meth:`advance`.
    """

    def __init__(self, clock: FakeClock | None = None) -> None:
        self._clock = clock
        self._now = 0.0
        self._queue: list[tuple[float, int, ManualTimer]] = []
        self._order = itertools.count()
        self._lock = threading.Lock()

    @property
    def now(self) -> float:
        """Seconds advanced so far."""
        return self._now

    def call_later(self, delay: float, fn: Callable[[], None]) -> ManualTimer:
        if not math.isfinite(delay) or delay < 0:
            raise ValueError(f"invalid timer delay {delay!r}: expected seconds >= 0")
        with self._lock:
            timer = ManualTimer(self._now + delay, fn)
            heapq.heappush(self._queue, (timer.due, next(self._order), timer))
        return timer

    def pending(self) -> list[ManualTimer]:
        """Timers not yet fired nor cancelled, in firing order."""
        with self._lock:
            return [t for _, _, t in sorted(self._queue) if not t.cancelled]

    def advance(self, seconds: float) -> int:
        """Move time forward, running every callback that falls due (in due order, then in
        scheduling order; callbacks scheduled meanwhile run too if due). Returns how many ran."""
        if not math.isfinite(seconds) or seconds < 0:
            raise ValueError(f"invalid advance {seconds!r}: time does not go backwards")
        target = self._now + seconds
        ran = 0
        while True:
            with self._lock:
                if not self._queue or self._queue[0][0] > target:
                    break
                due, _, timer = heapq.heappop(self._queue)
            if timer.cancelled:
                continue
            self._move_to(due)
            timer.fired = True
            timer.fn()
            ran += 1
        self._move_to(target)
        return ran

    def _move_to(self, when: float) -> None:
        if when > self._now:
            if self._clock is not None:
                self._clock.advance(when - self._now)
            self._now = when
