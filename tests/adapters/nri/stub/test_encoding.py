"""The stub's hand-made reply encoding equals protobuf's, for any adjustment and updates."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.nri import api
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub.dispatch import encode_create_result, encode_updates

text = st.text(max_size=30)
cpu_lists = st.sampled_from(["", "0", "0-3", "1,5-7", "0-127"])
optional_ints = st.none() | st.integers(min_value=0, max_value=2**40)

updates = st.builds(
    lambda cid, cpus, mems, shares, limit, ignore: api.container_update(
        cid or "id", cpus=cpus, mems=mems, shares=shares, memory_limit=limit, ignore_failure=ignore
    ),
    text,
    cpu_lists,
    cpu_lists,
    optional_ints,
    optional_ints,
    st.booleans(),
)
adjustments = st.builds(
    lambda cpus, shares, annotations, env: api.container_adjustment(
        cpus=cpus, shares=shares, annotations=annotations, env=env
    ),
    cpu_lists | st.none(),
    optional_ints,
    st.dictionaries(text, text, max_size=3),
    st.lists(st.tuples(text, text), max_size=3),
)


@settings(max_examples=200)
@given(st.lists(updates, max_size=5))
def test_update_lists_encode_like_protobuf(items: list[api_pb2.ContainerUpdate]) -> None:
    for response_type in (
        api_pb2.UpdateContainerResponse,
        api_pb2.StopContainerResponse,
        api_pb2.SynchronizeResponse,
    ):
        encoded = encode_updates(b"\x0a", items)
        assert response_type.FromString(encoded) == response_type(update=items)


@settings(max_examples=200)
@given(adjustments | st.none(), st.lists(updates, max_size=3), st.booleans())
def test_create_results_encode_like_protobuf(
    adjust: api_pb2.ContainerAdjustment | None,
    items: list[api_pb2.ContainerUpdate],
    as_tuple: bool,
) -> None:
    expected = api_pb2.CreateContainerResponse(update=items)
    if adjust is not None:
        expected.adjust.CopyFrom(adjust)
    if as_tuple:
        result: object = (adjust, items)
    else:
        result = adjust
        del expected.update[:]
    decoded = api_pb2.CreateContainerResponse.FromString(encode_create_result(result))
    assert decoded == expected
