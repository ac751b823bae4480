"""The protobuf wire format by hand, for the few fields the NRI v0.1 exec client writes and
reads (importing ``google.protobuf`` would take most of its start-up budget).

Only what proto3 needs for that: varints, length-delimited fields, skipping the others.
"""

from __future__ import annotations

VARINT = 0
FIXED64 = 1
LENGTH_DELIMITED = 2
FIXED32 = 5


class WireError(ValueError):
    """The bytes are not a valid protobuf message."""


def varint(value: int) -> bytes:
    """``value`` (>= 0) as a base-128 varint."""
    if value < 0:
        raise ValueError("negative varints are not used here")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def length_delimited(number: int, data: bytes) -> bytes:
    """Field ``number`` carrying ``data`` (bytes, a string's UTF-8, a nested message)."""
    return varint(number << 3 | LENGTH_DELIMITED) + varint(len(data)) + data


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise WireError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError("varint longer than 10 bytes")


def fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """The message's fields in order: ``(number, value)``, a varint as ``int``, a
    length-delimited field as ``bytes``; fixed-size fields are skipped."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0")
        if wire_type == VARINT:
            value, pos = _read_varint(data, pos)
            out.append((number, value))
        elif wire_type == LENGTH_DELIMITED:
            size, pos = _read_varint(data, pos)
            if pos + size > len(data):
                raise WireError(f"field {number} runs past the end of the message")
            out.append((number, data[pos : pos + size]))
            pos += size
        elif wire_type == FIXED64:
            pos += 8
        elif wire_type == FIXED32:
            pos += 4
        else:
            raise WireError(f"field {number}: unsupported wire type {wire_type}")
        if pos > len(data):
            raise WireError("truncated fixed-size field")
    return out


def string_map_entry(entry: bytes) -> tuple[str, str]:
    """A ``map<string, string>`` entry (key = field 1, value = field 2)."""
    key = value = ""
    for number, raw in fields(entry):
        if isinstance(raw, bytes) and number == 1:
            key = raw.decode("utf-8", "replace")
        elif isinstance(raw, bytes) and number == 2:
            value = raw.decode("utf-8", "replace")
    return key, value
