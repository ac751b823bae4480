"""Outgoing framing, byte for byte: one message per frame sequence, Go-style split, 4 MiB limit."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri.transport import MAX_MESSAGE_SIZE, OversizedMessage, StatusCode
from nrirp.adapters.nri.transport.framing import frame_message, split_parts


def parse_frames(wire: bytes) -> list[tuple[int, bytes]]:
    frames = []
    pos = 0
    while pos < len(wire):
        conn_id, length = struct.unpack_from(">II", wire, pos)
        frames.append((conn_id, wire[pos + 8 : pos + 8 + length]))
        pos += 8 + length
    assert pos == len(wire)
    return frames


def test_small_message_is_one_frame_with_header_and_data() -> None:
    wire = frame_message(2, 7, 1, 0, [b"abc", b"de"])
    assert wire == (struct.pack(">II", 2, 15) + struct.pack(">IIBB", 5, 7, 1, 0) + b"abcde")


def test_empty_message_is_a_bare_header() -> None:
    wire = frame_message(1, 3, 2, 0, [])
    assert wire == struct.pack(">II", 1, 10) + struct.pack(">IIBB", 0, 3, 2, 0)


def test_4086_data_bytes_still_fit_one_4096_byte_frame() -> None:
    data = bytes(range(256)) * 15 + bytes(246)  # 4086 bytes
    frames = parse_frames(frame_message(1, 1, 2, 0, [data]))
    assert [len(payload) for _, payload in frames] == [4096]
    assert frames[0][1][10:] == data


@pytest.mark.parametrize("size", [4087, 22_000, 440_000, 3_300_000, MAX_MESSAGE_SIZE])
def test_larger_messages_split_go_style(size: int) -> None:
    data = bytes(i % 251 for i in range(size))
    frames = parse_frames(frame_message(1, 9, 2, 0, [data[:1000], data[1000:]]))
    assert [conn for conn, _ in frames] == [1, 1]
    first, second = frames[0][1], frames[1][1]
    assert len(first) == 4096, "frame 1 = 10-byte header + first 4086 data bytes"
    assert struct.unpack(">IIBB", first[:10]) == (size, 9, 2, 0)
    assert first[10:] + second == data
    assert len(second) == size - 4086


def test_oversized_message_is_refused_before_framing() -> None:
    with pytest.raises(OversizedMessage) as info:
        frame_message(1, 1, 1, 0, [b"x" * (MAX_MESSAGE_SIZE - 5), b"123456"])
    assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
    assert info.value.length == MAX_MESSAGE_SIZE + 1


@given(
    st.lists(st.binary(max_size=3000), max_size=6),
    st.integers(min_value=0, max_value=20000),
)
def test_split_parts_cuts_at_the_offset_without_losing_bytes(
    parts: list[bytes], offset: int
) -> None:
    first, rest = split_parts(parts, offset)
    whole = b"".join(parts)
    assert b"".join(first) == whole[:offset]
    assert b"".join(rest) == whole[offset:]


@given(st.lists(st.binary(max_size=5000), max_size=4), st.integers(0, 2**32 - 1))
def test_every_message_frames_into_at_most_two_frames_of_its_own(
    parts: list[bytes], stream_id: int
) -> None:
    frames = parse_frames(frame_message(5, stream_id, 1, 0, parts))
    data = b"".join(parts)
    assert 1 <= len(frames) <= 2
    assert all(conn == 5 for conn, _ in frames)
    joined = b"".join(payload for _, payload in frames)
    assert joined == struct.pack(">IIBB", len(data), stream_id, 1, 0) + data
    if len(frames) == 2:
        assert len(frames[0][1]) == 4096
