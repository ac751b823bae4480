"""A Synchronize request's pods and containers, decoded one at a time as the plugin reads them.

A runtime synchronizes every pod and container it runs in one request (or a few chunks): 4 MB
on the wire for 900 containers, and about 10 MB more once protobuf has decoded all of it. The
plugin reads each object once, to make its own values from it; decoding them all up front
holds both forms at once. :func:`split_synchronize` only finds where each object lies in the
request (the wire format, checked), and :class:`WireMessages` decodes an object when it is
read: the request's bytes, plus one decoded object at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Generic, TypeVar, overload

from google.protobuf.message import DecodeError
from google.protobuf.message import Message as ProtoMessage

from nrirp.adapters.nri.transport import StatusCode, TtrpcError

M = TypeVar("M", bound=ProtoMessage)

_PODS = 1  # SynchronizeRequest.pods: repeated PodSandbox
_CONTAINERS = 2  # SynchronizeRequest.containers: repeated Container
_MORE = 3  # SynchronizeRequest.more: bool
_LENGTH_DELIMITED = 2


class WireMessages(Sequence[M], Generic[M]):
    """Messages of ``message_type`` in their wire form, decoded on each read (a read-only
    sequence: index, slice, iterate; reading twice decodes twice). A message that does not
    decode raises INVALID_ARGUMENT, as a request that does not parse does."""

    __slots__ = ("_spans", "_type")

    def __init__(self, message_type: type[M], spans: Sequence[memoryview]) -> None:
        self._type = message_type
        self._spans = list(spans)

    def __len__(self) -> int:
        return len(self._spans)

    @overload
    def __getitem__(self, index: int) -> M: ...

    @overload
    def __getitem__(self, index: slice) -> list[M]: ...

    def __getitem__(self, index: int | slice) -> M | list[M]:
        if isinstance(index, slice):
            return [self._decode(span) for span in self._spans[index]]
        return self._decode(self._spans[index])

    def __iter__(self) -> Iterator[M]:
        decode = self._decode
        for span in self._spans:
            yield decode(span)

    def __add__(self, other: WireMessages[M]) -> WireMessages[M]:
        return WireMessages(self._type, [*self._spans, *other._spans])

    def _decode(self, span: memoryview) -> M:
        try:
            return self._type.FromString(span)  # type: ignore[arg-type]  # upb takes buffers
        except DecodeError as exc:
            raise TtrpcError(
                StatusCode.INVALID_ARGUMENT,
                f"invalid SynchronizeRequest: {self._type.__name__}: {exc}",
            ) from None


def split_synchronize(payload: bytes) -> tuple[list[memoryview], list[memoryview], bool]:
    """The pods' and the containers' wire forms in a SynchronizeRequest (views of
    ``payload``), and its ``more`` flag. Raises :class:`DecodeError` for bytes that are not a
    well-formed message (truncated, a bad field key or wire type, a length past the end)."""
    view = memoryview(payload)
    end = len(payload)
    pods: list[memoryview] = []
    containers: list[memoryview] = []
    more = False
    pos = 0
    while pos < end:
        key, pos = _varint(payload, pos, end)
        field, wire = key >> 3, key & 7
        if field == 0:
            raise DecodeError("field number 0")
        if wire == _LENGTH_DELIMITED:
            length, pos = _varint(payload, pos, end)
            stop = pos + length
            if stop > end:
                raise DecodeError("truncated message")
            if field == _PODS:
                pods.append(view[pos:stop])
            elif field == _CONTAINERS:
                containers.append(view[pos:stop])
            pos = stop
        elif wire == 0:
            value, pos = _varint(payload, pos, end)
            if field == _MORE:
                more = value != 0
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise DecodeError(f"unsupported wire type {wire}")
        if pos > end:
            raise DecodeError("truncated message")
    return pods, containers, more


def _varint(data: bytes, pos: int, end: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = 0
    shift = 0
    while True:
        if pos >= end or shift > 63:
            raise DecodeError("truncated or overlong varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
