"""``nrirp run --engine-api`` / ``--nri-v01``: the daemon serving the engine API, no NRI.

:func:`use_engine_api` turns a ``DaemonContainer`` into this mode before anything is built:
the engine's runtime updates go to the API (a call's own updates into its reply, the others
to a queue), and the container's ``front`` (what ``nrirp run`` starts, runs until SIGTERM and
asks whether it is in service) is :class:`EngineApiService`; nothing of the NRI plugin, its
stub or its service is built. The daemon is ready once the policy started with a valid
configuration and the API's socket is served (:class:`EngineApiState`).

With ``--nri-v01`` the daemon is also the NRI v0.1 exec client's engine (docs/nri-v01.md):
every decision is written into the containers' cgroups (the container's own and the updates
of every other container, from any call and from the queue), and containers whose cgroup
disappeared are released at start and every ``RECONCILE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import TYPE_CHECKING, Any

from dependency_injector import providers

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.engine_api.server import EngineApiError, EngineApiServer
from nrirp.adapters.engine_api.service import EngineService
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer
from nrirp.adapters.nri_v01.handler import V01Handler
from nrirp.adapters.nri_v01.served import ServedV01
from nrirp.adapters.nri_v01.stale import CgroupPresence
from nrirp.app.daemon.front import FrontStartError
from nrirp.app.daemon.health import ServingState
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policy import PolicyRegistry
from nrirp.domain.policy.explanation import Explanation

if TYPE_CHECKING:
    from nrirp.adapters.metrics import MetricsRecorder
    from nrirp.app.daemon.composition import DaemonContainer

log = logging.getLogger("nrirp.daemon")

RECONCILE_SECONDS = 10.0
__all__ = ["EngineApiError", "EngineApiService", "EngineApiState", "use_engine_api"]


class EngineApiState:
    """The engine API as what drives the daemon (a ``ServingState``): in service while its
    socket is served. The recorder's runtime gauges follow it (``nrirp_runtime_connected``
    is 1 while it is served)."""

    def __init__(self, socket_path: str, v01: bool, recorder: MetricsRecorder | None = None):
        self.socket_path = socket_path
        self.v01 = v01
        self.recorder = recorder
        self.serving_now = False
        self.stopped = False

    @property
    def description(self) -> str:
        return f"engine API{' and NRI v0.1' if self.v01 else ''} on {self.socket_path}"

    def started(self) -> None:
        self.serving_now = True
        if self.recorder is not None:
            self.recorder.runtime_connected()
            self.recorder.runtime_synchronized()

    def ended(self) -> None:
        if self.serving_now and self.recorder is not None:
            self.recorder.runtime_disconnected()
        self.serving_now = False
        self.stopped = True

    def not_serving(self) -> tuple[str, ...]:
        if self.serving_now:
            return ()
        return ("engine API: stopped" if self.stopped else "engine API: not serving yet",)

    def serving(self) -> str:
        return f"{self.description}: serving"

    def report(self) -> dict[str, Any]:
        return {
            "kind": "nri-v01" if self.v01 else "engine-api",
            "connected": self.serving_now,
            "synchronized": self.serving_now,
            "runtime": self.description,
            "connections": 1 if self.serving_now or self.stopped else 0,
            "last_loss": "stopped" if self.stopped else "",
        }


class EngineApiService:
    """Serves the engine API on ``socket_path`` until :meth:`stop`: the daemon's front in the
    engine-API modes (``app/daemon/front.py``)."""

    def __init__(
        self,
        manager: ResourceManager,
        updates: RoutedRuntimeUpdates,
        socket_path: str,
        registry: PolicyRegistry,
        host: CgroupfsHostControl | None,
        recorder: MetricsRecorder | None = None,
    ) -> None:
        self.manager = manager
        self.updates = updates
        self.socket_path = socket_path
        self._state = EngineApiState(socket_path, host is not None, recorder)
        self.handler: V01Handler | None = None
        served: ServedV01 | None = None
        if host is not None:
            self.handler = V01Handler(
                manager, CgroupEnforcer(host), CgroupPresence(host), updates.capture
            )
            served = ServedV01(self.handler)
        service = EngineService(
            manager,
            updates,
            writer=served,
            v01=served,
            registry=registry,
            explanation_document=_explanation_document,
        )
        self.server = EngineApiServer(socket_path, service)
        self._stop_requested = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._enforcer: threading.Thread | None = None

    @property
    def name(self) -> str:
        return "engine API (NRI v0.1)" if self.handler is not None else "engine API"

    @property
    def state(self) -> ServingState:
        return self._state

    def configuration_changed(self) -> None:
        """Nothing to do: the API serves every call whatever the configuration."""

    def start(self) -> None:
        """Bind the socket and serve (raises :class:`FrontStartError`)."""
        try:
            self.server.start()
        except EngineApiError as exc:
            raise FrontStartError(f"engine API: {exc}") from None
        self._state.started()
        mode = "engine API and NRI v0.1" if self.handler is not None else "engine API"
        log.info("serving the %s on %s", mode, self.socket_path)
        if self.handler is not None:
            released = self.handler.reconcile()
            if released:
                log.info("released %d containers whose cgroups are gone", released)
            self._enforcer = threading.Thread(
                target=self._enforce_queued, name="nri-v01-enforcer", daemon=True
            )
            self._enforcer.start()

    def _enforce_queued(self) -> None:
        """Write the updates made outside any call (timers, reconfiguration); reconcile now
        and then."""
        handler = self.handler
        assert handler is not None
        next_reconcile = time.monotonic() + RECONCILE_SECONDS
        while not self._stop_requested.is_set():
            updates = self.updates.take(1.0)
            if updates:
                handler.enforce(updates)
            elif self.updates.closed:
                return  # the server stopped: take() no longer waits, nothing more will come
            if time.monotonic() >= next_reconcile:
                next_reconcile = time.monotonic() + RECONCILE_SECONDS
                try:
                    handler.reconcile()
                except Exception:
                    log.exception("reconciling with the cgroup tree failed")

    async def run(self) -> None:
        """Serve until :meth:`stop` (:meth:`start` has bound the socket), then stop the
        server and the enforcement thread."""
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        if self._stop_requested.is_set():
            self._stopped.set()
        await self._stopped.wait()
        await asyncio.to_thread(self._shutdown)

    def _shutdown(self) -> None:
        self._state.ended()
        self.server.stop(grace=1.0)
        if self._enforcer is not None:
            self._enforcer.join(timeout=5)

    def stop(self) -> None:
        self._stop_requested.set()
        self.updates.close()
        if self._stopped is not None and self._loop is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)


def use_engine_api(container: DaemonContainer, socket_path: str, *, nri_v01: bool) -> None:
    """Make ``container`` a daemon serving the engine API on ``socket_path`` (and the NRI
    v0.1 requests, enforced in cgroups, with ``nri_v01``). Call before anything is built."""
    adapters = container.adapters.container
    updates = RoutedRuntimeUpdates()
    adapters.runtime_updates.override(providers.Object(updates))
    container.front.override(
        providers.Singleton(
            EngineApiService,
            container.core.container.resource_manager,
            updates,
            socket_path,
            container.core.container.policy_registry,
            adapters.cgroups if nri_v01 else providers.Object(None),
            adapters.recorder,
        )
    )


def _explanation_document(explanation: Explanation) -> dict[str, Any]:
    """``Explain``'s document (imported on the first call: not needed to serve)."""
    from nrirp.app.explain import explanation_document

    return explanation_document(explanation)
