"""A session: one connected socket carrying logical connections, each with a ttRPC endpoint."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import socket
from collections.abc import Callable, Coroutine, Generator, Mapping
from typing import Any

from nrirp.adapters.nri.transport.decoding import ChunkSink, MuxDecoder
from nrirp.adapters.nri.transport.errors import ConnectionClosed, ProtocolError
from nrirp.adapters.nri.transport.framing import MAX_CONN_ID, MAX_MESSAGE_SIZE, RESERVED_CONN
from nrirp.adapters.nri.transport.mux import Trunk
from nrirp.adapters.nri.transport.ttrpc import Endpoint

log = logging.getLogger("nrirp.nri.transport.session")

CloseCallback = Callable[[BaseException | None], None]
"""Called once when the session goes down, with the reason (None after a local :meth:`close`)."""

DEFAULT_MAX_INFLIGHT = 1024
DEFAULT_MAX_WRITE_BUFFER = 64 << 20


class Session:
    """One NRI socket: a mux of logical connections, each served by an :class:`Endpoint`.

    Open the connections (and register services on them) first, then attach the socket with
    :meth:`connect` (a path), :meth:`attach` (a connected socket, e.g. fd 3 of a pre-launched
    plugin) or through a :class:`~nrirp.adapters.nri.transport.listener.Listener`; frames for
    connections that are not open are dropped, as the Go mux does.

    When the session goes down (local :meth:`close`, peer EOF or reset, protocol error) pending
    calls fail with :class:`ConnectionClosed`, running handlers are cancelled and the close
    callbacks run once. Limits: ``max_inflight`` concurrently running request handlers (beyond
    that requests get RESOURCE_EXHAUSTED) and ``max_write_buffer`` bytes queued for a peer that
    does not read (beyond that the session is dropped).
    """

    def __init__(
        self,
        *,
        on_close: CloseCallback | None = None,
        max_inflight: int = DEFAULT_MAX_INFLIGHT,
        max_write_buffer: int = DEFAULT_MAX_WRITE_BUFFER,
    ) -> None:
        if max_write_buffer < 2 * MAX_MESSAGE_SIZE:
            raise ValueError(f"max_write_buffer must be at least {2 * MAX_MESSAGE_SIZE}")
        self._max_inflight = max_inflight
        self._max_write_buffer = max_write_buffer
        self._endpoints: dict[int, Endpoint] = {}
        self._sinks: dict[int, ChunkSink] = {}
        self._trunk: Trunk | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._error: ConnectionClosed | None = None
        self._reason: BaseException | None = None
        self._callbacks: list[CloseCallback] = [] if on_close is None else [on_close]
        self._gone = asyncio.Event()

    # ------------------------------------------------------------------ logical connections

    def open(self, conn_id: int) -> Endpoint:
        """Open logical connection ``conn_id`` and return its ttRPC endpoint."""
        if not RESERVED_CONN < conn_id <= MAX_CONN_ID:
            raise ValueError(f"connection id {conn_id} is reserved or out of range")
        if conn_id in self._endpoints:
            raise ValueError(f"connection {conn_id} is already open")
        endpoint = Endpoint(conn_id, self)
        self._endpoints[conn_id] = endpoint
        self._sinks[conn_id] = endpoint.decoder.feed
        return endpoint

    @property
    def endpoints(self) -> Mapping[int, Endpoint]:
        """The open logical connections by id."""
        return self._endpoints

    # ------------------------------------------------------------------ attaching a socket

    async def connect(self, path: str | os.PathLike[str]) -> None:
        """Connect to the unix socket at ``path`` (an external plugin dialling the runtime)."""
        trunk = self._new_trunk()
        loop = asyncio.get_running_loop()
        try:
            await loop.create_unix_connection(lambda: trunk, os.fspath(path))
            await trunk.made.wait()
        except BaseException:
            self._detach()
            raise

    async def attach(self, sock: socket.socket) -> None:
        """Run over an already connected stream socket; the session takes ownership of it."""
        trunk = self._new_trunk()
        loop = asyncio.get_running_loop()
        try:
            await loop.connect_accepted_socket(lambda: trunk, sock)
            await trunk.made.wait()
        except BaseException:
            self._detach()
            raise

    def make_protocol(self) -> asyncio.BufferedProtocol:
        """Return the asyncio protocol for this session's socket (for servers); once only."""
        return self._new_trunk()

    def _new_trunk(self) -> Trunk:
        if self._error is not None:
            raise self._error.clone()
        if self._trunk is not None:
            raise RuntimeError("session is already attached to a socket")
        self._trunk = Trunk(MuxDecoder(self._sinks), self._down, self._gone.set)
        return self._trunk

    def _detach(self) -> None:
        """Forget a trunk whose socket never came up, so the session can be attached again."""
        self._trunk = None
        if self._error is not None:
            self._gone.set()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """Transport information, e.g. ``"socket"`` (to read SO_PEERCRED) or ``"peername"``."""
        return default if self._trunk is None else self._trunk.extra_info(name, default)

    # ------------------------------------------------------------------ closing

    def add_close_callback(self, callback: CloseCallback) -> None:
        """Register ``callback(reason)``; it runs at once if the session is already down."""
        if self._error is not None:
            _run_callback(callback, self._reason)
        else:
            self._callbacks.append(callback)

    @property
    def closed(self) -> bool:
        """True once the session went down (for whatever reason)."""
        return self._error is not None

    @property
    def close_reason(self) -> BaseException | None:
        """Why the session went down; None while open or after a local close."""
        return self._reason

    def close(self) -> None:
        """Close the session (idempotent): buffered output is flushed, then the socket closed."""
        self._shut_down(None)

    async def wait_closed(self) -> None:
        """Wait until the session is down, its socket closed and its handler tasks finished."""
        await self._gone.wait()
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _down(self, reason: BaseException) -> None:
        self._shut_down(reason)

    def _shut_down(self, reason: BaseException | None) -> None:
        if self._error is not None:
            return
        if reason is None:
            error = ConnectionClosed("ttrpc: closed")
        elif isinstance(reason, ConnectionClosed):
            error = reason
        else:
            error = ConnectionClosed(f"ttrpc: closed: {reason}")
            error.__cause__ = reason
        self._error = error
        self._reason = reason
        if reason is not None:
            log.info("session down: %s", reason)
        for endpoint in self._endpoints.values():
            endpoint.fail_pending(error)
        for task in self._tasks:
            task.cancel()
        trunk = self._trunk
        if trunk is None:
            self._gone.set()
        else:
            trunk.shut_down(error, graceful=reason is None)
            if trunk.transport is None and trunk.lost:
                self._gone.set()
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            _run_callback(callback, reason)

    # ------------------------------------------------------------------ Link (used by endpoints)

    def send(self, data: bytes) -> None:
        """Write frames; drop the session if the peer lets output pile up."""
        if self._error is not None:
            raise self._error.clone()
        trunk = self._trunk
        if trunk is None:
            raise ConnectionClosed("ttrpc: not connected")
        if trunk.write(data) > self._max_write_buffer:
            self._shut_down(
                ProtocolError(f"peer is not reading: over {self._max_write_buffer} bytes queued")
            )

    @property
    def writable(self) -> bool:
        """False while the transport's output buffer is above its high-water mark."""
        trunk = self._trunk
        return trunk is None or trunk.writable

    async def wait_writable(self) -> None:
        """Wait until output may continue; raise ConnectionClosed if the session goes down."""
        if self._error is not None:
            raise self._error.clone()
        if self._trunk is not None:
            await self._trunk.wait_writable()

    def spawn(self, coro: Coroutine[Any, Any, None], eager: bool = False) -> bool:
        """Run a request handler as a tracked task, unless ``max_inflight`` are running.

        ``eager``: run it at once, in a context of its own (as a task would), until it
        returns or has to wait; only then does it go on as a task (in that context)."""
        if len(self._tasks) >= self._max_inflight or self._error is not None:
            return False
        loop = asyncio.get_running_loop()
        if eager:
            context = contextvars.copy_context()
            try:
                waiting = context.run(coro.send, None)
            except StopIteration:
                return True
            task = loop.create_task(_Resumed(coro, waiting), context=context)
        else:
            task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        if self._error is not None:  # the handler's eager part brought the session down
            task.cancel()
        return True

    def closed_error(self) -> ConnectionClosed | None:
        """The error calls fail with once the session is down, else None."""
        return self._error

    @property
    def buffered_output(self) -> int:
        """Bytes queued in the transport, not yet accepted by the socket."""
        transport = None if self._trunk is None else self._trunk.transport
        return 0 if transport is None else transport.get_write_buffer_size()

    @property
    def running_handlers(self) -> int:
        """Number of request handler tasks still running."""
        return len(self._tasks)


class _Resumed(Coroutine[Any, Any, None]):
    """What a task drives for a handler started eagerly that then had to wait: its first
    ``send`` hands the task what the handler yielded (``waiting``); every later ``send``, and
    every ``throw`` (also one before the first step: a task cancelled at once must cancel
    the handler, not drop it mid-body) and ``close``, go on to the handler itself."""

    __slots__ = ("_coro", "_started", "_waiting")

    def __init__(self, coro: Coroutine[Any, Any, None], waiting: Any) -> None:
        self._coro = coro
        self._waiting = waiting
        self._started = False

    def send(self, value: Any) -> Any:
        if not self._started:
            self._started = True
            waiting, self._waiting = self._waiting, None
            return waiting
        return self._coro.send(value)

    def throw(self, typ: Any, val: Any = None, tb: Any = None) -> Any:
        self._started = True
        self._waiting = None
        return self._coro.throw(typ if val is None else val)

    def close(self) -> None:
        self._coro.close()

    def __await__(self) -> Generator[Any, None, None]:
        raise TypeError("a resumed handler is driven by its task only")

    def __repr__(self) -> str:
        return f"<resumed {self._coro!r}>"


def _run_callback(callback: CloseCallback, reason: BaseException | None) -> None:
    try:
        callback(reason)
    except Exception:
        log.exception("close callback %r failed", callback)
