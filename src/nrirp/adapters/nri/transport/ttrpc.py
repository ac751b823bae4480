"""ttRPC over one logical mux connection: serve registered services and/or call the peer's."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol

import attrs

from nrirp.adapters.nri.transport.decoding import TtrpcDecoder
from nrirp.adapters.nri.transport.envelope import (
    DecodeError,
    decode_request,
    decode_response,
    encode_error_response,
    encode_request,
    encode_response,
)
from nrirp.adapters.nri.transport.errors import (
    ConnectionClosed,
    OversizedMessage,
    RequestRefused,
    StatusCode,
    TtrpcError,
)
from nrirp.adapters.nri.transport.framing import (
    MAX_MESSAGE_SIZE,
    MAX_STREAM_ID,
    Buffer,
    MessageType,
    frame_message,
)

log = logging.getLogger("nrirp.nri.transport.ttrpc")

_REQUEST = int(MessageType.REQUEST)
_RESPONSE = int(MessageType.RESPONSE)


EAGER_MAX_BYTES = 1 << 16
"""The largest request an eager service's handler starts at once: a bigger one (a Synchronize
of hundreds of containers) starts in a task on the loop's next turn, once the bytes read for
it are let go (started at once it kept them, 4 MiB and more, while it ran: under gomockrt a
Synchronize of 900 containers peaked 7.6 MiB higher and took longer)."""


@attrs.frozen
class CallContext:
    """What a server handler knows about the call besides its payload."""

    service: str
    method: str
    stream_id: int
    deadline: float | None
    """Caller's deadline on the event loop clock (``loop.time()``), from ``timeout_nano``."""
    metadata: tuple[tuple[str, str], ...] = ()

    def time_remaining(self) -> float | None:
        """Seconds left until the caller gives up (may be negative), or None without deadline."""
        if self.deadline is None:
            return None
        return self.deadline - asyncio.get_running_loop().time()


Handler = Callable[[bytes, CallContext], Awaitable[bytes]]
"""A unary method: gets the request payload, returns the reply payload or raises TtrpcError."""


class Link(Protocol):
    """What an endpoint needs from its session (implemented by :class:`Session`)."""

    def send(self, data: bytes) -> None:
        """Write whole frames at once; raise :class:`ConnectionClosed` if the session is down."""
        ...

    @property
    def writable(self) -> bool:
        """False while the transport asked us to stop writing (its buffer is above high water)."""
        ...

    async def wait_writable(self) -> None:
        """Return when writing may continue; raise :class:`ConnectionClosed` if the session dies."""
        ...

    def spawn(self, coro: Coroutine[Any, Any, None], eager: bool = False) -> bool:
        """Run a request handler as a tracked task; False if the in-flight limit is reached.
        ``eager``: run it at once, a task only if it has to wait."""
        ...

    def closed_error(self) -> ConnectionClosed | None:
        """The error calls fail with, or None while the session is usable."""
        ...


class Endpoint:
    """ttRPC endpoint on one logical connection of a session.

    As server it dispatches requests to the services registered with :meth:`serve`, each in its
    own task (or started at once, for an eager service); as client it issues calls with odd,
    strictly increasing stream ids and matches replies by stream id. Both roles may be used on
    the same connection.
    """

    def __init__(self, conn_id: int, link: Link) -> None:
        self.conn_id = conn_id
        self._link = link
        self._services: dict[str, dict[str, Handler]] = {}
        self._eager: set[str] = set()
        self._after_reply: dict[str, Callable[[], None]] = {}
        self._pending: dict[int, asyncio.Future[bytes]] = {}
        self._next_stream_id = 1
        self._last_peer_stream_id = 0
        self.decoder = TtrpcDecoder(self._on_message, self._on_oversized)

    # ------------------------------------------------------------------ server side

    def serve(
        self,
        service: str,
        methods: Mapping[str, Handler],
        *,
        eager: bool = False,
        after_reply: Callable[[], None] | None = None,
    ) -> None:
        """Serve ``service`` with the given ``{method: handler}`` table.

        ``eager``: a request's handler starts at once, inside the callback that decoded it (a
        task is made only if it has to wait for something), instead of in a task the event
        loop starts on its next turn: a task and a turn of the loop less per request. Its
        handlers must not need to run in a task (``asyncio.timeout`` does, until they first
        wait) and must be fine with running before the rest of the bytes read at once are
        decoded. Requests over :data:`EAGER_MAX_BYTES` start in a task all the same. (Needing
        a task: ``asyncio.timeout``, ``asyncio.current_task()``, and on Python 3.12
        ``asyncio.wait_for`` and ``TaskGroup``.)

        ``after_reply``: called after each reply of the service was handed to the connection
        (written to the socket when it takes it at once), for work that need not delay the
        reply; it must not raise."""
        if service in self._services:
            raise ValueError(f"service {service!r} is already served on connection {self.conn_id}")
        self._services[service] = dict(methods)
        if eager:
            self._eager.add(service)
        if after_reply is not None:
            self._after_reply[service] = after_reply

    @property
    def services(self) -> Mapping[str, Mapping[str, Handler]]:
        """The served services and their method tables."""
        return self._services

    # ------------------------------------------------------------------ client side

    async def call(
        self,
        service: str,
        method: str,
        payload: bytes = b"",
        *,
        timeout: float | None = None,
        metadata: Iterable[tuple[str, str]] = (),
    ) -> bytes:
        """Call ``service/method`` on the peer and return the reply payload.

        ``timeout`` (seconds) is sent as the request's deadline and enforced locally. Raises
        :class:`TtrpcError` for error statuses (DEADLINE_EXCEEDED on timeout, RESOURCE_EXHAUSTED as
        :class:`OversizedMessage` for requests above 4 MiB, refused before anything is written) and
        :class:`ConnectionClosed` when the session is or goes down.
        """
        link = self._link
        error = link.closed_error()
        if error is not None:
            raise error.clone()
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        while not link.writable:
            await self._wait_writable(deadline)
        timeout_nano = 0
        if deadline is not None:
            left = deadline - loop.time()
            if left <= 0:
                raise _deadline_exceeded()
            timeout_nano = max(1, int(left * 1e9))
        parts = encode_request(service, method, payload, timeout_nano, metadata)
        stream_id = self._next_stream_id
        if stream_id > MAX_STREAM_ID:
            raise TtrpcError(StatusCode.RESOURCE_EXHAUSTED, "ttrpc: stream ids exhausted")
        frames = frame_message(self.conn_id, stream_id, _REQUEST, 0, parts)
        self._next_stream_id = stream_id + 2
        future: asyncio.Future[bytes] = loop.create_future()
        self._pending[stream_id] = future
        timer = None
        try:
            link.send(frames)
            if deadline is not None:
                timer = loop.call_at(deadline, self._expire, stream_id)
            return await future
        finally:
            if timer is not None:
                timer.cancel()
            self._pending.pop(stream_id, None)

    async def _wait_writable(self, deadline: float | None) -> None:
        if deadline is None:
            await self._link.wait_writable()
            return
        try:
            async with asyncio.timeout_at(deadline):
                await self._link.wait_writable()
        except TimeoutError:
            raise _deadline_exceeded() from None

    def _expire(self, stream_id: int) -> None:
        future = self._pending.pop(stream_id, None)
        if future is not None and not future.done():
            future.set_exception(_deadline_exceeded())

    @property
    def pending_calls(self) -> int:
        """Number of calls waiting for a reply."""
        return len(self._pending)

    def fail_pending(self, error: ConnectionClosed) -> None:
        """Fail every pending call with a copy of ``error`` (used when the session goes down)."""
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(error.clone())

    # ------------------------------------------------------------------ inbound messages

    def _on_message(self, stream_id: int, msg_type: int, flags: int, data: memoryview) -> None:
        if msg_type == _RESPONSE:
            self._on_response(stream_id, data)
        elif msg_type == _REQUEST:
            self._on_request(stream_id, data)
        elif log.isEnabledFor(logging.DEBUG):
            log.debug(
                "conn %d: ignoring message type %d on stream %d (%d bytes)",
                self.conn_id,
                msg_type,
                stream_id,
                len(data),
            )

    def _on_response(self, stream_id: int, data: memoryview) -> None:
        future = self._pending.pop(stream_id, None)
        if future is None or future.done():
            log.debug("conn %d: dropping reply for unknown stream %d", self.conn_id, stream_id)
            return
        if not data:
            future.set_result(b"")
            return
        try:
            response = decode_response(data)
        except DecodeError as exc:
            future.set_exception(
                TtrpcError(StatusCode.INTERNAL, f"ttrpc: undecodable response: {exc}")
            )
            return
        status = response.status
        if status.code:
            future.set_exception(TtrpcError(status.code, status.message))
        else:
            future.set_result(response.payload)

    def _on_request(self, stream_id: int, data: memoryview) -> None:
        if not stream_id & 1:
            self._reply_status(
                stream_id,
                StatusCode.INVALID_ARGUMENT,
                "StreamID must be odd for client initiated streams",
            )
            return
        if stream_id <= self._last_peer_stream_id:
            self._reply_status(
                stream_id,
                StatusCode.INVALID_ARGUMENT,
                "StreamID cannot be re-used and must increment",
            )
            return
        self._last_peer_stream_id = stream_id
        try:
            request = decode_request(data)
        except DecodeError as exc:
            self._reply_status(
                stream_id, StatusCode.INVALID_ARGUMENT, f"unmarshal request error: {exc}"
            )
            return
        methods = self._services.get(request.service)
        if methods is None:
            self._reply_status(stream_id, StatusCode.UNIMPLEMENTED, f"service {request.service}")
            return
        handler = methods.get(request.method)
        if handler is None:
            self._reply_status(stream_id, StatusCode.UNIMPLEMENTED, f"method {request.method}")
            return
        timeout_nano = request.timeout_nano
        deadline = (
            asyncio.get_running_loop().time() + timeout_nano / 1e9 if timeout_nano > 0 else None
        )
        metadata = tuple((kv.key, kv.value) for kv in request.metadata) if request.metadata else ()
        context = CallContext(request.service, request.method, stream_id, deadline, metadata)
        task = self._serve_call(
            handler, request.payload, context, self._after_reply.get(request.service)
        )
        eager = request.service in self._eager and len(data) <= EAGER_MAX_BYTES
        if not self._link.spawn(task, eager):
            task.close()
            self._reply_status(
                stream_id, StatusCode.RESOURCE_EXHAUSTED, "ttrpc: too many concurrent requests"
            )

    def _on_oversized(self, stream_id: int, msg_type: int, length: int) -> None:
        message = f"message length {length} exceed maximum message size of {MAX_MESSAGE_SIZE}"
        log.warning("conn %d: stream %d: discarded %s", self.conn_id, stream_id, message)
        if msg_type == _REQUEST:
            self._reply_status(stream_id, StatusCode.RESOURCE_EXHAUSTED, message)
        elif msg_type == _RESPONSE:
            future = self._pending.pop(stream_id, None)
            if future is not None and not future.done():
                future.set_exception(TtrpcError(StatusCode.RESOURCE_EXHAUSTED, message))

    # ------------------------------------------------------------------ replies

    async def _serve_call(
        self,
        handler: Handler,
        payload: bytes,
        context: CallContext,
        after_reply: Callable[[], None] | None = None,
    ) -> None:
        try:
            reply = await handler(payload, context)
            if not isinstance(reply, bytes | bytearray | memoryview):
                raise TypeError(f"handler returned {type(reply).__name__}, not bytes")
            parts = encode_response(reply)
        except RequestRefused as exc:
            log.info(
                "conn %d: %s/%s refused: %s",
                self.conn_id,
                context.service,
                context.method,
                exc.message,
            )
            parts = [encode_error_response(exc.code, exc.message)]
        except TtrpcError as exc:
            parts = [encode_error_response(exc.code, exc.message)]
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # we are being cancelled (session shutdown), not the handler's own doing
            parts = [encode_error_response(StatusCode.CANCELLED, "context canceled")]
        except TimeoutError as exc:
            parts = [encode_error_response(StatusCode.DEADLINE_EXCEEDED, str(exc) or "timeout")]
        except Exception as exc:
            log.warning(
                "conn %d: %s/%s failed",
                self.conn_id,
                context.service,
                context.method,
                exc_info=True,
            )
            parts = [encode_error_response(StatusCode.UNKNOWN, str(exc) or type(exc).__name__)]
        try:
            frames = frame_message(self.conn_id, context.stream_id, _RESPONSE, 0, parts)
        except OversizedMessage as exc:
            log.warning(
                "conn %d: %s/%s: reply refused: %s",
                self.conn_id,
                context.service,
                context.method,
                exc.message,
            )
            error = encode_error_response(exc.code, exc.message)
            frames = frame_message(self.conn_id, context.stream_id, _RESPONSE, 0, [error])
        link = self._link
        try:
            while not link.writable:
                await link.wait_writable()
            link.send(frames)
        except ConnectionClosed:
            log.debug(
                "conn %d: reply to stream %d dropped: closed", self.conn_id, context.stream_id
            )
        if after_reply is not None:
            after_reply()

    def _reply_status(self, stream_id: int, code: StatusCode, message: str) -> None:
        log.debug("conn %d: stream %d: %s: %s", self.conn_id, stream_id, code.name, message)
        frames = frame_message(
            self.conn_id, stream_id, _RESPONSE, 0, [encode_error_response(code, message)]
        )
        with contextlib.suppress(ConnectionClosed):
            self._link.send(frames)


def _deadline_exceeded() -> TtrpcError:
    return TtrpcError(StatusCode.DEADLINE_EXCEEDED, "context deadline exceeded")


__all__ = ["Buffer", "CallContext", "Endpoint", "Handler", "Link"]
