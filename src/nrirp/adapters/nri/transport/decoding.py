"""Incremental (sans-I/O) decoders: trunk bytes -> mux frames -> per-connection ttRPC messages.

Both decoders accept input cut at arbitrary points and never buffer more than a bounded amount:
the mux decoder keeps at most a partial 8-byte header (frame payloads stream straight through to
the connection they belong to), and the ttRPC decoder keeps at most one message of up to 4 MiB
(larger messages are skipped as they stream by). Complete messages that arrive in one piece are
delivered as zero-copy views of the input.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

from nrirp.adapters.nri.transport.errors import ProtocolError
from nrirp.adapters.nri.transport.framing import (
    MAX_INBOUND_FRAME,
    MAX_MESSAGE_SIZE,
    MUX_HEADER,
    MUX_HEADER_SIZE,
    TTRPC_HEADER,
    TTRPC_HEADER_SIZE,
    Buffer,
)

log = logging.getLogger("nrirp.nri.transport.mux")

ChunkSink = Callable[[memoryview], None]
MessageSink = Callable[[int, int, int, memoryview], None]
"""``(stream_id, msg_type, flags, data)``; ``data`` is only valid during the call."""
OversizeSink = Callable[[int, int, int], None]
"""``(stream_id, msg_type, length)`` for a message that was discarded for exceeding 4 MiB."""


class MuxDecoder:
    """Demultiplexes the trunk: routes each frame's payload to the sink of its connection id.

    Frames for ids without a sink (including the reserved id 0) are dropped. A frame length above
    ``max_frame`` raises :class:`ProtocolError`; the decoder is then unusable.
    """

    __slots__ = ("_header", "_max_frame", "_remaining", "_sink", "_sinks")

    def __init__(self, sinks: Mapping[int, ChunkSink], max_frame: int = MAX_INBOUND_FRAME) -> None:
        self._sinks = sinks
        self._max_frame = max_frame
        self._header = bytearray()
        self._sink: ChunkSink | None = None
        self._remaining = 0

    @property
    def buffered(self) -> int:
        """Bytes held by the decoder itself (a partial frame header)."""
        return len(self._header)

    def feed(self, data: Buffer) -> None:
        """Consume trunk bytes; payload slices go to the sinks synchronously."""
        view = memoryview(data)
        end = len(view)
        pos = 0
        while pos < end:
            remaining = self._remaining
            if remaining:
                n = min(remaining, end - pos)
                sink = self._sink
                if sink is not None:
                    sink(view[pos : pos + n])
                pos += n
                self._remaining = remaining - n
                continue
            if self._header:
                need = MUX_HEADER_SIZE - len(self._header)
                self._header += view[pos : pos + need]
                pos += need
                if len(self._header) < MUX_HEADER_SIZE:
                    return
                conn_id, length = MUX_HEADER.unpack(self._header)
                self._header.clear()
            elif end - pos >= MUX_HEADER_SIZE:
                conn_id, length = MUX_HEADER.unpack_from(view, pos)
                pos += MUX_HEADER_SIZE
            else:
                self._header += view[pos:end]
                return
            self._start_frame(conn_id, length)

    def _start_frame(self, conn_id: int, length: int) -> None:
        if length > self._max_frame:
            raise ProtocolError(
                f"mux frame for connection {conn_id} has length {length}, "
                f"above the limit of {self._max_frame}"
            )
        self._sink = self._sinks.get(conn_id)
        if self._sink is None and log.isEnabledFor(logging.DEBUG):
            log.debug("dropping %d-byte frame for unopened connection %d", length, conn_id)
        self._remaining = length


class TtrpcDecoder:
    """Reassembles one logical connection's byte stream into ttRPC messages.

    Messages above ``max_message`` data bytes are skipped without buffering and reported to
    ``on_oversized`` once fully skipped (as Go ttRPC does before answering RESOURCE_EXHAUSTED).
    """

    __slots__ = (
        "_body",
        "_discard",
        "_filled",
        "_header",
        "_max_message",
        "_on_message",
        "_on_oversized",
        "_pending",
    )

    def __init__(
        self,
        on_message: MessageSink,
        on_oversized: OversizeSink,
        max_message: int = MAX_MESSAGE_SIZE,
    ) -> None:
        self._on_message = on_message
        self._on_oversized = on_oversized
        self._max_message = max_message
        self._header = bytearray()
        self._body: bytearray | None = None
        self._filled = 0
        self._discard = 0
        self._pending = (0, 0, 0, 0)  # length, stream_id, type, flags of the message in progress

    @property
    def buffered(self) -> int:
        """Bytes held by the decoder (partial header plus the body being reassembled)."""
        return len(self._header) + (len(self._body) if self._body is not None else 0)

    def feed(self, chunk: memoryview) -> None:
        """Consume the next slice of the connection's byte stream."""
        end = len(chunk)
        pos = 0
        while pos < end:
            body = self._body
            if body is not None:
                n = min(len(body) - self._filled, end - pos)
                body[self._filled : self._filled + n] = chunk[pos : pos + n]
                self._filled += n
                pos += n
                if self._filled == len(body):
                    self._body = None
                    _, stream_id, msg_type, flags = self._pending
                    with memoryview(body) as data:
                        self._on_message(stream_id, msg_type, flags, data)
                continue
            if self._discard:
                n = min(self._discard, end - pos)
                self._discard -= n
                pos += n
                if not self._discard:
                    length, stream_id, msg_type, _ = self._pending
                    self._on_oversized(stream_id, msg_type, length)
                continue
            if self._header:
                need = TTRPC_HEADER_SIZE - len(self._header)
                self._header += chunk[pos : pos + need]
                pos += need
                if len(self._header) < TTRPC_HEADER_SIZE:
                    return
                length, stream_id, msg_type, flags = TTRPC_HEADER.unpack(self._header)
                self._header.clear()
            elif end - pos >= TTRPC_HEADER_SIZE:
                length, stream_id, msg_type, flags = TTRPC_HEADER.unpack_from(chunk, pos)
                pos += TTRPC_HEADER_SIZE
            else:
                self._header += chunk[pos:end]
                return
            if length > self._max_message:
                self._pending = (length, stream_id, msg_type, flags)
                self._discard = length
            elif end - pos >= length:
                self._on_message(stream_id, msg_type, flags, chunk[pos : pos + length])
                pos += length
            else:
                self._pending = (length, stream_id, msg_type, flags)
                self._body = bytearray(length)
                self._filled = 0
