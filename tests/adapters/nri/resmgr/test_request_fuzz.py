"""Fuzzing what the runtime sends (issue 9, fuzz tests): CreateContainer requests with any
field values (odd ids and names, huge or negative resources, odd cgroup paths, annotations and
labels), and requests decoded from random bytes, are answered or refused with a reason by
the resource-manager plugin, never with an internal error (bounded: a few hundred examples)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.memory import RecordingDecisionLog
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.transport.errors import RequestRefused
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import builtin_registry
from tests.domain.policies.topology_aware.support import ANNOTATIONS, catalogue

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])

TEXT = st.text(max_size=20) | st.sampled_from(["", "kube-system", "a/b", "..", "\x00", "x" * 300])
INT64 = st.integers(-(2**63), 2**63 - 1)
UINT64 = st.integers(0, 2**64 - 1)
CPUSETS = st.sampled_from(["", "0-3", "0,", "3-1", "99999", "0-15", "a", "0-" + "9" * 30])
PARENTS = st.sampled_from(
    ["", "/kubepods/pod1", "/kubepods/besteffort/podx", "kubepods-burstable-pod1.slice",
     "/kubepods/guaranteed/pod1/../..", "relative/path", "/" * 3]
)  # fmt: skip


@st.composite
def pods(draw: st.DrawFn) -> api_pb2.PodSandbox:
    pod = api_pb2.PodSandbox(id=draw(TEXT), name=draw(TEXT), namespace=draw(TEXT), uid=draw(TEXT))
    pod.linux.cgroup_parent = draw(PARENTS | TEXT)
    pod.annotations.update(draw(st.dictionaries(TEXT, TEXT, max_size=3)))
    pod.labels.update(draw(st.dictionaries(TEXT, TEXT, max_size=3)))
    return pod


@st.composite
def containers(draw: st.DrawFn, pod: api_pb2.PodSandbox) -> api_pb2.Container:
    ctr = api_pb2.Container(
        id=draw(TEXT),
        pod_sandbox_id=draw(st.just(pod.id) | TEXT),
        name=draw(TEXT),
        state=draw(st.integers(0, 4)),  # type: ignore[arg-type]
    )
    cpu = ctr.linux.resources.cpu
    if draw(st.booleans()):
        cpu.shares.value = draw(UINT64)
    if draw(st.booleans()):
        cpu.quota.value = draw(INT64)
    if draw(st.booleans()):
        cpu.period.value = draw(UINT64)
    if draw(st.booleans()):
        cpu.cpus = draw(CPUSETS)
        cpu.mems = draw(CPUSETS)
    if draw(st.booleans()):
        ctr.linux.resources.memory.limit.value = draw(INT64)
    if draw(st.booleans()):
        ctr.linux.oom_score_adj.value = draw(INT64)
    ctr.linux.cgroups_path = draw(PARENTS | TEXT)
    ctr.annotations.update(draw(st.dictionaries(TEXT, TEXT, max_size=2)))
    return ctr


REQUESTS = pods().flatmap(lambda pod: containers(pod).map(lambda ctr: (pod, ctr)))


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


def plugin(policy: str) -> ResourceManagerPlugin:
    registry = builtin_registry()
    manager = ResourceManager(
        policy=registry.create(policy),
        machine=catalogue("box-16"),
        decisions=RecordingDecisionLog(),
        annotation_parser=ANNOTATIONS,
    )
    manager.start(None)
    return ResourceManagerPlugin(manager, NriRuntimeUpdates())


PLUGINS = {policy: plugin(policy) for policy in ("topology-aware", "balloons")}


def create(
    loop: asyncio.AbstractEventLoop, policy: str, pod: api_pb2.PodSandbox, ctr: api_pb2.Container
) -> None:
    subject = PLUGINS[policy]
    try:
        loop.run_until_complete(subject.create_container(pod, ctr))
    except RequestRefused as refused:
        assert "\n" not in refused.message and len(refused.message) < 2000
    finally:  # keep the population small: whatever was created goes again
        loop.run_until_complete(subject.remove_container(pod, ctr))


@pytest.mark.parametrize("policy", sorted(PLUGINS))
@FUZZ
@given(request=REQUESTS)
def test_any_create_request_is_answered_or_refused(
    loop: asyncio.AbstractEventLoop,
    policy: str,
    request: tuple[api_pb2.PodSandbox, api_pb2.Container],
) -> None:
    create(loop, policy, *request)


@pytest.mark.parametrize("policy", sorted(PLUGINS))
@FUZZ
@given(payload=st.binary(max_size=300))
def test_a_create_request_decoded_from_any_bytes_is_answered_or_refused(
    loop: asyncio.AbstractEventLoop, policy: str, payload: bytes
) -> None:
    try:
        request = api_pb2.CreateContainerRequest.FromString(payload)
    except DecodeError:  # the stub answers INVALID_ARGUMENT before the plugin sees it
        return
    create(loop, policy, request.pod, request.container)
