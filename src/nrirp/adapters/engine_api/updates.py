"""``RoutedRuntimeUpdates``: the RuntimeUpdates port for engines served over a local API.

The engine hands updates nobody asked for to ``submit`` with its pipeline held, from the
thread that made them. Updates made while an API call runs on that thread (a removal that
grows a shared pool) belong in that call's reply: the call opens a :meth:`capture` and gets
them. Updates from elsewhere (policy timers, a reconfiguration on SIGHUP) are queued for
whoever serves them: an agent's ``TakeUpdates`` long-poll, or the NRI v0.1 daemon's
enforcement thread. ``submit`` never waits.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from nrirp.domain.model import Update

log = logging.getLogger(__name__)

MAX_QUEUED = 10_000
"""Updates kept for a consumer that does not come; older ones are dropped (and logged)."""
GIVEN_UP_LOOK_SECONDS = 0.25
"""How often a waiting :meth:`RoutedRuntimeUpdates.take` asks whether its caller gave up."""


class RoutedRuntimeUpdates:
    """Updates to the current call's capture, else to a bounded queue."""

    def __init__(self, max_queued: int = MAX_QUEUED) -> None:
        self._local = threading.local()
        self._queue: deque[Update] = deque()
        self._max = max_queued
        self._ready = threading.Condition()
        self._closed = False
        self.dropped = 0

    def submit(self, updates: Sequence[Update]) -> None:
        captured: list[Update] | None = getattr(self._local, "captured", None)
        if captured is not None:
            captured.extend(updates)
            return
        with self._ready:
            self._queue.extend(updates)
            excess = len(self._queue) - self._max
            if excess > 0:
                for _ in range(excess):
                    self._queue.popleft()
                self.dropped += excess
                log.warning("%d queued container updates dropped: nobody takes them", excess)
            self._ready.notify_all()

    @contextmanager
    def capture(self) -> Iterator[list[Update]]:
        """``with updates.capture() as mine:`` updates submitted from this thread in the block
        are appended to ``mine`` instead of being queued."""
        previous = getattr(self._local, "captured", None)
        mine: list[Update] = []
        self._local.captured = mine
        try:
            yield mine
        finally:
            self._local.captured = previous

    def take(self, wait: float = 0.0, given_up: Callable[[], bool] | None = None) -> list[Update]:
        """The queued updates (oldest first), waiting up to ``wait`` seconds for some; none
        once ``given_up()`` is true (the caller went away: the updates stay queued for the
        next one), asked every ``GIVEN_UP_LOOK_SECONDS`` while waiting and before taking."""
        deadline = time.monotonic() + max(0.0, wait)
        with self._ready:
            while not self._queue and not self._closed:
                left = deadline - time.monotonic()
                if left <= 0 or (given_up is not None and given_up()):
                    return []
                self._ready.wait(left if given_up is None else min(left, GIVEN_UP_LOOK_SECONDS))
            if given_up is not None and given_up():
                return []
            taken = list(self._queue)
            self._queue.clear()
            return taken

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (:meth:`take` no longer waits)."""
        return self._closed

    def close(self) -> None:
        """Wake every waiting :meth:`take`; from now on it returns at once."""
        with self._ready:
            self._closed = True
            self._ready.notify_all()
