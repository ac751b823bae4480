"""Port: hearing every inbound call the resource manager handles, in the order it handles them.

A recorder (``nrirp run --record``) implements it to write what a node went through, so that
the simulator can replay it (``docs/simulator.md``, Record and replay).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

from nrirp.domain.config import PolicyConfig
from nrirp.domain.model import Container, LinuxResources, Pod

LatestState = Callable[[], Mapping[str, Any] | None]
"""Gives the state saved after the latest call (``None``: nothing saved since the start)."""


class InboundCall(NamedTuple):
    """One call a driver (the NRI plugin, a host agent, the reload thread) made, with what it
    passed, as the pipeline handled it: the arguments of :meth:`InboundObserver.handled` as
    one value (``observer.handled(*call)`` tells an observer of ``call``).

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
    """Told of the resource manager's start and of each inbound call it handled.

    Contract for adapters: every method is called with the pipeline's serialization held, in
    the order the pipeline ran the calls, before the next call runs; on the caller's thread,
    either within the call or, for a driver that asked for it
    (:meth:`~nrirp.domain.pipeline.manager.ResourceManager.defer_observer`: the NRI plugin),
    once the driver sent its reply. It must return at once and never raise (keep what it
    needs and do the work on a thread of its own). The values are immutable and handed over.
    Calls refused before the start (or before anything ran) are not reported.

    Nothing is pushed that the observer may not need: the state saved after a call is there
    to be read (``latest_state``, given at the start) from :meth:`handled`, when the
    observer wants it (a recorder: where a file ends); each call comes as arguments, not as
    one value made for it (``docs/benchmarks.md``, Recording under gomockrt: on a request's
    path every object made and every call counts).
    """

    def started(
        self,
        config: PolicyConfig | None,
        restored: Mapping[str, Any] | None,
        latest_state: LatestState,
    ) -> None:
        """The policy started with ``config``; ``restored`` is the saved state read at the
        start (``None``: none). ``latest_state()``, called from :meth:`handled`, gives the
        very snapshot the :class:`~nrirp.domain.ports.state_store.StateStore` last got (the
        state after that call: a call's save comes before it is reported; a lazily encoded
        read-only mapping: read it off the pipeline, never modify it); ``None`` while no save
        succeeded (no store, say: the start saves too)."""
        ...

    def handled(
        self,
        operation: str,
        pod: Pod | None = None,
        container: Container | None = None,
        resources: LinuxResources | None = None,
        pods: tuple[Pod, ...] = (),
        containers: tuple[Container, ...] = (),
        config: PolicyConfig | None = None,
        failure: str | None = None,
    ) -> None:
        """The pipeline handled a call (committed or refused): the fields of an
        :class:`InboundCall`, in its order (a lifecycle operation's come positionally)."""
        ...
