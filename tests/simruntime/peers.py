"""Test helpers: scripted plugin peers made of the transport, and runtimes for them.

A :class:`ScriptedPlugin` registers, answers Configure with a chosen event mask, records every
request it gets, and answers each method with a handler given by the test, or with an empty reply
(``defaults=False``: methods without a handler are not served at all, so the runtime gets
UNIMPLEMENTED, as from a plugin that lacks them).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from google.protobuf.message import Message

from nrirp.adapters.nri.api import EVENT_NAMES, PLUGIN_SERVICE, RUNTIME_SERVICE, EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    CallContext,
    Session,
)
from nrirp.simruntime import RuntimeOptions, SimRuntime

REQUESTS: dict[str, type[Message]] = {
    "Configure": api_pb2.ConfigureRequest,
    "Synchronize": api_pb2.SynchronizeRequest,
    "StateChange": api_pb2.StateChangeEvent,
    "Shutdown": api_pb2.Empty,
    **{name: getattr(api_pb2, f"{name}Request") for name in EVENT_NAMES.values()},
}
EVENT_METHODS = tuple(m for m in REQUESTS if m not in ("Configure", "Synchronize", "Shutdown"))

Handler = Callable[[Any], Awaitable[Message | None]]


def runtime(**options: Any) -> SimRuntime:
    """A runtime without a socket path (plugins come through socketpairs) unless given."""
    return SimRuntime(RuntimeOptions(**options))


async def empty(_request: Any) -> None:
    return None


class ScriptedPlugin:
    """A plugin peer whose every answer the test controls.

    ``handlers`` maps Plugin method names to ``async (request) -> reply | None`` (None: an empty
    reply). ``defaults=True`` serves every other event RPC and StateChange with an empty reply.
    Configure answers ``events`` unless a handler for it is given; Synchronize
    answers as the protocol wants (``more`` echoed, no updates) unless a handler is given.
    """

    def __init__(
        self,
        name: str = "scripted",
        index: str = "50",
        *,
        events: int = 0,
        handlers: dict[str, Handler] | None = None,
        defaults: bool = True,
        nri_version: str = "",
    ) -> None:
        self.name = name
        self.index = index
        self.events = events
        self.nri_version = nri_version
        self.requests: list[tuple[str, Any]] = []
        self.closed = asyncio.Event()
        self.session = Session(on_close=lambda _reason: self.closed.set())
        table: dict[str, Handler] = {"Configure": self._configure, "Synchronize": self._sync}
        if defaults:
            table.update({name: empty for name in EVENT_METHODS})
        table.update(handlers or {})
        served = {method: self._serve(method, handler) for method, handler in table.items()}
        self.session.open(PLUGIN_SERVICE_CONN).serve(PLUGIN_SERVICE, served)
        self.runtime = self.session.open(RUNTIME_SERVICE_CONN)

    @property
    def full_name(self) -> str:
        return f"{self.index}-{self.name}"

    def _serve(self, method: str, handler: Handler) -> Callable[[bytes, CallContext], Any]:
        request_type = REQUESTS[method]

        async def serve(payload: bytes, _ctx: CallContext) -> bytes:
            request = request_type.FromString(payload)
            self.requests.append((method, request))
            reply = await handler(request)
            return b"" if reply is None else reply.SerializeToString()

        return serve

    async def _configure(self, _request: api_pb2.ConfigureRequest) -> api_pb2.ConfigureResponse:
        return api_pb2.ConfigureResponse(events=self.events)

    async def _sync(self, request: api_pb2.SynchronizeRequest) -> api_pb2.SynchronizeResponse:
        return api_pb2.SynchronizeResponse(more=request.more)

    def seen(self, method: str | None = None) -> list[str]:
        """Methods received so far (or requests of one method, as their type names)."""
        return [m for m, _ in self.requests if method is None or m == method]

    def requests_of(self, method: str) -> list[Any]:
        return [r for m, r in self.requests if m == method]

    def events_seen(self) -> list[str]:
        """Event names in arrival order, StateChange translated to the event's name."""
        out = []
        for method, request in self.requests:
            if method == "StateChange":
                out.append(api_pb2.Event.Name(request.event))
            elif method not in ("Configure", "Synchronize"):
                out.append(method)
        return out

    async def attach(self, rt: SimRuntime, *, register: bool = True) -> ScriptedPlugin:
        """Connect through a socketpair handed out by ``rt`` and (by default) register."""
        sock = await rt.open_plugin_socket()
        await self.session.attach(sock)
        if register:
            await self.register()
        return self

    async def connect(self, path: str, *, register: bool = True) -> ScriptedPlugin:
        await self.session.connect(path)
        if register:
            await self.register()
        return self

    async def register(self, timeout: float = 5.0) -> None:
        request = api_pb2.RegisterPluginRequest(
            plugin_name=self.name, plugin_idx=self.index, NRI_version=self.nri_version
        )
        await self.runtime.call(
            RUNTIME_SERVICE, "RegisterPlugin", request.SerializeToString(), timeout=timeout
        )

    async def update_containers(
        self, updates: Iterable[api_pb2.ContainerUpdate], timeout: float | None = None
    ) -> list[api_pb2.ContainerUpdate]:
        request = api_pb2.UpdateContainersRequest(update=list(updates))
        raw = await self.runtime.call(
            RUNTIME_SERVICE, "UpdateContainers", request.SerializeToString(), timeout=timeout
        )
        return list(api_pb2.UpdateContainersResponse.FromString(raw).failed)

    async def close(self) -> None:
        self.session.close()
        await self.session.wait_closed()


async def ready(rt: SimRuntime, *plugins: ScriptedPlugin) -> None:
    """Attach and register each plugin and wait until all receive events."""
    for plugin in plugins:
        await plugin.attach(rt)
        await rt.wait_plugin(plugin.full_name)


def mask(*events: int) -> int:
    """The subscription mask of ``api_pb2.Event`` values."""
    return int(EventMask.of(*events))
