"""A Synchronize request split on the wire and decoded one object at a time (stub/wire.py)."""

from __future__ import annotations

import pytest
from google.protobuf.message import DecodeError
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub.wire import WireMessages, split_synchronize
from nrirp.adapters.nri.transport import StatusCode, TtrpcError

names = st.text(max_size=12)


@st.composite
def requests(draw: st.DrawFn) -> api_pb2.SynchronizeRequest:
    request = api_pb2.SynchronizeRequest(more=draw(st.booleans()))
    for pod_id in draw(st.lists(names, max_size=5)):
        pod = request.pods.add(id=pod_id, name=draw(names))
        for key, value in draw(st.dictionaries(names, names, max_size=3)).items():
            pod.annotations[key] = value
    for ctr_id in draw(st.lists(names, max_size=5)):
        ctr = request.containers.add(id=ctr_id, pid=draw(st.integers(0, 2**32 - 1)))
        ctr.linux.resources.cpu.cpus = draw(names)
    return request


@given(request=requests())
def test_split_gives_the_messages_protobuf_decodes(request: api_pb2.SynchronizeRequest) -> None:
    pods, containers, more = split_synchronize(request.SerializeToString())
    assert more is request.more
    assert list(WireMessages(api_pb2.PodSandbox, pods)) == list(request.pods)
    assert list(WireMessages(api_pb2.Container, containers)) == list(request.containers)


def test_a_sequence_reads_like_a_list_and_unknown_fields_are_skipped() -> None:
    request = api_pb2.SynchronizeRequest(
        containers=[api_pb2.Container(id=f"c{n}") for n in range(4)]
    )
    data = request.SerializeToString() + b"\x78\x05" + b"\x82\x01\x02hi"  # fields 15 and 16
    _, spans, _ = split_synchronize(data)
    containers = WireMessages(api_pb2.Container, spans)
    assert len(containers) == 4
    assert containers[1].id == "c1" and containers[-1].id == "c3"
    assert [c.id for c in containers[:2]] == ["c0", "c1"]
    assert [c.id for c in containers + containers] == ["c0", "c1", "c2", "c3"] * 2


@pytest.mark.parametrize(
    "data",
    [
        b"\x0a\x05ab",  # a pod longer than what follows
        b"\x0a",  # a key without its length
        b"\x08",  # a varint field without its value
        b"\x00\x01",  # field number 0
        b"\x0b",  # a group (wire type 3)
        b"\x19\x01",  # a 64-bit field cut short
        b"\xff" * 11,  # an overlong varint
    ],
)
def test_malformed_requests_are_refused(data: bytes) -> None:
    with pytest.raises(DecodeError):
        split_synchronize(data)


def test_an_object_that_does_not_decode_is_an_invalid_argument_when_read() -> None:
    pods, _, _ = split_synchronize(b"\x0a\x02\x0a\x05")  # a pod whose id is cut short
    messages = WireMessages(api_pb2.PodSandbox, pods)
    with pytest.raises(TtrpcError) as caught:
        list(messages)
    assert caught.value.code == StatusCode.INVALID_ARGUMENT
    assert "PodSandbox" in caught.value.message
