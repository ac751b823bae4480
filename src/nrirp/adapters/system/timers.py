"""Timers on daemon threads (``threading.Timer``)."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)


class TimersClosedError(RuntimeError):
    """A timer was asked for after :meth:`ThreadTimers.close`."""


class ThreadTimer:
    """A pending :class:`ThreadTimers` callback."""

    def __init__(self, owner: ThreadTimers, delay: float, fn: Callable[[], None]) -> None:
        self._owner = owner
        self._fn = fn
        self._thread = threading.Timer(delay, self._run)
        self._thread.daemon = True
        self._thread.name = "nrirp-timer"

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self._thread.cancel()
        self._owner._forget(self)

    @property
    def finished(self) -> bool:
        """Fired or cancelled."""
        return self._thread.finished.is_set()

    def _run(self) -> None:
        self._owner._forget(self)
        try:
            self._fn()
        except Exception:  # nobody to raise to on a timer thread
            log.exception("timer callback failed")


class ThreadTimers:
    """The ``Timers`` port: each callback waits on its own daemon thread.

    :meth:`close` cancels every pending callback (a process exit does not wait for them
    either: the threads are daemons).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: set[ThreadTimer] = set()
        self._closed = False

    def call_later(self, delay: float, fn: Callable[[], None]) -> ThreadTimer:
        if not math.isfinite(delay) or delay < 0:
            raise ValueError(f"invalid timer delay {delay!r}: expected seconds >= 0")
        timer = ThreadTimer(self, delay, fn)
        with self._lock:
            if self._closed:
                raise TimersClosedError("timers are closed")
            self._pending.add(timer)
        timer.start()
        return timer

    @property
    def pending(self) -> int:
        """Callbacks waiting to run."""
        with self._lock:
            return len(self._pending)

    def close(self) -> None:
        """Cancel every pending callback; later ``call_later`` calls fail."""
        with self._lock:
            self._closed = True
            pending, self._pending = self._pending, set()
        for timer in pending:
            timer.cancel()

    def _forget(self, timer: ThreadTimer) -> None:
        with self._lock:
            self._pending.discard(timer)
