"""``nrirp run --engine-api`` / ``--nri-v01``: the daemon serving the engine API, no NRI.

:func:`use_engine_api` turns a ``DaemonContainer`` into this mode before anything is built:
the engine's runtime updates go to the API (a call's own updates into its reply, the others
to a queue), and the container's ``service`` (what ``Daemon.serve`` runs until SIGTERM) is
:class:`EngineApiService` instead of the NRI plugin service.

With ``--nri-v01`` the daemon is also the NRI v0.1 exec client's engine (docs/nri-v01.md):
every decision is written into the containers' cgroups (the container's own and the updates
of every other container, from any call and from the queue), and containers whose cgroup
disappeared are released at start and every ``RECONCILE_SECONDS``.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import TYPE_CHECKING

from dependency_injector import providers

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.engine_api.server import EngineApiError, EngineApiServer
from nrirp.adapters.engine_api.service import EngineService
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer
from nrirp.adapters.nri_v01.handler import V01Handler
from nrirp.adapters.nri_v01.served import ServedV01
from nrirp.adapters.nri_v01.stale import CgroupPresence
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policy import PolicyRegistry

if TYPE_CHECKING:
    from nrirp.app.daemon.composition import DaemonContainer

log = logging.getLogger("nrirp.daemon")

RECONCILE_SECONDS = 10.0
__all__ = ["EngineApiError", "EngineApiService", "start_engine_api", "use_engine_api"]


class EngineApiService:
    """Serves the engine API on ``socket_path`` until :meth:`stop` (the daemon's service)."""

    def __init__(
        self,
        manager: ResourceManager,
        updates: RoutedRuntimeUpdates,
        socket_path: str,
        registry: PolicyRegistry,
        host: CgroupfsHostControl | None,
    ) -> None:
        self.manager = manager
        self.updates = updates
        self.socket_path = socket_path
        self.handler: V01Handler | None = None
        served: ServedV01 | None = None
        if host is not None:
            self.handler = V01Handler(
                manager, CgroupEnforcer(host), CgroupPresence(host), updates.capture
            )
            served = ServedV01(self.handler)
        service = EngineService(manager, updates, writer=served, v01=served, registry=registry)
        self.server = EngineApiServer(socket_path, service)
        self._stop_requested = threading.Event()
        self._stopped: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._enforcer: threading.Thread | None = None

    def start(self) -> None:
        """Bind the socket and serve (raises :class:`EngineApiError`)."""
        self.server.start()
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
        next_reconcile = RECONCILE_SECONDS
        waited = 0.0
        while not self._stop_requested.is_set():
            updates = self.updates.take(1.0)
            if updates:
                handler.enforce(updates)
            waited += 1.0
            if waited >= next_reconcile:
                waited = 0.0
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
    container.service.override(
        providers.Singleton(
            EngineApiService,
            container.core.container.resource_manager,
            updates,
            socket_path,
            container.core.container.policy_registry,
            adapters.cgroups if nri_v01 else providers.Object(None),
        )
    )


def start_engine_api(container: DaemonContainer) -> None:
    """Bind the engine API's socket of a container set up by :func:`use_engine_api`."""
    service = container.service()
    if not isinstance(service, EngineApiService):
        raise TypeError("the container does not serve the engine API (use_engine_api first)")
    service.start()
