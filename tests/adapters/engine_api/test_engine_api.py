"""The engine API through a real unix socket: grpcio's server, the Python client, and the
hand-written h2c client of the NRI v0.1 exec plugin."""

from __future__ import annotations

import os
import socket
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest

from nrirp.adapters.engine_api import h2call, protowire
from nrirp.adapters.engine_api.client import EngineCallError, EngineClient
from nrirp.adapters.engine_api.gen import engine_pb2 as pb
from nrirp.adapters.engine_api.server import EngineApiServer, SocketInUseError
from nrirp.adapters.engine_api.service import EngineService
from nrirp.adapters.engine_api.translate import (
    container_from_pb,
    container_to_pb,
    pod_from_pb,
    pod_to_pb,
    resources_from_pb,
    resources_to_pb,
)
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.adapters.memory import InMemoryHostControl, RecordingDecisionLog
from nrirp.app.embed import Engine, KubernetesPod
from nrirp.app.explain import EXPLAIN_FORMAT, explanation_document
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod

BOX16 = {"reservedResources": {"cpu": "cpuset:0"}}


def manifest(name: str, cpu: str | None) -> dict[str, object]:
    resources = {} if cpu is None else {"requests": {"cpu": cpu, "memory": "64Mi"}}
    if cpu is not None:
        resources["limits"] = {"cpu": cpu, "memory": "64Mi"}
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"containers": [{"name": "c", "resources": resources}]},
    }


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[EngineClient, Engine, str]]:
    updates = RoutedRuntimeUpdates()
    engine = Engine.build(
        "topology-aware",
        machine="box-16",
        config=BOX16,
        runtime_updates=updates,
        decision_log=RecordingDecisionLog(),
    )
    engine.start()
    path = str(tmp_path / "run" / "engine.sock")
    service = EngineService(engine.manager, updates, explanation_document=explanation_document)
    server = EngineApiServer(path, service)
    server.start()
    client = EngineClient(path, timeout=10)
    client.wait_ready(10)
    try:
        yield client, engine, path
    finally:
        client.close()
        server.stop()


def pod_and_container(engine: Engine, name: str, cpu: str | None) -> tuple[Pod, Container]:
    kube = KubernetesPod.from_manifest(manifest(name, cpu))
    pod = kube.sandbox(f"sb-{name}")
    ctr = kube.container("c", f"ctr-{name}", pod_id=pod.id, memory_capacity=engine.memory_capacity)
    return pod, ctr


def refused_huge_container(
    client: EngineClient, engine: Engine
) -> tuple[Container, pytest.ExceptionInfo[EngineCallError]]:
    """A pod asking for 32 CPUs of box-16's, run, and its container's creation refused: the
    container and what was raised."""
    pod, huge = pod_and_container(engine, "huge", "32")
    client.run_pod_sandbox(pod)
    with pytest.raises(EngineCallError) as caught:
        client.create_container(pod, huge)
    return huge, caught


def test_a_lifecycle_through_the_socket(served: tuple[EngineClient, Engine, str]) -> None:
    client, engine, path = served
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    be_pod, be = pod_and_container(engine, "be", None)
    assert client.run_pod_sandbox(be_pod) == []
    result = client.create_container(be_pod, be)
    shared = result.adjustment.resources.cpus
    assert shared is not None and result.updates == ()
    client.post_create_container(be_pod, be.with_state(ContainerState.CREATED))
    client.start_container(be_pod, be.with_state(ContainerState.CREATED))
    client.post_start_container(be_pod, be.with_state(ContainerState.RUNNING))
    g_pod, g = pod_and_container(engine, "g", "2")
    client.run_pod_sandbox(g_pod)
    result = client.create_container(g_pod, g)
    exclusive = result.adjustment.resources.cpus
    assert exclusive is not None and len(exclusive) == 2
    # the BestEffort container's shared pool shrinks: an update in the reply
    (update,) = result.updates
    assert update.container_id == be.id and update.resources.cpus == shared - exclusive
    policy, description, pods, containers = client.describe()
    assert policy == "topology-aware" and description is not None
    assert {p.id for p in pods} == {be_pod.id, g_pod.id}
    assert {c.id: c.cpus for c in containers} == {be.id: shared - exclusive, g.id: exclusive}
    # removing the exclusive pod: the updates the engine makes on this call are in the reply
    updates = client.stop_container(g_pod, g) + client.remove_pod_sandbox(g_pod)
    assert engine.container_by_id(g.id) is None
    grown = engine.container_by_id(be.id)
    assert grown is not None and grown.cpus == shared
    assert all(u.container_id == be.id for u in updates)


def test_refusals_and_bad_messages_are_statuses(
    served: tuple[EngineClient, Engine, str],
) -> None:
    import grpc

    client, engine, _ = served
    huge, caught = refused_huge_container(client, engine)
    assert caught.value.code is grpc.StatusCode.FAILED_PRECONDITION
    assert "huge" in caught.value.reason
    assert engine.container_by_id(huge.id) is None
    with pytest.raises(EngineCallError) as bad:
        client._call("RunPodSandbox", pb.PodRequest(), pb.Updates)
    assert bad.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert bad.value.reason == "pod.id: missing"


def test_negative_values_of_unsigned_settings_are_invalid_arguments(
    served: tuple[EngineClient, Engine, str],
) -> None:
    """CPU shares and periods are unsigned in OCI and NRI: a negative one used to be taken
    (and held) as it was; a negative quota still means "no limit"."""
    import grpc

    client, engine, _ = served
    pod = pb.Pod(id="sb-neg", name="neg", namespace="default", uid="uid-neg")
    bad = {
        "cpu_shares": (pb.Resources(cpu_shares=-100), "container.resources.cpu_shares: -100"),
        "cpu_period": (pb.Resources(cpu_period=-1), "container.resources.cpu_period: -1"),
        "hugepages": (
            pb.Resources(hugepage_limits={"2MB": -2}),
            "container.resources.hugepage_limits['2MB']: -2",
        ),
    }
    for resources, reason in bad.values():
        ctr = pb.Container(id="ctr-neg", name="c", resources=resources)
        with pytest.raises(EngineCallError) as caught:
            client._call(
                "CreateContainer",
                pb.ContainerRequest(pod=pod, container=ctr),
                pb.CreateContainerReply,
            )
        assert caught.value.code is grpc.StatusCode.INVALID_ARGUMENT
        assert caught.value.reason == f"{reason} is negative"
    assert engine.container_by_id("ctr-neg") is None and engine.pods() == []
    ok = pb.Container(id="ctr-neg", name="c", resources=pb.Resources(cpu_quota=-1))
    client._call(
        "CreateContainer", pb.ContainerRequest(pod=pod, container=ok), pb.CreateContainerReply
    )
    assert engine.container_by_id("ctr-neg") is not None


def test_explain_says_why_a_container_sits_where_it_does_or_was_refused(
    served: tuple[EngineClient, Engine, str],
) -> None:
    import grpc

    client, engine, _ = served
    g_pod, g = pod_and_container(engine, "g", "2")
    client.run_pod_sandbox(g_pod)
    exclusive = client.create_container(g_pod, g).adjustment.resources.cpus
    placed = client.explain("default/g/c")
    assert placed == explanation_document(engine.explain(g.id))  # the daemon's document
    assert placed["format"] == EXPLAIN_FORMAT and placed["verdict"] == "placed"
    assert (placed["namespace"], placed["pod"], placed["container"]) == ("default", "g", "c")
    assert placed["container_id"] == g.id and str(exclusive) in placed["placement"]
    huge, _ = refused_huge_container(client, engine)
    refused = client.explain(huge.id)  # one of the last refused
    assert refused["verdict"] == "refused" and refused["refusal"].startswith("create-container")
    with pytest.raises(EngineCallError) as unknown:
        client.explain("nope")
    assert unknown.value.code is grpc.StatusCode.NOT_FOUND
    assert "no container 'nope'" in unknown.value.reason
    for blank in ("", "  "):  # no container named at all: the request is bad (was NOT_FOUND)
        with pytest.raises(EngineCallError) as empty:
            client.explain(blank)
        assert empty.value.code is grpc.StatusCode.INVALID_ARGUMENT
        assert empty.value.reason == "container: no container given"


def test_explain_without_a_document_maker_is_unimplemented(tmp_path: Path) -> None:
    import grpc

    updates = RoutedRuntimeUpdates()
    engine = Engine.build("topology-aware", machine="box-16", runtime_updates=updates)
    engine.start()
    path = str(tmp_path / "engine.sock")
    server = EngineApiServer(path, EngineService(engine.manager, updates))
    server.start()
    try:
        with EngineClient(path, timeout=10) as client:
            client.wait_ready(10)
            with pytest.raises(EngineCallError) as caught:
                client.explain("anything")
        assert caught.value.code is grpc.StatusCode.UNIMPLEMENTED
    finally:
        server.stop()


def test_scheduling_classes_the_messages_cannot_carry_go_to_the_host_controller(
    tmp_path: Path,
) -> None:
    """An ``Adjustment`` message has no scheduling class: the engine behind the API must not
    put one there (it was lost silently) but have the host controller apply it once the
    container's process runs (PostStartContainer with its pid)."""
    updates, host = RoutedRuntimeUpdates(), InMemoryHostControl()
    config = {
        **BOX16,
        "schedulingClasses": [{"name": "rt", "policy": "fifo", "priority": 50}],
        "namespaceSchedulingClasses": {"default": "rt"},
    }
    engine = Engine.build(
        "topology-aware",
        machine="box-16",
        config=config,
        runtime_updates=updates,
        host_control=host,
        decision_log=RecordingDecisionLog(),
    )
    engine.start()
    path = str(tmp_path / "engine.sock")
    server = EngineApiServer(path, EngineService(engine.manager, updates))
    server.start()
    try:
        with EngineClient(path, timeout=10) as client:
            client.wait_ready(10)
            pod, ctr = pod_and_container(engine, "rt", None)
            client.run_pod_sandbox(pod)
            client.create_container(pod, ctr)
            client.start_container(pod, ctr.with_state(ContainerState.CREATED))
            assert host.settings == {}  # no process yet
            running = attrs.evolve(ctr.with_state(ContainerState.RUNNING), pid=4242)
            client.post_start_container(pod, running)
    finally:
        server.stop()
    scheduling = host.settings[ctr.id].scheduling
    assert scheduling is not None and (scheduling.policy.value, scheduling.priority) == ("fifo", 50)


def test_reconfigure_queues_its_updates_for_take_updates(
    served: tuple[EngineClient, Engine, str],
) -> None:
    client, engine, _ = served
    pod, be = pod_and_container(engine, "be", None)
    client.run_pod_sandbox(pod)
    shared = client.create_container(pod, be).adjustment.resources.cpus
    assert shared is not None
    first = min(shared)  # reserving it takes it from be's pool
    outcome = client.reconfigure(f"reservedResources: {{cpu: 'cpuset:0,{first}'}}")
    assert outcome.applied and outcome.updates >= 1
    taken = client.take_updates(wait=5)
    assert [u.container_id for u in taken] == [be.id]
    assert taken[0].resources.cpus is not None and first not in taken[0].resources.cpus
    assert client.take_updates(wait=0) == []
    typo = client.reconfigure("reservedResources: {cpus: 'cpuset:0'}")
    assert not typo.applied and "unknown field" in typo.reason


def test_abandoned_take_updates_free_the_server_threads(
    served: tuple[EngineClient, Engine, str],
) -> None:
    """A long-poll whose client gave up (a short deadline, as a Go agent's context may have)
    used to hold one of the server's 4 threads for its whole wait: four of them stopped every
    other call for up to a minute."""
    client, engine, path = served
    for _ in range(4):
        with pytest.raises(EngineCallError, match="DEADLINE_EXCEEDED"):
            client._call(
                "TakeUpdates", pb.TakeUpdatesRequest(wait_seconds=30), pb.Updates, timeout=0.2
            )
    started = time.monotonic()
    with EngineClient(path, timeout=5) as other:
        assert other.describe()[0] == "topology-aware"
    assert time.monotonic() - started < 3
    # an update made meanwhile is not lost to a poll nobody waits for any more
    pod, be = pod_and_container(engine, "be", None)
    client.run_pod_sandbox(pod)
    shared = client.create_container(pod, be).adjustment.resources.cpus
    assert shared is not None
    assert client.reconfigure(f"reservedResources: {{cpu: 'cpuset:0,{min(shared)}'}}").applied
    assert [u.container_id for u in client.take_updates(wait=5)] == [be.id]


def test_live_polls_leave_a_thread_for_other_calls(
    served: tuple[EngineClient, Engine, str],
) -> None:
    """Polls still waiting hold at most all but one of the server's 4 threads: a fourth
    poll answers at once with what is queued, and other calls are served meanwhile."""
    import threading

    _, _, path = served
    ended: list[float] = []

    def poll() -> None:
        with EngineClient(path, timeout=30) as waiting:
            waiting.take_updates(wait=3)
            ended.append(time.monotonic())

    started = time.monotonic()
    polls = [threading.Thread(target=poll) for _ in range(3)]
    for thread in polls:
        thread.start()
    time.sleep(1.0)  # the three wait on the server (a loaded CI machine is slow to connect)
    with EngineClient(path, timeout=5) as fourth:
        assert fourth.take_updates(wait=3) == []  # not waiting: the last free thread
    with EngineClient(path, timeout=5) as other:
        assert other.describe()[0] == "topology-aware"
    assert time.monotonic() - started < 2.5  # neither call waited for the polls
    for thread in polls:
        thread.join(10)
    assert len(ended) == 3 and min(ended) - started >= 2.5  # those three waited their time


def test_the_hand_written_client_speaks_to_grpcio(
    served: tuple[EngineClient, Engine, str],
) -> None:
    _, engine, path = served
    pod, _ = pod_and_container(engine, "be", None)
    request = pb.PodRequest(pod=pod_to_pb(pod)).SerializeToString()
    reply = h2call.unary_call(path, "/nrirp.engine.v1.Engine/RunPodSandbox", request, 5)
    assert pb.Updates.FromString(reply) == pb.Updates()
    describe = h2call.unary_call(path, "/nrirp.engine.v1.Engine/Describe", b"", 5)
    fields = protowire.fields(describe)
    assert (1, b"topology-aware") in fields
    with pytest.raises(h2call.CallFailed) as failed:
        h2call.unary_call(path, "/nrirp.engine.v1.Engine/RunPodSandbox", b"", 5)
    assert failed.value.status == 3 and failed.value.message == "pod.id: missing"
    with pytest.raises(h2call.CallFailed) as unknown:
        h2call.unary_call(path, "/nrirp.engine.v1.NriV01/Invoke", b"", 5)
    assert unknown.value.status == 12  # UNIMPLEMENTED: this server has no v0.1 handler


def test_no_server_is_unreachable_and_a_live_one_is_not_replaced(
    served: tuple[EngineClient, Engine, str], tmp_path: Path
) -> None:
    _, engine, path = served
    with pytest.raises(h2call.Unreachable):
        h2call.unary_call(str(tmp_path / "none.sock"), "/x/y", b"", 1)
    dead = tmp_path / "dead.sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(dead))
    listener.close()  # a socket file nobody listens on
    with pytest.raises(h2call.Unreachable):
        h2call.unary_call(str(dead), "/x/y", b"", 1)
    second = EngineApiServer(str(dead), EngineService(engine.manager, RoutedRuntimeUpdates()))
    second.start()  # a dead server's socket is replaced
    second.stop()
    with pytest.raises(SocketInUseError, match="another server answers on"):
        EngineApiServer(path, EngineService(engine.manager, RoutedRuntimeUpdates())).start()


def test_messages_round_trip() -> None:
    resources = LinuxResources(
        cpu_shares=0,
        cpu_quota=-1,
        cpus=CPUSet.parse("0-3"),
        memory_limit=1 << 30,
        hugepage_limits={"2MB": 2 << 20},
        unified={"memory.high": "max"},
        rdt_class="gold",
    )
    assert resources_from_pb(resources_to_pb(resources)) == resources
    assert resources_from_pb(pb.Resources()) == LinuxResources()  # unset stays unset
    pod = Pod(id="p", name="n", uid="u", namespace="ns", cgroup_parent="/kubepods/podu")
    assert pod_from_pb(pod_to_pb(pod)) == pod
    ctr = Container(
        id="c",
        pod_id="p",
        name="app",
        state=ContainerState.RUNNING,
        resources=resources,
        oom_score_adj=-997,
        pid=7,
    )
    assert container_from_pb(container_to_pb(ctr)) == ctr


def test_replies_are_read_as_sent_requests_are_checked() -> None:
    """What the engine holds (``Describe``) and sends back is read as it is, so a client can
    always see it; only a request's settings are checked."""
    held = Container(id="c", pod_id="p", name="app", resources=LinuxResources(cpu_shares=-2))
    msg = container_to_pb(held)
    assert container_from_pb(msg, check=False) == held
    with pytest.raises(ValueError, match=r"container\.resources\.cpu_shares: -2 is negative"):
        container_from_pb(msg)
    with pytest.raises(ValueError, match=r"^resources\.cpu_realtime_period: -1 is negative$"):
        resources_from_pb(pb.Resources(cpu_realtime_period=-1))


def test_requests_the_engine_cannot_use_are_invalid_arguments(
    served: tuple[EngineClient, Engine, str],
) -> None:
    """A request that does not decode (a string that is not UTF-8: grpcio's own answer was
    INTERNAL, "Exception deserializing request!", the status of a bug, and nothing logged), a
    blank id (taken, and then no ``Explain`` could name it) and a container of another pod
    than the request's (refused as "unknown pod", FAILED_PRECONDITION: a Go agent failed the
    creation as if the policy had refused it) are bad messages."""
    import grpc

    client, engine, _ = served
    raw = client._channel.unary_unary("/nrirp.engine.v1.Engine/CreateContainer")
    pod = pb.Pod(id="sb-bad", name="bad", namespace="default", uid="uid-bad")
    not_utf8 = pb.ContainerRequest(pod=pod).SerializeToString() + b"\x12\x04\x0a\x02\xff\xfe"
    with pytest.raises(grpc.RpcError) as undecodable:
        raw(not_utf8, timeout=10)
    assert undecodable.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert undecodable.value.details().startswith(
        "request: cannot decode nrirp.engine.v1.ContainerRequest: "
    )
    bad = {
        "container.id: missing": pb.ContainerRequest(
            pod=pod, container=pb.Container(id=" \t", name="c")
        ),
        "pod.id: missing": pb.ContainerRequest(
            pod=pb.Pod(id="  ", name="bad"), container=pb.Container(id="ctr-bad", name="c")
        ),
        "container.pod_id: 'sb-other' is not the request's pod 'sb-bad'": pb.ContainerRequest(
            pod=pod, container=pb.Container(id="ctr-bad", pod_id="sb-other", name="c")
        ),
    }
    for reason, request in bad.items():
        with pytest.raises(EngineCallError) as caught:
            client._call("CreateContainer", request, pb.CreateContainerReply)
        assert (caught.value.code, caught.value.reason) == (
            grpc.StatusCode.INVALID_ARGUMENT,
            reason,
        )
    other_pods = pb.Container(id="ctr-bad", pod_id="sb-other", name="c")
    with pytest.raises(EngineCallError) as update:
        client._call(
            "UpdateContainer", pb.UpdateContainerRequest(pod=pod, container=other_pods), pb.Updates
        )
    assert update.value.code is grpc.StatusCode.INVALID_ARGUMENT
    assert engine.containers() == [] and engine.pods() == []
