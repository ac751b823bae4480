"""Port: one-shot timers ("call me back after 30 s")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol


class TimerHandle(Protocol):
    """A scheduled callback."""

    def cancel(self) -> None:
        """Stop the callback from running (no effect once it ran or was cancelled)."""
        ...


class Timers(Protocol):
    """Runs callbacks after a delay, on a thread of the adapter's choosing.

    Callbacks must be quick and must not assume which thread runs them; the pipeline's
    ``inject_event`` is the safe way back into the domain.
    """

    def call_later(self, delay: float, fn: Callable[[], None]) -> TimerHandle:
        """Call ``fn()`` once, ``delay`` seconds from now (``delay`` >= 0)."""
        ...
