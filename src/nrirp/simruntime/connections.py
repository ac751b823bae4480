"""Plugins coming and going: accept, register, configure, synchronize, drop.

External plugins (socket or handed-out socketpair) are started one at a time in arrival order,
as Go's accept loop does: register (within the registration timeout, counted from when their turn
comes), Configure, then Synchronize under the runtime lock, and only then receive events.
Pre-launched plugins are started by :meth:`PluginManager.spawn`: register and Configure, no
Synchronize (containerd does not synchronize them either) unless asked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

from google.protobuf.message import DecodeError, Message

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import (
    RUNTIME_SERVICE_CONN,
    CallContext,
    Handler,
    Listener,
    OversizedMessage,
    Session,
    StatusCode,
    TtrpcError,
)
from nrirp.simruntime import launcher
from nrirp.simruntime.errors import InvalidRequest, PluginStartError
from nrirp.simruntime.journal import CallOutcome, Journal, PluginEventKind
from nrirp.simruntime.model import RuntimeModel
from nrirp.simruntime.options import RuntimeOptions
from nrirp.simruntime.plugin import (
    RUNTIME_SERVICE,
    CallError,
    PluginConnection,
    PluginKind,
    PluginState,
)
from nrirp.simruntime.sync import SyncFailed, synchronize

log = logging.getLogger("nrirp.nri.simruntime")

_PLUGIN_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
M = TypeVar("M", bound=Message)


class StartFailed(Exception):
    """Registering, configuring or synchronizing a plugin failed (the message says why)."""


def check_plugin_index(index: str) -> str | None:
    """Go's ``CheckPluginIndex``: the problem with ``index``, or None."""
    if len(index) != 2:
        return f'invalid plugin index "{index}", must be 2 digits'
    if not (index.isascii() and index.isdigit()):
        return f'invalid plugin index "{index}" (not [0-9][0-9])'
    return None


class PluginManager:
    """Every plugin connection of one runtime, and the ones that receive events."""

    def __init__(
        self,
        options: RuntimeOptions,
        journal: Journal,
        lock: asyncio.Lock,
        model: RuntimeModel,
    ) -> None:
        self.options = options
        self.version = options.nri_version
        self.journal = journal
        self.lock = lock
        self.model = model
        self.connections: list[PluginConnection] = []
        self._active: list[PluginConnection] = []
        self._queue: asyncio.Queue[PluginConnection] = asyncio.Queue()
        self._listener: Listener | None = None
        self._acceptor: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closing = False

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Start accepting plugins (on the socket path, if there is one)."""
        self._acceptor = asyncio.get_running_loop().create_task(self._accept_loop())
        path = self.options.socket_path
        if path is not None:
            directory = os.path.dirname(os.path.abspath(path))
            os.makedirs(directory, mode=0o700, exist_ok=True)
            self._listener = await Listener.start(path, self._setup_external)

    async def close(self) -> None:
        """Stop accepting, drop every plugin, kill pre-launched ones."""
        self._closing = True
        if self._listener is not None:
            self._listener.close()
        if self._acceptor is not None:
            self._acceptor.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._acceptor
        for plugin in self.connections:
            plugin.close("runtime shutting down")
        for plugin in self.connections:
            await plugin.session.wait_closed()
            if plugin.process is not None:
                await launcher.kill(plugin.process)
        if self._listener is not None:
            await self._listener.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def active(self) -> list[PluginConnection]:
        """Plugins that receive events, in invocation order (index, as strings)."""
        if any(p.closed for p in self._active):
            self._active = [p for p in self._active if not p.closed]
        return list(self._active)

    def _activate(self, plugin: PluginConnection, detail: str) -> None:
        self._active.append(plugin)
        self._active.sort(key=lambda p: p.index)  # stable: equal indices keep arrival order
        plugin.advance(PluginState.READY, PluginEventKind.SYNCHRONIZED, detail)

    def _spawn_task(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # ------------------------------------------------------------------ new connections

    def _new_connection(
        self, session: Session, kind: PluginKind, **identity: str
    ) -> PluginConnection:
        plugin = PluginConnection(session, self.journal, kind, **identity)
        session.open(RUNTIME_SERVICE_CONN).serve(RUNTIME_SERVICE, self._runtime_service(plugin))
        self.connections.append(plugin)
        return plugin

    def _setup_external(self, session: Session) -> None:
        if self._closing:
            session.close()
            return
        plugin = self._new_connection(session, PluginKind.EXTERNAL)
        self.journal.event(
            PluginEventKind.CONNECTED, plugin.name, "external", asyncio.get_running_loop().time()
        )
        self._queue.put_nowait(plugin)

    async def open_socket(self) -> socket.socket:
        """A connected socket for an in-process plugin; the runtime treats the other end like
        an accepted external connection (registration, Configure, Synchronize)."""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        session = Session()
        self._setup_external(session)
        try:
            await session.attach(ours)
        except BaseException:
            theirs.close()
            raise
        return theirs

    async def _accept_loop(self) -> None:
        while True:
            plugin = await self._queue.get()
            if plugin.closed:
                continue
            try:
                await self._start_external(plugin)
            except Exception:  # pragma: no cover - a bug: keep accepting others
                log.exception("plugin %s: start failed unexpectedly", plugin.name)
                plugin.close("internal error while starting the plugin")

    async def _start_external(self, plugin: PluginConnection) -> None:
        try:
            await self._register(plugin)
            plugin.read_peer_pid()
            await self._configure(plugin)
        except StartFailed as exc:
            self._reject(plugin, str(exc), close=True)
            return
        async with self.lock:
            try:
                detail = await self._synchronize(plugin)
            except StartFailed as exc:
                self._reject(plugin, str(exc), close=self.version.close_on_sync_failure)
                return
            self._activate(plugin, detail)

    def _reject(self, plugin: PluginConnection, reason: str, *, close: bool) -> None:
        log.warning("plugin %s: %s", plugin.name, reason)
        now = asyncio.get_running_loop().time()
        self.journal.event(PluginEventKind.REJECTED, plugin.name, reason, now)
        if close or plugin.closed:
            plugin.close(reason)
        else:
            plugin.state = PluginState.STALE

    # ------------------------------------------------------------------ pre-launched plugins

    async def spawn(
        self,
        command: Sequence[str],
        name: str,
        index: str,
        config: str = "",
        *,
        synchronize: bool = False,
        log_path: str | None = None,
    ) -> PluginConnection:
        """Start ``command`` as pre-launched plugin ``index-name`` and wait until it is ready."""
        problem = check_plugin_index(index)
        if problem is not None or not name:
            raise InvalidRequest(problem or "invalid (empty) plugin name")
        process, sock = await launcher.launch(command, name, index, log_path=log_path)
        session = Session()
        plugin = self._new_connection(
            session, PluginKind.PRELAUNCHED, index=index, base=name, config=config
        )
        plugin.process = process
        plugin.pid = process.pid
        try:
            await session.attach(sock)
        except BaseException:
            sock.close()
            await launcher.kill(process)
            raise
        now = asyncio.get_running_loop().time()
        self.journal.event(PluginEventKind.CONNECTED, plugin.name, "pre-launched", now)
        try:
            await self._register(plugin)
            await self._configure(plugin)
            async with self.lock:
                detail = await self._synchronize(plugin) if synchronize else "not synchronized"
                self._activate(plugin, detail)
        except StartFailed as exc:
            self._reject(plugin, str(exc), close=True)
            await launcher.kill(process)
            raise PluginStartError(f"plugin {plugin.name}: {exc}") from None
        return plugin

    # ------------------------------------------------------------------ protocol steps

    async def _register(self, plugin: PluginConnection) -> None:
        plugin.turn.set()
        try:
            async with asyncio.timeout(self.options.registration_timeout):
                await asyncio.shield(plugin.registration)
        except TimeoutError:
            raise StartFailed("plugin registration timed out") from None
        except _RegistrationRefused as exc:
            raise StartFailed(f"failed to register plugin: {exc}") from None
        except Exception:
            raise StartFailed("failed to register plugin, connection closed") from None
        plugin.advance(PluginState.REGISTERED, PluginEventKind.REGISTERED, plugin.nri_version)

    async def _configure(self, plugin: PluginConnection) -> None:
        options, version = self.options, self.version
        request = api_pb2.ConfigureRequest(
            config=plugin.config,
            runtime_name=options.runtime_name,
            runtime_version=options.effective_runtime_version,
        )
        if version.sends_timeouts:
            request.registration_timeout = round(options.registration_timeout * 1000)
            request.request_timeout = round(options.request_timeout * 1000)
        if version.sends_nri_version:
            request.NRI_version = str(version)
        deadline = asyncio.get_running_loop().time() + options.request_timeout
        try:
            reply = await plugin.call(
                "Configure", request, api_pb2.ConfigureResponse, deadline=deadline
            )
        except CallError as exc:
            raise StartFailed(f"failed to configure plugin: {exc.message}") from None
        events = reply.events & 0xFFFFFFFF
        if events:
            extra = events & ~version.valid_events
            if extra:
                raise StartFailed(f"invalid plugin events: 0x{extra:x}")
        else:
            events = version.valid_events
        plugin.events = events
        plugin.advance(PluginState.CONFIGURED, PluginEventKind.CONFIGURED, f"events 0x{events:x}")

    async def _synchronize(self, plugin: PluginConnection) -> str:
        """Synchronize under the runtime lock (held by the caller); apply the plugin's updates."""
        pods, containers = self.model.snapshot()
        deadline = asyncio.get_running_loop().time() + self.options.request_timeout
        try:
            updates = await synchronize(
                plugin,
                pods,
                containers,
                version=self.version,
                deadline=deadline,
                size_limit=self.options.sync_size_limit,
            )
        except (CallError, OversizedMessage, SyncFailed) as exc:
            message = exc.message if isinstance(exc, CallError | TtrpcError) else str(exc)
            raise StartFailed(f"failed to synchronize plugin: {message}") from None
        failed, problems = self.model.apply_updates(updates)
        for problem in problems:
            log.warning("plugin %s: sync update failed: %s", plugin.name, problem)
        detail = f"{len(pods)} pods, {len(containers)} containers"
        if failed:
            detail += f", {len(failed)} updates failed"
        return detail

    # ------------------------------------------------------------------ Runtime service

    def _runtime_service(self, plugin: PluginConnection) -> dict[str, Handler]:
        async def register_plugin(payload: bytes, _ctx: CallContext) -> bytes:
            request = _parse(api_pb2.RegisterPluginRequest, payload)
            await plugin.turn.wait()  # Go reads nothing until the plugin's turn comes
            if plugin.registration.done():
                return b""  # a second registration changes nothing
            problem = self._registration_problem(plugin, request)
            if problem is not None:
                reply_error, reason = problem
                plugin.registration.set_exception(_RegistrationRefused(reason))
                raise TtrpcError(StatusCode.UNKNOWN, reply_error)
            plugin.nri_version = request.NRI_version
            if plugin.kind is PluginKind.EXTERNAL:
                plugin.base, plugin.index = request.plugin_name, request.plugin_idx
            plugin.registration.set_result(None)
            return b""

        async def update_containers(payload: bytes, _ctx: CallContext) -> bytes:
            request = _parse(api_pb2.UpdateContainersRequest, payload)
            # runs on even if the plugin is dropped meanwhile, like the Go handler goroutine
            task = self._spawn_task(self._updates_from_plugin(plugin, request))
            reply = await asyncio.shield(task)
            assert isinstance(reply, api_pb2.UpdateContainersResponse)
            return reply.SerializeToString()

        return {"RegisterPlugin": register_plugin, "UpdateContainers": update_containers}

    def _registration_problem(
        self, plugin: PluginConnection, request: api_pb2.RegisterPluginRequest
    ) -> tuple[str, str] | None:
        """(error for the reply, reason for the runtime's log), or None if acceptable."""
        if plugin.kind is PluginKind.PRELAUNCHED:
            return None  # the file name gave the identity; what the plugin says is ignored
        name, index = request.plugin_name, request.plugin_idx
        if not name:
            return "invalid (empty) plugin name", f'plugin "{plugin.name}" registered empty name'
        if self.version.checks_plugin_name_syntax and not _PLUGIN_NAME.fullmatch(name):
            problem = f'invalid plugin name "{name}", must match [A-Za-z0-9_.+-]+'
            return problem, f'plugin "{name}" registered {problem}'
        bad_index = check_plugin_index(index)
        if bad_index is not None:
            return (
                f"invalid plugin index: {bad_index}",
                f'plugin "{name}" registered invalid index: {bad_index}',
            )
        return None

    async def _updates_from_plugin(
        self, plugin: PluginConnection, request: api_pb2.UpdateContainersRequest
    ) -> api_pb2.UpdateContainersResponse:
        loop = asyncio.get_running_loop()
        started = loop.time()
        async with self.lock:  # the same lock event dispatch holds: see the deadlock note
            failed, problems = self.model.apply_updates(request.update)
            self.journal.changed()
        for problem in problems:
            log.info("plugin %s: update failed: %s", plugin.name, problem)
        reply = api_pb2.UpdateContainersResponse(failed=failed)
        self.journal.call(
            plugin.name,
            "UpdateContainers",
            None,
            CallOutcome.OK,
            started,
            loop.time() - started,
            inbound=True,
            request=request,
            reply=reply,
        )
        return reply


class _RegistrationRefused(Exception):
    pass


def _parse(message_type: type[M], payload: bytes) -> M:
    try:
        return message_type.FromString(payload)
    except DecodeError as exc:
        raise TtrpcError(
            StatusCode.INVALID_ARGUMENT, f"bad {message_type.__name__}: {exc}"
        ) from None
