"""Inbound decoding: reassembly from arbitrary cuts, dropped connections, limits, fuzzing."""

from __future__ import annotations

import contextlib
import itertools
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.nri.transport import ProtocolError
from nrirp.adapters.nri.transport.decoding import MuxDecoder, TtrpcDecoder
from nrirp.adapters.nri.transport.framing import (
    MAX_INBOUND_FRAME,
    frame_message,
)

Message = tuple[int, int, int, bytes]  # stream_id, type, flags, data


class Collector:
    """A TtrpcDecoder that records what it decodes."""

    def __init__(self, max_message: int = 4 << 20) -> None:
        self.messages: list[Message] = []
        self.oversized: list[tuple[int, int, int]] = []
        self.decoder = TtrpcDecoder(self._message, self._oversized, max_message)

    def _message(self, stream_id: int, msg_type: int, flags: int, data: memoryview) -> None:
        self.messages.append((stream_id, msg_type, flags, bytes(data)))

    def _oversized(self, stream_id: int, msg_type: int, length: int) -> None:
        self.oversized.append((stream_id, msg_type, length))


def ttrpc_bytes(message: Message) -> bytes:
    stream_id, msg_type, flags, data = message
    return struct.pack(">IIBB", len(data), stream_id, msg_type, flags) + data


def cut(data: bytes, points: list[int]) -> list[bytes]:
    bounds = sorted({p % (len(data) + 1) for p in points} | {0, len(data)})
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


messages = st.lists(
    st.tuples(
        st.integers(0, 2**32 - 1),
        st.integers(0, 255),
        st.integers(0, 255),
        st.binary(max_size=6000),
    ),
    max_size=6,
)


@given(messages, messages, st.lists(st.integers(0, 10**6), max_size=30))
def test_go_style_stream_cut_anywhere_decodes_to_the_same_messages(
    conn1: list[Message], conn2: list[Message], points: list[int]
) -> None:
    wire = b""
    for first, second in zip(conn1 + [None] * len(conn2), conn2 + [None] * len(conn1), strict=True):
        for conn_id, message in ((1, first), (2, second)):
            if message is not None:
                stream_id, msg_type, flags, data = message
                wire += frame_message(conn_id, stream_id, msg_type, flags, [data])
        wire += struct.pack(">II", 7, 3) + b"\xff\xff\xff"  # unopened connection: dropped
    one, two = Collector(), Collector()
    mux = MuxDecoder({1: one.decoder.feed, 2: two.decoder.feed})
    for piece in cut(wire, points):
        mux.feed(piece)
    assert one.messages == conn1
    assert two.messages == conn2
    assert mux.buffered == 0 and one.decoder.buffered == 0 and two.decoder.buffered == 0


@given(
    messages,
    st.lists(st.integers(1, 9000), min_size=1, max_size=20),
    st.lists(st.integers(0, 10**6), max_size=20),
)
def test_frames_of_any_size_reassemble_the_connection_stream(
    sent: list[Message], frame_sizes: list[int], points: list[int]
) -> None:
    stream = b"".join(ttrpc_bytes(m) for m in sent)
    wire = b""
    pos = 0
    index = 0
    while pos < len(stream):
        chunk = stream[pos : pos + frame_sizes[index % len(frame_sizes)]]
        wire += struct.pack(">II", 1, len(chunk)) + chunk
        wire += struct.pack(">II", 0, 4) + b"zero"  # reserved id 0 is never delivered
        pos += len(chunk)
        index += 1
    collector = Collector()
    mux = MuxDecoder({1: collector.decoder.feed})
    for piece in cut(wire, points):
        mux.feed(piece)
    assert collector.messages == sent


def test_zero_length_frames_and_messages_are_fine() -> None:
    collector = Collector()
    mux = MuxDecoder({1: collector.decoder.feed})
    mux.feed(struct.pack(">II", 1, 0) + frame_message(1, 3, 2, 0, []))
    assert collector.messages == [(3, 2, 0, b"")]


def test_absurd_frame_length_is_a_protocol_error() -> None:
    mux = MuxDecoder({1: Collector().decoder.feed})
    with pytest.raises(ProtocolError, match="above the limit"):
        mux.feed(struct.pack(">II", 1, MAX_INBOUND_FRAME + 1))


def test_16_mib_frames_are_accepted_and_streamed_not_buffered() -> None:
    collector = Collector()
    mux = MuxDecoder({1: collector.decoder.feed})
    data = b"d" * (4 << 20)
    message = ttrpc_bytes((1, 2, 0, data))
    padding = MAX_INBOUND_FRAME - len(message)
    # one 16 MiB frame holding a 4 MiB message and the start of an oversized one
    filler = struct.pack(">IIBB", padding - 10, 3, 2, 0) + b"f" * (padding - 10)
    frame = struct.pack(">II", 1, MAX_INBOUND_FRAME) + message + filler
    for start in range(0, len(frame), 1 << 20):
        mux.feed(frame[start : start + (1 << 20)])
        assert mux.buffered < 8
    assert collector.messages == [(1, 2, 0, data)]
    assert collector.oversized == [(3, 2, padding - 10)]


def test_oversized_message_is_skipped_then_reported_and_the_stream_continues() -> None:
    collector = Collector(max_message=100)
    stream = ttrpc_bytes((5, 1, 0, b"x" * 101)) + ttrpc_bytes((7, 1, 0, b"ok"))
    for i in range(len(stream)):
        collector.decoder.feed(memoryview(stream[i : i + 1]))
        if i < 10 + 101 - 1:
            assert collector.oversized == []
        assert collector.decoder.buffered <= 10 + 100
    assert collector.oversized == [(5, 1, 101)]
    assert collector.messages == [(7, 1, 0, b"ok")]


@settings(max_examples=300)
@given(st.lists(st.binary(max_size=400), max_size=12))
def test_fuzz_mux_and_ttrpc_decoders_raise_only_protocol_errors_and_stay_bounded(
    chunks: list[bytes],
) -> None:
    collectors = {conn: Collector(max_message=1000) for conn in (0, 1, 2)}
    mux = MuxDecoder({c: col.decoder.feed for c, col in collectors.items()}, max_frame=5000)
    try:
        for chunk in chunks:
            mux.feed(chunk)
            assert mux.buffered < 8
            for collector in collectors.values():
                assert collector.decoder.buffered <= 10 + 1000
    except ProtocolError:
        pass


@settings(max_examples=300)
@given(st.binary(min_size=1, max_size=3000), st.lists(st.integers(0, 3000), max_size=10))
def test_fuzz_valid_headers_with_garbage_bodies(body: bytes, points: list[int]) -> None:
    wire = frame_message(1, 1, body[0] % 4, 0, [body[1:]])
    collector = Collector()
    mux = MuxDecoder({1: collector.decoder.feed})
    for piece in cut(wire, points):
        mux.feed(piece)
    assert collector.messages == [(1, body[0] % 4, 0, body[1:])]
    with contextlib.suppress(ProtocolError):  # trailing garbage: whatever it says, or an error
        mux.feed(body)
    assert collector.messages[0] == (1, body[0] % 4, 0, body[1:])
