"""Port: hearing every inbound call the resource manager handles, in the order it handles them.

A recorder (``nrirp run --record``) implements it to write what a node went through, so that
the simulator can replay it (``docs/simulator.md``, Record and replay).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from nrirp.domain.config import PolicyConfig
from nrirp.domain.model import Container, LinuxResources, Pod


class InboundCall(NamedTuple):
    """One call a driver (the NRI plugin, a host agent, the reload thread) made, with what it
    passed, as the pipeline handled it.

    A named tuple rather than an attrs class: one is made for every call the pipeline handles
    while recording, on the request's path, and a frozen attrs class takes twice the work to
    make (``docs/benchmarks.md``, Recording under gomockrt).

    ``operation`` is the pipeline's name for it: ``synchronize`` (``pods``, ``containers``),
    ``run-pod``, ``stop-pod``, ``remove-pod`` (``pod``), ``create-container``,
    ``post-create``, ``start-container``, ``post-start``, ``post-update``,
    ``stop-container``, ``remove-container`` (``pod``, ``container``), ``update-container``
    (also ``resources``), ``reconfigure`` (``config``). ``failure`` is the reason an
    operation was refused (the cache was left as it was), ``None`` when it succeeded.
    """

    operation: str
    pod: Pod | None = None
    container: Container | None = None
    resources: LinuxResources | None = None
    pods: tuple[Pod, ...] = ()
    containers: tuple[Container, ...] = ()
    config: PolicyConfig | None = None
    failure: str | None = None


class InboundObserver(Protocol):
    """Told of the resource manager's start, of each inbound call it handled and of each state
    it saved.

    Contract for adapters: every method is called with the pipeline's serialization held, on
    the caller's thread (a request's own path), in the order the pipeline ran the calls; it
    must return at once and never raise (queue what it got and do the work on a thread of its
    own). The values are immutable and handed over. Calls refused before the start (or before
    anything ran) are not reported. ``saved`` gets the very snapshot the
    :class:`~nrirp.domain.ports.state_store.StateStore` got (a lazily encoded read-only
    mapping: read it off the pipeline, never modify it).
    """

    def started(self, config: PolicyConfig | None, restored: Mapping[str, Any] | None) -> None:
        """The policy started with ``config``; ``restored`` is the saved state read at the
        start (``None``: none)."""
        ...

    def handled(self, call: InboundCall) -> None:
        """The pipeline handled ``call`` (committed or refused)."""
        ...

    def saved(self, snapshot: Mapping[str, Any]) -> None:
        """The state after the latest call, as handed to the state store."""
        ...
