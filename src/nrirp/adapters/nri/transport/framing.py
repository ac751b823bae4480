"""Wire constants, headers and the Go-compatible framing of one ttRPC message into mux frames.

Mux trunk frame: ``conn_id:u32be, length:u32be, payload``. ttRPC message: ``length:u32be,
stream_id:u32be, type:u8, flags:u8, data``. A ttRPC message is sent as one or two mux frames, never
sharing a frame with another message: the Go mux hands ttRPC one whole frame per read and fails with
ENOMEM when the reader's buffer (Go's 4096-byte bufio, or the remaining message length) is smaller.
So the first frame carries the 10-byte header plus at most 4086 data bytes (exactly 4096 bytes, what
bufio asks for), and the second frame carries the rest, which Go reads straight into the message
buffer. This is the framing Go's own bufio.Writer produces.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Sequence

from nrirp.adapters.nri.transport.errors import OversizedMessage

MUX_HEADER = struct.Struct(">II")
MUX_HEADER_SIZE = MUX_HEADER.size  # 8
TTRPC_HEADER = struct.Struct(">IIBB")
TTRPC_HEADER_SIZE = TTRPC_HEADER.size  # 10
_MUX_AND_TTRPC_HEADER = struct.Struct(">IIIIBB")

MAX_MESSAGE_SIZE = 4 << 20
"""Largest ttRPC message data (excluding its header) either side accepts."""

MAX_INBOUND_FRAME = (16 << 20) + TTRPC_HEADER_SIZE
"""Largest mux frame payload accepted (old Go muxes wrote up to 16 MiB); beyond it we disconnect."""

GO_READ_BUFFER = 4096
FIRST_FRAME_DATA = GO_READ_BUFFER - TTRPC_HEADER_SIZE  # 4086

MAX_STREAM_ID = 0xFFFFFFFF
MAX_CONN_ID = 0xFFFFFFFF

RESERVED_CONN = 0
PLUGIN_SERVICE_CONN = 1
"""Logical connection carrying the Plugin service: the plugin serves, the runtime calls."""
RUNTIME_SERVICE_CONN = 2
"""Logical connection carrying the Runtime service: the runtime serves, the plugin calls."""


class MessageType(enum.IntEnum):
    """ttRPC message types."""

    REQUEST = 1
    RESPONSE = 2
    DATA = 3


FLAG_REMOTE_CLOSED = 0x01
FLAG_REMOTE_OPEN = 0x02
FLAG_NO_DATA = 0x04

Buffer = bytes | bytearray | memoryview


def check_message_size(length: int) -> None:
    """Raise :class:`OversizedMessage` if ``length`` data bytes exceed the ttRPC limit."""
    if length > MAX_MESSAGE_SIZE:
        raise OversizedMessage(length, MAX_MESSAGE_SIZE)


def frame_message(
    conn_id: int, stream_id: int, msg_type: int, flags: int, parts: Sequence[Buffer]
) -> bytes:
    """Return the trunk bytes for one ttRPC message whose data is the concatenation of ``parts``.

    The result holds one mux frame (small messages) or two (Go-style split) and is meant for a
    single transport write. Raises :class:`OversizedMessage` above 4 MiB, before building anything.
    Parts must be byte-oriented (``len()`` counts bytes).
    """
    length = 0
    for part in parts:
        length += len(part)
    check_message_size(length)
    if length <= FIRST_FRAME_DATA:
        head = _MUX_AND_TTRPC_HEADER.pack(
            conn_id, TTRPC_HEADER_SIZE + length, length, stream_id, msg_type, flags
        )
        return b"".join((head, *parts)) if parts else head
    head = _MUX_AND_TTRPC_HEADER.pack(conn_id, GO_READ_BUFFER, length, stream_id, msg_type, flags)
    first, rest = split_parts(parts, FIRST_FRAME_DATA)
    second = MUX_HEADER.pack(conn_id, length - FIRST_FRAME_DATA)
    return b"".join((head, *first, second, *rest))


def split_parts(parts: Sequence[Buffer], offset: int) -> tuple[list[Buffer], list[Buffer]]:
    """Split a list of buffers at byte ``offset`` without copying (slices are memoryviews)."""
    first: list[Buffer] = []
    rest: list[Buffer] = []
    remaining = offset
    for part in parts:
        size = len(part)
        if remaining >= size:
            first.append(part)
            remaining -= size
        elif remaining > 0:
            view = memoryview(part)
            first.append(view[:remaining])
            rest.append(view[remaining:])
            remaining = 0
        else:
            rest.append(part)
    return first, rest
