"""One connected plugin as the runtime sees it: identity, subscription, and calls to it."""

from __future__ import annotations

import asyncio
import enum
import logging
import socket
import struct
from typing import TypeVar

import attrs
from google.protobuf.message import DecodeError, Message

from nrirp.adapters.nri.transport import (
    PLUGIN_SERVICE_CONN,
    ConnectionClosed,
    OversizedMessage,
    Session,
    StatusCode,
    TtrpcError,
)
from nrirp.simruntime.journal import CallOutcome, Journal, PluginEventKind

log = logging.getLogger("nrirp.nri.simruntime")

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"

R = TypeVar("R", bound=Message)


class PluginKind(enum.Enum):
    """How the plugin reached the runtime."""

    EXTERNAL = "external"
    """It connected to the socket (or a socketpair handed out by the runtime)."""
    PRELAUNCHED = "pre-launched"
    """The runtime started it with a pre-connected socket on fd 3."""


class PluginState(enum.Enum):
    """Where a plugin connection is in its life."""

    CONNECTED = "connected"
    REGISTERED = "registered"
    CONFIGURED = "configured"
    READY = "ready"
    """Receives events."""
    STALE = "stale"
    """Synchronization failed on a runtime older than v0.7: connected, but never used."""
    CLOSED = "closed"


class CallError(Exception):
    """A call to a plugin failed. ``fatal``: timeout or lost connection (the plugin is dropped);
    otherwise the plugin's own error status (``code``, ``message``)."""

    def __init__(self, code: int, message: str, *, fatal: bool) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.fatal = fatal


@attrs.frozen
class PluginInfo:
    """A snapshot of one plugin connection."""

    name: str
    """``NN-base``, or ``??-plugin`` before registration (as Go's qualified name)."""
    index: str
    base: str
    kind: PluginKind
    state: PluginState
    events: int
    """The event mask in force after Configure (0 before)."""
    pid: int | None
    nri_version: str
    """The NRI version the plugin registered with (v0.12+ stubs send it), or empty."""
    state_change_fallback: bool
    """True once the plugin answered UNIMPLEMENTED to a dedicated event RPC."""
    close_reason: str | None


class PluginConnection:
    """The runtime's side of one plugin: its session, identity and event subscription."""

    def __init__(
        self,
        session: Session,
        journal: Journal,
        kind: PluginKind,
        *,
        index: str = "",
        base: str = "",
        config: str = "",
    ) -> None:
        self.session = session
        self.journal = journal
        self.kind = kind
        self.index = index
        self.base = base
        self.config = config
        self.events = 0
        self.state = PluginState.CONNECTED
        self.nri_version = ""
        self.state_change_fallback = False
        self.close_reason: str | None = None
        self.process: asyncio.subprocess.Process | None = None
        self.pid: int | None = None
        self.turn = asyncio.Event()
        """Set when the runtime starts serving this connection (Go unblocks the mux then)."""
        self.registration: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        # nobody awaits it when the runtime closes first: do not warn about it then
        self.registration.add_done_callback(_consume)
        self.endpoint = session.open(PLUGIN_SERVICE_CONN)
        session.add_close_callback(self._session_down)

    @property
    def name(self) -> str:
        return f"{self.index or '??'}-{self.base or 'plugin'}"

    @property
    def closed(self) -> bool:
        return self.state is PluginState.CLOSED

    def info(self) -> PluginInfo:
        return PluginInfo(
            self.name,
            self.index,
            self.base,
            self.kind,
            self.state,
            self.events,
            self.pid,
            self.nri_version,
            self.state_change_fallback,
            self.close_reason,
        )

    def subscribed(self, event: int) -> bool:
        """True when the plugin's mask holds ``event``."""
        return bool(self.events & (1 << (event - 1)))

    def read_peer_pid(self) -> None:
        """Record the peer's pid from SO_PEERCRED, as Go does for its log lines."""
        sock = self.session.get_extra_info("socket")
        if sock is None:
            return
        try:
            creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        except OSError:
            return
        self.pid = struct.unpack("3i", creds)[0]

    def advance(self, state: PluginState, kind: PluginEventKind, detail: str = "") -> None:
        """Move to ``state`` and record the step."""
        self.state = state
        self.journal.event(kind, self.name, detail, asyncio.get_running_loop().time())

    def close(self, reason: str) -> None:
        """Drop the connection (idempotent); the first reason is kept."""
        if self.close_reason is None:
            self.close_reason = reason
        self.session.close()
        self._mark_closed()

    def _session_down(self, reason: BaseException | None) -> None:
        if self.close_reason is None:
            self.close_reason = "connection closed" if reason is None else str(reason)
        self._mark_closed()
        if not self.registration.done():
            self.registration.set_exception(ConnectionClosed("connection closed"))

    def _mark_closed(self) -> None:
        if self.state is PluginState.CLOSED:
            return
        self.state = PluginState.CLOSED
        log.info("plugin %s: connection closed: %s", self.name, self.close_reason)
        self.journal.event(
            PluginEventKind.CLOSED,
            self.name,
            self.close_reason or "",
            asyncio.get_running_loop().time(),
        )

    async def call(
        self,
        method: str,
        request: Message,
        reply_type: type[R],
        *,
        deadline: float,
        event: str | None = None,
        size_limit: int | None = None,
        fallback_on_unimplemented: bool = False,
    ) -> R:
        """Call ``method`` with ``request`` before ``deadline`` (loop clock) and parse the reply.

        Raises :class:`CallError`; fatal errors (deadline passed, connection lost) close the
        plugin first, as Go's runtime does. :class:`OversizedMessage` passes through (raised
        before sending; ``size_limit`` lowers the 4 MiB limit, to force sync splitting).
        """
        loop = asyncio.get_running_loop()
        call = _Call(self, method, event, request, loop.time())
        payload = request.SerializeToString()
        if size_limit is not None and len(payload) > size_limit:
            error = OversizedMessage(len(payload), size_limit)
            call.done(CallOutcome.ERROR, error)
            raise error
        try:
            if self.closed:
                raise ConnectionClosed("ttrpc: closed")
            timeout = deadline - call.started
            if timeout <= 0:
                raise TtrpcError(StatusCode.DEADLINE_EXCEEDED, "context deadline exceeded")
            raw = await self.endpoint.call(PLUGIN_SERVICE, method, payload, timeout=timeout)
        except OversizedMessage as exc:
            call.done(CallOutcome.ERROR, exc)
            raise
        except TtrpcError as exc:
            timed_out = exc.code == StatusCode.DEADLINE_EXCEEDED and loop.time() >= deadline
            fatal = timed_out or isinstance(exc, ConnectionClosed)
            if fatal:
                outcome = CallOutcome.FATAL
            elif fallback_on_unimplemented and exc.code == StatusCode.UNIMPLEMENTED:
                outcome = CallOutcome.FALLBACK
            else:
                outcome = CallOutcome.ERROR
            call.done(outcome, exc)
            if fatal:
                self.close(f"failed to handle {event or method}: {exc.message}")
            raise CallError(int(exc.code), exc.message, fatal=fatal) from exc
        try:
            reply = reply_type.FromString(raw)
        except DecodeError as exc:
            failure = TtrpcError(
                StatusCode.INTERNAL, f"failed to unmarshal {reply_type.__name__}: {exc}"
            )
            call.done(CallOutcome.ERROR, failure)
            raise CallError(int(failure.code), failure.message, fatal=False) from exc
        call.done(CallOutcome.OK, reply=reply)
        return reply


def _consume(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()


@attrs.define
class _Call:
    """Records one outgoing call in the journal when it ends."""

    plugin: PluginConnection
    method: str
    event: str | None
    request: Message
    started: float

    def done(
        self, outcome: CallOutcome, error: TtrpcError | None = None, reply: Message | None = None
    ) -> None:
        self.plugin.journal.call(
            self.plugin.name,
            self.method,
            self.event,
            outcome,
            self.started,
            asyncio.get_running_loop().time() - self.started,
            code=None if error is None else int(error.code),
            error=None if error is None else error.message,
            request=self.request,
            reply=reply,
        )
