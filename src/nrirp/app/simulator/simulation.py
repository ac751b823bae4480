"""The resource-manager plugin connected to a simulated runtime, in one process.

The plugin talks NRI to :class:`SimRuntime` over a socketpair, exactly as it talks to containerd
over the NRI socket: same stub, same translation, same update delivery. The simulator and fast
end-to-end tests drive pods through the runtime and read back what each container got.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from types import TracebackType

from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.service import PluginService
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.stub import RegistrationError, Stub
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine
from nrirp.simruntime import RuntimeOptions, SimRuntime


def simulated_runtime(machine: Machine, nri_version: str | None = None) -> SimRuntime:
    """A simulated runtime for ``machine``: its CPUs, memory nodes and memory capacity."""
    mems = CPUSet.from_ids(n.id for n in machine.nodes.values() if n.memory_bytes > 0)
    options = RuntimeOptions(
        host_cpus=machine.online,
        host_mems=mems,
        memory_capacity=sum(n.memory_bytes for n in machine.nodes.values()) or 64 << 30,
    )
    if nri_version:
        return SimRuntime(options, nri_version=nri_version)
    return SimRuntime(options)


class Simulation:
    """Starts ``runtime``, connects ``plugin`` to it and serves until :meth:`close`.

    Use ``async with Simulation(...) as sim:`` then drive ``sim.runtime``.
    """

    def __init__(
        self,
        runtime: SimRuntime,
        plugin: ResourceManagerPlugin,
        updates: NriRuntimeUpdates,
        *,
        name: str = "resource-manager",
        index: str = "90",
    ) -> None:
        self.runtime = runtime
        self.plugin = plugin
        self.updates = updates
        self.name = name
        self.index = index
        self.stub: Stub | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, timeout: float = 10.0) -> Simulation:
        """Start the runtime and the plugin; returns once the plugin receives events.

        If the plugin stops first, or is not ready within ``timeout`` seconds, everything is
        closed again and the error raised (the plugin's own, else :class:`RegistrationError`
        or ``TimeoutError``).
        """
        await self.runtime.start()
        sock = await self.runtime.open_plugin_socket()
        self.stub = self._stub(sock)
        service = PluginService(self.stub, self.updates)
        self._task = asyncio.create_task(service.run())
        ready = asyncio.create_task(
            self.runtime.wait_plugin(f"{self.index}-{self.name}", timeout=timeout)
        )
        await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if ready.done() and ready.exception() is None:
            return self
        if not ready.done():
            ready.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ready
        error = _failure(self._task) or _failure(ready)
        await self.close()
        raise error or RegistrationError("the plugin stopped before it was ready")

    def _stub(self, sock: socket.socket) -> Stub:
        """The plugin's stub over the runtime's socket ``sock``, serving as the daemon's does
        (handlers started at once)."""
        return Stub(
            self.plugin,
            name=self.name,
            index=self.index,
            connection=sock,
            reconnect=False,
            eager=True,
        )

    async def reconnect(self, timeout: float = 10.0) -> None:
        """Drop the plugin's connection and connect it again, as after a restart of the
        runtime: the runtime synchronizes it with what it runs now. Returns once the plugin
        synchronized (raises ``TimeoutError`` after ``timeout`` seconds)."""
        synchronizations = self.plugin.synchronizations
        if self.stub is not None:
            self.stub.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
        sock = await self.runtime.open_plugin_socket()
        self.stub = self._stub(sock)
        self._task = asyncio.create_task(PluginService(self.stub, self.updates).run())
        async with asyncio.timeout(timeout):
            while self.plugin.synchronizations == synchronizations:
                if self._task.done():
                    raise _failure(self._task) or RegistrationError("the plugin stopped")
                await asyncio.sleep(0.005)

    async def close(self) -> None:
        """Disconnect the plugin and stop the runtime (idempotent)."""
        if self.stub is not None:
            self.stub.stop()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
            self._task = None
        await self.runtime.close()

    async def __aenter__(self) -> Simulation:
        return await self.start()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


def _failure(task: asyncio.Task[object]) -> BaseException | None:
    """The exception a finished, not cancelled task ended with."""
    if not task.done() or task.cancelled():
        return None
    return task.exception()
