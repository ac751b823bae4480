"""Hand-written envelope encoding equals protobuf's, byte for byte; decoders raise DecodeError."""

from __future__ import annotations

import contextlib

from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri.gen import ttrpc_pb2
from nrirp.adapters.nri.transport.envelope import (
    DecodeError,
    decode_request,
    decode_response,
    encode_error_response,
    encode_request,
    encode_response,
)

int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
texts = st.text(max_size=300)


@given(
    texts,
    texts,
    st.binary(max_size=3000),
    int64,
    st.lists(st.tuples(texts, texts), max_size=4),
)
def test_request_encoding_is_protobuf_serialization(
    service: str, method: str, payload: bytes, timeout: int, metadata: list[tuple[str, str]]
) -> None:
    expected = ttrpc_pb2.Request(
        service=service,
        method=method,
        payload=payload,
        timeout_nano=timeout,
        metadata=[ttrpc_pb2.KeyValue(key=k, value=v) for k, v in metadata],
    ).SerializeToString()
    encoded = b"".join(encode_request(service, method, payload, timeout, metadata))
    assert encoded == expected
    decoded = decode_request(encoded)
    assert (decoded.service, decoded.method, decoded.payload, decoded.timeout_nano) == (
        service,
        method,
        payload,
        timeout,
    )
    assert [(kv.key, kv.value) for kv in decoded.metadata] == metadata


@given(st.binary(max_size=5000))
def test_success_response_is_protobuf_serialization(payload: bytes) -> None:
    encoded = b"".join(encode_response(payload))
    assert encoded == ttrpc_pb2.Response(payload=payload).SerializeToString()
    response = decode_response(encoded)
    assert not response.HasField("status")
    assert response.payload == payload


def test_empty_success_response_is_zero_bytes() -> None:
    assert encode_response(b"") == []


@given(st.integers(1, 16), texts)
def test_error_response_carries_only_status(code: int, message: str) -> None:
    response = decode_response(encode_error_response(code, message))
    assert (response.status.code, response.status.message, response.payload) == (
        code,
        message,
        b"",
    )


@given(st.binary(max_size=200))
def test_decoders_raise_only_decode_error_on_garbage(data: bytes) -> None:
    for decode in (decode_request, decode_response):
        with contextlib.suppress(DecodeError):
            decode(data)


def test_truncated_request_is_a_decode_error() -> None:
    encoded = b"".join(encode_request("svc", "method", b"payload", 5))
    try:
        decode_request(encoded[:-3])
    except DecodeError:
        return
    raise AssertionError("a truncated request decoded without error")
