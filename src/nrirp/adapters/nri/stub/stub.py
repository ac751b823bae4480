"""The stub: connects a :class:`~nrirp.adapters.nri.stub.plugin.Plugin` to a runtime over NRI."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, Mapping

from nrirp.adapters.nri import versions
from nrirp.adapters.nri.api import (
    DEFAULT_SOCKET_PATH,
    PLUGIN_SERVICE,
    PLUGIN_SOCKET_ENV,
    RUNTIME_SERVICE,
    EventMask,
)
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub.backoff import Backoff
from nrirp.adapters.nri.stub.dispatch import Dispatcher, scoped
from nrirp.adapters.nri.stub.errors import (
    NotConnectedError,
    PluginDefinitionError,
    RegistrationError,
    StubError,
    UpdateFromHandlerError,
)
from nrirp.adapters.nri.stub.identity import PluginIdentity, resolve_identity
from nrirp.adapters.nri.stub.plugin import discover_handlers
from nrirp.adapters.nri.stub.redial import Redialer
from nrirp.adapters.nri.stub.scope import active_scope
from nrirp.adapters.nri.transport import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    Endpoint,
    Session,
    TtrpcError,
)

log = logging.getLogger("nrirp.nri.stub")

DEFAULT_REGISTRATION_TIMEOUT = 5.0
DEFAULT_REQUEST_TIMEOUT = 2.0

CloseHook = Callable[[BaseException | None], Awaitable[None] | None]
"""Called (sync or async) when an established connection goes down, with the reason: None after
:meth:`Stub.stop`, else the transport's error (e.g. ConnectionClosed on EOF)."""


class _Connection:
    """One attempt: a session, its registration and configuration, its close handling."""

    def __init__(self, stub: Stub) -> None:
        loop = asyncio.get_running_loop()
        self.stub = stub
        self.session = Session(on_close=self._down)
        self.configured: asyncio.Future[EventMask] = loop.create_future()
        self.established = False
        self.up_since = loop.time()
        self.hook_task: asyncio.Task[None] | None = None
        dispatcher = Dispatcher(stub.handlers, self.configure)
        self.session.open(PLUGIN_SERVICE_CONN).serve(
            PLUGIN_SERVICE,
            dispatcher.methods(),
            eager=stub.eager,
            after_reply=getattr(stub.plugin, "after_reply", None),
        )
        self.runtime: Endpoint = self.session.open(RUNTIME_SERVICE_CONN)

    async def configure(self, request: api_pb2.ConfigureRequest) -> EventMask:
        try:
            events = await self.stub._apply_configure(request)
        except PluginDefinitionError as exc:
            _fail(self.configured, exc)  # a programming error: retrying cannot help
            raise
        except BaseException as exc:
            failure = RegistrationError(f"configuring plugin {self.stub.full_name} failed: {exc}")
            _fail(self.configured, failure)
            raise
        if not self.configured.done():
            self.configured.set_result(events)
        return events

    def _down(self, reason: BaseException | None) -> None:
        why = "closed" if reason is None else f"closed: {reason}"
        _fail(
            self.configured,
            RegistrationError(f"connection to the runtime {why} before configuration"),
        )
        if self.established:
            self.hook_task = self.stub._connection_lost(reason)


class Stub:
    """Serve a plugin to a container runtime over NRI.

    Connection, in Go stub order: an explicit ``connection`` (a connected socket), else the
    pre-launched socket from ``NRI_PLUGIN_SOCKET`` (fd 3 when the runtime started the plugin),
    else ``socket_path`` (default ``/var/run/nri/nri.sock``) as an external plugin.

    Identity: ``name``/``index`` arguments, else ``NRI_PLUGIN_NAME``/``NRI_PLUGIN_IDX``, else
    argv[0] named ``NN-name``, else ``default_name``/``default_index``.

    Lifecycle: :meth:`start` connects, registers and returns once configured; :meth:`run` starts
    and serves until :meth:`stop` or, for a pre-launched plugin or an explicit connection, until
    the connection closes. External plugins reconnect (``reconnect``: True for the default
    :class:`Backoff`, a Backoff, or False for not at all) as soon as the runtime's socket appears
    or is replaced, with backoff only while it refuses (:attr:`redialer`), and go through
    register/configure/synchronize again.
    ``on_close(reason)`` runs whenever an established connection goes down. ``eager``: each
    handler starts as soon as its request is decoded (see :attr:`eager`).

    Updates: ``await update_containers(...)`` outside handlers; ``schedule_update_containers``
    anywhere (inside a handler it is sent after the handler's reply).
    """

    def __init__(
        self,
        plugin: object,
        *,
        name: str | None = None,
        index: str | None = None,
        socket_path: str | os.PathLike[str] | None = None,
        connection: socket.socket | None = None,
        on_close: CloseHook | None = None,
        reconnect: Backoff | bool = True,
        registration_timeout: float = DEFAULT_REGISTRATION_TIMEOUT,
        request_timeout: float = DEFAULT_REQUEST_TIMEOUT,
        environ: Mapping[str, str] | None = None,
        argv0: str | None = None,
        default_name: str | None = None,
        default_index: str | None = None,
        eager: bool = False,
    ) -> None:
        env = os.environ if environ is None else environ
        self.plugin = plugin
        self.eager = eager
        """Handlers start as soon as their request is decoded, not in a task on the event
        loop's next turn (:meth:`Endpoint.serve`): for plugins whose handlers do not need a
        task (``asyncio.timeout``, say) before they first wait."""
        handlers = discover_handlers(plugin)
        self.handlers = handlers.methods
        self.implemented_events = handlers.events
        self.identity: PluginIdentity = resolve_identity(
            name,
            index,
            environ=env,
            argv0=sys.argv[0] if argv0 is None else argv0,
            default_name=default_name,
            default_index=default_index,
        )
        self._connection = connection
        self._prelaunched_fd = None if connection is not None else _prelaunched_fd(env)
        self.socket_path = os.fspath(socket_path or DEFAULT_SOCKET_PATH)
        external = connection is None and self._prelaunched_fd is None
        if reconnect is True:
            reconnect = Backoff()
        self._backoff: Backoff | None = reconnect if external and reconnect else None
        self.redialer: Redialer | None = (
            Redialer(self.socket_path, self._backoff) if self._backoff is not None else None
        )
        """Watches the socket between dials of an external plugin (None without reconnect)."""
        self._on_close = on_close
        if registration_timeout <= 0 or request_timeout <= 0:
            raise ValueError("timeouts must be > 0")
        self._registration_timeout = registration_timeout
        self._request_timeout = request_timeout
        self._socket_used = False
        self._current: _Connection | None = None
        self._stopping = False
        self._redial_now = False
        self._stop_event = asyncio.Event()
        self._background: set[asyncio.Task[list[api_pb2.ContainerUpdate]]] = set()
        self.events: EventMask | None = None
        self.config = ""
        self.runtime_name = ""
        self.runtime_version = ""
        self.runtime_level = versions.runtime_level("", "")

    # ------------------------------------------------------------------ identity and state

    @property
    def name(self) -> str:
        """The plugin name."""
        return self.identity.name

    @property
    def index(self) -> str:
        """The two-digit plugin index."""
        return self.identity.index

    @property
    def full_name(self) -> str:
        """``NN-name``."""
        return self.identity.full_name

    @property
    def prelaunched(self) -> bool:
        """True if the runtime started this plugin (socket from ``NRI_PLUGIN_SOCKET``)."""
        return self._prelaunched_fd is not None

    @property
    def reconnects(self) -> bool:
        """True if :meth:`run` redials after the connection goes down (external plugins)."""
        return self._backoff is not None

    @property
    def registration_timeout(self) -> float:
        """Seconds; 5 until the runtime's Configure says otherwise."""
        return self._registration_timeout

    @property
    def request_timeout(self) -> float:
        """Seconds the runtime waits for each reply (and for a whole synchronization); 2 until
        the runtime's Configure says otherwise."""
        return self._request_timeout

    @property
    def connected(self) -> bool:
        """True while a configured connection to the runtime is up."""
        current = self._current
        return current is not None and current.established and not current.session.closed

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        """Connect, register and wait until the runtime has configured the plugin.

        Raises RegistrationError (with the cause) if any step fails; nothing is left open.
        """
        self._stopping = False
        await self._start_once()

    async def run(self) -> None:
        """Start, then serve until stopped.

        External plugins dial again when the runtime goes away or cannot be reached (until
        :meth:`stop`): as soon as its socket appears or is replaced, with backoff only while
        the same socket keeps refusing (:class:`~nrirp.adapters.nri.stub.redial.Redialer`).
        Pre-launched plugins and explicit connections return when the connection closes, and
        raise RegistrationError if starting fails.
        """
        self._stopping = False
        self._stop_event = asyncio.Event()
        redialer = self.redialer
        while True:
            if redialer is not None:
                redialer.dialling()
            try:
                await self._start_once()
            except RegistrationError as exc:
                if self._stopping:
                    return
                if redialer is None:
                    raise
                if await redialer.wait(self._stop_event, f"{self.full_name}: {exc}"):
                    return
                continue
            current = self._current
            assert current is not None
            await current.session.wait_closed()
            if current.hook_task is not None:
                await asyncio.gather(current.hook_task, return_exceptions=True)
            if self._stopping or redialer is None:
                return
            if self._redial_now:
                self._redial_now = False
                continue
            uptime = asyncio.get_running_loop().time() - current.up_since
            if uptime >= redialer.backoff.reset_after:
                redialer.connection_was_long()
            reason = current.session.close_reason or "closed"
            lost = f"{self.full_name}: connection to the runtime lost ({reason})"
            if await redialer.wait(self._stop_event, lost, "reconnecting"):
                return

    def stop(self) -> None:
        """Close the connection and make :meth:`run` return (idempotent)."""
        self._stopping = True
        self._stop_event.set()
        if self._current is not None:
            self._current.session.close()

    def resubscribe(self) -> bool:
        """Register again at once, so that the runtime configures the plugin anew (the events
        to subscribe to are chosen then) and synchronizes it again: an external plugin closes
        its connection and dials again without waiting. False when that cannot be done (a
        pre-launched plugin or a given connection cannot reconnect; not connected: the next
        connection subscribes anew anyway)."""
        current = self._current
        if self._backoff is None or current is None or current.session.closed:
            return False
        log.info("%s: registering again to change the events subscribed to", self.full_name)
        self._redial_now = True
        current.session.close()
        return True

    async def wait_closed(self) -> None:
        """Wait until the current connection (if any) is down and its close hook has run."""
        current = self._current
        if current is None:
            return
        await current.session.wait_closed()
        if current.hook_task is not None:
            await asyncio.gather(current.hook_task, return_exceptions=True)

    async def _start_once(self) -> None:
        current = self._current
        if current is not None and not current.session.closed:
            raise StubError(f"plugin {self.full_name} is already started")
        connection = _Connection(self)
        self._current = connection
        try:
            await self._attach(connection.session)
            await self._register(connection)
        except BaseException:
            connection.session.close()
            await connection.session.wait_closed()
            raise
        connection.established = True
        log.info(
            "%s: registered with %s %s, %s; subscribed to %s",
            self.full_name,
            self.runtime_name or "runtime",
            self.runtime_version,
            self.runtime_level,
            self.events.pretty() if self.events is not None else "nothing",
        )

    async def _attach(self, session: Session) -> None:
        if self._connection is not None or self._prelaunched_fd is not None:
            if self._socket_used:
                raise RegistrationError(
                    f"plugin {self.full_name}: its connection was already used and closed; "
                    "pre-launched plugins and given connections cannot reconnect"
                )
            self._socket_used = True
            sock = self._connection or _socket_from_fd(self._prelaunched_fd)
            try:
                await session.attach(sock)
            except OSError as exc:
                raise RegistrationError(f"cannot use the NRI connection: {exc}") from exc
            return
        try:
            await session.connect(self.socket_path)
        except OSError as exc:
            raise RegistrationError(
                f"cannot connect to the NRI socket {self.socket_path}: {exc}"
            ) from exc

    async def _register(self, connection: _Connection) -> None:
        request = api_pb2.RegisterPluginRequest(
            plugin_name=self.name,
            plugin_idx=self.index,
            NRI_version=str(versions.PLUGIN_NRI_VERSION),
        )
        timeout = self._registration_timeout
        try:
            await connection.runtime.call(
                RUNTIME_SERVICE, "RegisterPlugin", request.SerializeToString(), timeout=timeout
            )
        except TtrpcError as exc:
            configured = connection.configured
            failure = configured.exception() if configured.done() else None
            if failure is not None:  # Configure came first and failed: that is the story
                raise failure from exc
            raise RegistrationError(f"registering plugin {self.full_name} failed: {exc}") from exc
        # Configure may have arrived before the reply; the runtime sends it right after.
        try:
            async with asyncio.timeout(timeout + self._request_timeout):
                await asyncio.shield(connection.configured)
        except TimeoutError:
            raise RegistrationError(
                f"plugin {self.full_name} registered but the runtime did not configure it "
                f"within {timeout + self._request_timeout:.1f} s"
            ) from None

    async def _apply_configure(self, request: api_pb2.ConfigureRequest) -> EventMask:
        self.config = request.config
        self.runtime_name = request.runtime_name
        self.runtime_version = request.runtime_version
        if request.registration_timeout > 0:
            self._registration_timeout = request.registration_timeout / 1000
        if request.request_timeout > 0:
            self._request_timeout = request.request_timeout / 1000
        self.runtime_level = level = versions.runtime_level(
            request.runtime_name, request.runtime_version, request.NRI_version
        )
        wanted = self.implemented_events
        handler = self.handlers.get("configure")
        if handler is not None:
            result = await scoped(handler, request)  # type: ignore[arg-type]
            if result:
                wanted = EventMask(int(result))
                unhandled = wanted & ~self.implemented_events
                if unhandled:
                    raise PluginDefinitionError(
                        f"plugin {self.full_name} subscribed to events it has no handler for: "
                        f"{EventMask(unhandled).pretty()}"
                    )
        events = wanted & level.valid_events
        dropped = wanted & ~level.valid_events
        if dropped:
            log.info(
                "%s: runtime %s %s (%s) cannot deliver %s; not subscribing to them",
                self.full_name,
                request.runtime_name,
                request.runtime_version,
                level,
                EventMask(dropped).pretty(),
            )
        if not events:
            raise RegistrationError(
                f"plugin {self.full_name} handles only {EventMask(wanted).pretty()}, which "
                f"runtime {request.runtime_name} {request.runtime_version} ({level}) cannot "
                "deliver"
            )
        self.events = EventMask(events)
        return self.events

    def _connection_lost(self, reason: BaseException | None) -> asyncio.Task[None] | None:
        log.info("%s: connection to the runtime closed: %s", self.full_name, reason or "locally")
        hook = self._on_close
        if hook is None:
            return None
        return asyncio.get_running_loop().create_task(self._run_hook(hook, reason))

    async def _run_hook(self, hook: CloseHook, reason: BaseException | None) -> None:
        try:
            result = hook(reason)
            if result is not None:
                await result
        except Exception:
            log.exception("%s: on_close hook failed", self.full_name)

    # ------------------------------------------------------------------ updates

    async def update_containers(
        self,
        updates: Iterable[api_pb2.ContainerUpdate],
        evictions: Iterable[api_pb2.ContainerEviction] = (),
        *,
        timeout: float | None = None,
    ) -> list[api_pb2.ContainerUpdate]:
        """Ask the runtime to update running containers; returns the updates that failed.

        Must not be awaited while an event handler runs (also not from tasks the handler
        started, until it has replied): that would deadlock the runtime, so it raises
        UpdateFromHandlerError. Use :meth:`schedule_update_containers` there. ``timeout``
        bounds the wait in seconds (None: as long as the connection lives). Raises
        NotConnectedError without a connection, TtrpcError if the runtime fails the call
        (ConnectionClosed if the connection goes down meanwhile).
        """
        if active_scope() is not None:
            raise UpdateFromHandlerError(
                "stub.update_containers() awaited while an NRI event handler is running: the "
                "runtime holds its lock until the handler replies, so this would deadlock. Use "
                "stub.schedule_update_containers(), which sends the updates after the reply."
            )
        return await self._send_updates(self._current, list(updates), list(evictions), timeout)

    def schedule_update_containers(
        self,
        updates: Iterable[api_pb2.ContainerUpdate],
        evictions: Iterable[api_pb2.ContainerEviction] = (),
        *,
        timeout: float | None = None,
    ) -> asyncio.Future[list[api_pb2.ContainerUpdate]]:
        """Send updates without waiting; safe anywhere. Inside an event handler they are sent
        after the handler's reply. Returns a future of the failed updates (failures are also
        logged; awaiting the future inside the handler is refused the same way). The updates go
        to the connection current at scheduling: if it is gone by then, the future fails with
        NotConnectedError rather than sending stale updates to a new connection."""
        updates, evictions = list(updates), list(evictions)
        scope = active_scope()
        loop = asyncio.get_running_loop()
        current = self._current
        if scope is None:
            coro = self._send_updates(current, updates, evictions, timeout)
        else:
            coro = self._send_after(scope.replied(), current, updates, evictions, timeout)
        task = _GuardedTask(coro, loop=loop)
        self._background.add(task)
        task.add_done_callback(self._update_done)
        return task

    async def _send_after(
        self,
        replied: asyncio.Future[None],
        current: _Connection | None,
        updates: list[api_pb2.ContainerUpdate],
        evictions: list[api_pb2.ContainerEviction],
        timeout: float | None,
    ) -> list[api_pb2.ContainerUpdate]:
        await replied
        return await self._send_updates(current, updates, evictions, timeout)

    def _update_done(self, task: asyncio.Task[list[api_pb2.ContainerUpdate]]) -> None:
        self._background.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            log.warning("%s: scheduled UpdateContainers failed: %s", self.full_name, error)
        elif task.result():
            log.warning(
                "%s: runtime failed %d of the scheduled container updates",
                self.full_name,
                len(task.result()),
            )

    async def _send_updates(
        self,
        current: _Connection | None,
        updates: list[api_pb2.ContainerUpdate],
        evictions: list[api_pb2.ContainerEviction],
        timeout: float | None,
    ) -> list[api_pb2.ContainerUpdate]:
        if current is None or current.session.closed:
            raise NotConnectedError(f"plugin {self.full_name} is not connected to a runtime")
        request = api_pb2.UpdateContainersRequest(update=updates, evict=evictions)
        reply = await current.runtime.call(
            RUNTIME_SERVICE, "UpdateContainers", request.SerializeToString(), timeout=timeout
        )
        return list(api_pb2.UpdateContainersResponse.FromString(reply).failed)


class _GuardedTask(asyncio.Task[list[api_pb2.ContainerUpdate]]):
    """A scheduled update: a task that refuses to be awaited inside an event handler."""

    def __await__(self):  # type: ignore[no-untyped-def]
        if active_scope() is not None:
            raise UpdateFromHandlerError(
                "awaiting a scheduled UpdateContainers inside an NRI event handler would "
                "deadlock the runtime; add a done callback, or await it once the handler replied"
            )
        return super().__await__()

    __iter__ = __await__


def _fail(future: asyncio.Future[EventMask], error: BaseException) -> None:
    if not future.done():
        future.set_exception(error)
        future.exception()  # mark retrieved: start() may already have given up waiting


def _prelaunched_fd(env: Mapping[str, str]) -> int | None:
    value = env.get(PLUGIN_SOCKET_ENV)
    if not value:
        return None
    try:
        fd = int(value)
    except ValueError:
        fd = -1
    if fd < 0:
        raise StubError(f"invalid {PLUGIN_SOCKET_ENV}={value!r}: expected a file descriptor number")
    return fd


def _socket_from_fd(fd: int | None) -> socket.socket:
    assert fd is not None
    try:
        sock = socket.socket(fileno=fd)
    except OSError as exc:
        raise RegistrationError(f"{PLUGIN_SOCKET_ENV}={fd} is not a usable socket: {exc}") from exc
    if sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise RegistrationError(f"{PLUGIN_SOCKET_ENV}={fd} is not a stream socket")
    return sock
