"""The interpreter tuned for answering the runtime fast: garbage collection and thread switching.

Measured causes of slow NRI requests in the daemon (``docs/benchmarks.md``, *Tail latency*):

- **Full garbage collections.** A generation-2 collection walks every tracked object: the
  modules, the machine's topology, the configuration and every cached pod and container. With
  a few hundred containers that is 20-50 ms inside whatever request allocated the object that
  triggered it; during a Synchronize of 900 containers it ran twice (about 100 ms each on a
  busy machine). :func:`settle` collects once when the daemon has started and freezes what is
  left (``gc.freeze``: never scanned again, still freed by reference counting when dropped),
  and :func:`bulk_allocation` pauses collection while a Synchronize fills the cache, then
  freezes what it made instead of letting the next request pay a collection of all of it.
- **The GIL.** The state file's writer thread encodes snapshots holding the GIL; the event loop
  then waits for it up to the interpreter's switch interval (5 ms by default) on every hand-over.
  :data:`SWITCH_INTERVAL` makes that wait a fraction of a millisecond.

Frozen objects that form reference cycles are never reclaimed; the objects frozen here (start-up
state, the containers of a synchronization) live as long as the daemon or die by reference
counting, so little is at stake.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol


class Foreground(Protocol):
    """Work background threads step aside for (the daemon's: NRI event handlers running,
    ``nrirp.adapters.nri.stub.scope.HANDLERS``): the state file's writer and the log output."""

    @property
    def busy(self) -> bool: ...

    def wait_idle(self, timeout: float) -> bool:
        """Wait until not busy, at most ``timeout`` seconds (blocked, so not asking for the
        GIL meanwhile); True if not busy."""
        ...


SWITCH_INTERVAL = 0.0005
"""Seconds a thread may hold the GIL while another waits for it (CPython's default: 0.005)."""


def tune_switch_interval(interval: float = SWITCH_INTERVAL) -> None:
    """Make a thread waiting for the GIL get it within ``interval`` seconds."""
    sys.setswitchinterval(interval)


def settle() -> None:
    """Collect once, then freeze every object that survived (call when start-up is done:
    later collections only scan what was made since)."""
    gc.collect()
    gc.freeze()


@contextmanager
def bulk_allocation() -> Iterator[None]:
    """No automatic collection inside the block; what it made is frozen at its end.

    For a burst that allocates many long-lived objects (a Synchronize admitting hundreds of
    containers): collections during it find no garbage worth their time, and re-enabling
    collection afterwards would have the next allocation scan all of it at once.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()
