"""The ttRPC envelope (Request / Response protobufs) on the wire.

Encoding is done by hand on the hot path: it yields the envelope prefix and the payload as separate
buffers, so the payload is copied once (into the frame) instead of three times (message object,
serialization, frame). The bytes are identical to ``ttrpc_pb2`` serialization (tested). Decoding
uses the generated messages, which cope with any byte string.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from google.protobuf.message import DecodeError

from nrirp.adapters.nri.gen import ttrpc_pb2
from nrirp.adapters.nri.transport.framing import Buffer

__all__ = [
    "DecodeError",
    "decode_request",
    "decode_response",
    "encode_error_response",
    "encode_request",
    "encode_response",
]

_REQUEST_SERVICE = 0x0A  # field 1, length-delimited
_REQUEST_METHOD = 0x12  # field 2, length-delimited
_REQUEST_PAYLOAD = 0x1A  # field 3, length-delimited
_REQUEST_TIMEOUT = 0x20  # field 4, varint
_REQUEST_METADATA = 0x2A  # field 5, length-delimited
_KEYVALUE_KEY = 0x0A
_KEYVALUE_VALUE = 0x12
_RESPONSE_PAYLOAD = 0x12  # field 2, length-delimited

_PAYLOAD_TAG = bytes((_REQUEST_PAYLOAD,))
_TIMEOUT_TAG = bytes((_REQUEST_TIMEOUT,))
_METADATA_TAG = bytes((_REQUEST_METADATA,))
_SMALL_VARINTS = [bytes((n,)) for n in range(128)]


def _varint(value: int) -> bytes:
    if value < 128:
        return _SMALL_VARINTS[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _string_field(tag: int, text: str) -> bytes:
    raw = text.encode()
    return bytes((tag,)) + _varint(len(raw)) + raw


_prefixes: dict[tuple[str, str], bytes] = {}
_MAX_CACHED_PREFIXES = 1024


def _request_prefix(service: str, method: str) -> bytes:
    """The service and method fields, cached: a peer calls a handful of methods over and over."""
    key = (service, method)
    prefix = _prefixes.get(key)
    if prefix is None:
        prefix = b""
        if service:
            prefix += _string_field(_REQUEST_SERVICE, service)
        if method:
            prefix += _string_field(_REQUEST_METHOD, method)
        if len(_prefixes) < _MAX_CACHED_PREFIXES:
            _prefixes[key] = prefix
    return prefix


def encode_request(
    service: str,
    method: str,
    payload: Buffer,
    timeout_nano: int,
    metadata: Iterable[tuple[str, str]] = (),
) -> list[Buffer]:
    """Encode a Request as ``[prefix, payload, suffix]`` pieces (empty pieces omitted)."""
    prefix = _request_prefix(service, method)
    size = len(payload)
    pieces: list[Buffer] = [prefix + _PAYLOAD_TAG + _varint(size), payload] if size else [prefix]
    suffix = b""
    if timeout_nano:
        suffix = _TIMEOUT_TAG + _varint(timeout_nano & 0xFFFFFFFFFFFFFFFF)  # negatives: 10 bytes
    for key, value in metadata:
        entry = b""
        if key:
            entry += _string_field(_KEYVALUE_KEY, key)
        if value:
            entry += _string_field(_KEYVALUE_VALUE, value)
        suffix += _METADATA_TAG + _varint(len(entry)) + entry
    if suffix:
        pieces.append(suffix)
    return pieces


def encode_response(payload: Buffer) -> list[Buffer]:
    """Encode a successful Response: no status, the payload (nothing at all if it is empty)."""
    if not len(payload):
        return []
    return [_SMALL_VARINTS[_RESPONSE_PAYLOAD] + _varint(len(payload)), payload]


def encode_error_response(code: int, message: str) -> bytes:
    """Encode a Response carrying only ``status{code, message}``."""
    return ttrpc_pb2.Response(
        status=ttrpc_pb2.Status(code=code, message=message)
    ).SerializeToString()


def decode_request(data: Buffer) -> ttrpc_pb2.Request:
    """Parse a Request; raises :class:`DecodeError` on malformed bytes."""
    return ttrpc_pb2.Request.FromString(cast(bytes, data))  # upb parses any buffer


def decode_response(data: Buffer) -> ttrpc_pb2.Response:
    """Parse a Response; raises :class:`DecodeError` on malformed bytes."""
    return ttrpc_pb2.Response.FromString(cast(bytes, data))
