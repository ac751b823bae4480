"""The asyncio protocol under a session: input to the demultiplexer, frames out, flow control."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, cast

from nrirp.adapters.nri.transport.decoding import MuxDecoder
from nrirp.adapters.nri.transport.errors import ConnectionClosed, ProtocolError

log = logging.getLogger("nrirp.nri.transport.mux")

READ_BUFFER_SIZE = 256 * 1024
"""One receive buffer per session, reused for every read (no allocation per read)."""

CLOSE_GRACE = 2.0
"""Seconds a local close waits for buffered output to drain before dropping the connection."""


class Trunk(asyncio.BufferedProtocol):
    """Feeds received bytes to a :class:`MuxDecoder` and writes whole frame sequences.

    Input is received into one preallocated buffer (``recv_into``) and decoded in place; nothing
    downstream keeps views of it past the call. Besides saving a copy, this avoids CPython's
    ``recv(256 KiB)`` allocating (mmap) and shrinking a fresh buffer on every read, which
    dominated the round trip of small messages.

    Lifecycle events go to ``on_down(reason)`` (peer EOF, reset, protocol or internal error; called
    at most once) and ``on_lost()`` (the socket is closed). Honours ``pause_writing`` /
    ``resume_writing``: senders check :attr:`writable` and await :meth:`wait_writable`.
    """

    def __init__(
        self,
        decoder: MuxDecoder,
        on_down: Callable[[BaseException], None],
        on_lost: Callable[[], None],
    ) -> None:
        self._decoder = decoder
        self._buffer = memoryview(bytearray(READ_BUFFER_SIZE))
        self._on_down = on_down
        self._on_lost = on_lost
        self.transport: asyncio.Transport | None = None
        self.writable = True
        self._waiters: list[asyncio.Future[None]] = []
        self._shut_down: ConnectionClosed | None = None
        self._lost = False
        self._abort_timer: asyncio.TimerHandle | None = None
        self.made = asyncio.Event()
        """Set once the transport is attached (some loops, e.g. uvloop, do it after returning)."""

    # ------------------------------------------------------------------ asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self.made.set()
        if self._shut_down is not None:  # closed before the socket was handed over
            self.transport.abort()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._buffer

    def buffer_updated(self, nbytes: int) -> None:
        if self._shut_down is not None:
            return
        try:
            self._decoder.feed(self._buffer[:nbytes])
        except ProtocolError as exc:
            log.warning("protocol error, dropping the connection: %s", exc)
            self._on_down(exc)
        except Exception as exc:
            log.exception("internal error while handling input, dropping the connection")
            self._on_down(exc)

    def eof_received(self) -> bool | None:
        self._on_down(ConnectionClosed("ttrpc: peer closed the connection"))
        return None  # let the transport close itself

    def connection_lost(self, exc: Exception | None) -> None:
        self._lost = True
        if self._abort_timer is not None:
            self._abort_timer.cancel()
            self._abort_timer = None
        if self._shut_down is None:
            self._on_down(exc if exc is not None else ConnectionClosed("ttrpc: connection lost"))
        self._wake(self._shut_down or ConnectionClosed("ttrpc: connection lost"))
        self.transport = None
        self.made.set()
        self._on_lost()

    def pause_writing(self) -> None:
        self.writable = False

    def resume_writing(self) -> None:
        self.writable = True
        self._wake(None)

    # ------------------------------------------------------------------ used by the session

    @property
    def lost(self) -> bool:
        """True once the socket is closed."""
        return self._lost

    def write(self, data: bytes) -> int:
        """Queue ``data`` and return the transport's buffered byte count afterwards."""
        transport = self.transport
        if transport is None:
            raise (self._shut_down or ConnectionClosed("ttrpc: not connected")).clone()
        transport.write(data)
        return 0 if self.writable else transport.get_write_buffer_size()

    async def wait_writable(self) -> None:
        """Return once the transport accepts more output; raise ConnectionClosed if it dies."""
        while not self.writable:
            if self._shut_down is not None:
                raise self._shut_down.clone()
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            finally:
                if waiter in self._waiters:
                    self._waiters.remove(waiter)

    def shut_down(self, error: ConnectionClosed, graceful: bool) -> None:
        """Stop: wake senders with ``error``; close (flushing, if ``graceful``) or abort."""
        if self._shut_down is not None:
            return
        self._shut_down = error
        self.writable = False
        self._wake(error)
        transport = self.transport
        if transport is None or self._lost:
            return
        if not graceful:
            transport.abort()
            return
        transport.close()
        if transport.get_write_buffer_size():
            loop = asyncio.get_running_loop()
            self._abort_timer = loop.call_later(CLOSE_GRACE, transport.abort)

    def extra_info(self, name: str, default: Any = None) -> Any:
        """``transport.get_extra_info`` (e.g. ``"socket"``, ``"peername"``)."""
        if self.transport is None:
            return default
        return self.transport.get_extra_info(name, default)

    def _wake(self, error: ConnectionClosed | None) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if waiter.done():
                continue
            if error is None:
                waiter.set_result(None)
            else:
                waiter.set_exception(error.clone())
