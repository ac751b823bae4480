"""What the policy says: decision-log reasons for containers moved as a side effect, refusal
texts, and which containers a cold-start-done event names."""

from __future__ import annotations

import attrs
import pytest

from nrirp.domain.model import ContainerState
from nrirp.domain.model.annotations import RESOURCE_POLICY_DOMAIN
from nrirp.domain.pipeline import OperationFailedError
from nrirp.domain.policies.topology_aware import COLD_START_DONE
from nrirp.domain.policy import PolicyEvent

from .support import GiB, anno, config, make_container, make_pod, make_rig, tiny_machine


def _reasons(rig: object, container_id: str) -> list[str]:
    return [d.reason for d in rig.log.decisions if d.container_id == container_id]  # type: ignore[attr-defined]


def test_moved_shared_containers_are_logged_with_the_cause() -> None:
    rig = make_rig(tiny_machine(4), config(reservedResources={"cpu": "cpuset:0"}))
    _, s, _ = rig.run("s", "BestEffort")
    pod_e, e, _ = rig.run("e", "Guaranteed", cpu=1000)
    went = rig.cpus(e)
    assert _reasons(rig, s.id)[-1] == (
        f"shared CPUs of socket #0 shrank: CPU {went} went to default/e/c"
    )
    rig.stop(pod_e, e)
    assert _reasons(rig, s.id)[-1] == (
        f"shared CPUs of socket #0 grew: CPU {went} came back from default/e/c"
    )


def test_shared_containers_on_the_reserved_fallback_say_so() -> None:
    rig = make_rig(tiny_machine(2), config(reservedResources={"cpu": "cpuset:0"}))
    _, s, _ = rig.run("s", "BestEffort")
    rig.run("e", "Guaranteed", cpu=1000)
    assert _reasons(rig, s.id)[-1] == (
        "shared CPUs of socket #0 shrank: CPU 1 went to default/e/c "
        "(none left: on the reserved CPUs 0)"
    )


def test_memory_moves_are_logged_with_the_cause() -> None:
    rig = make_rig("box-16")  # 4 GiB per node
    pod = make_pod("p", "Guaranteed", annotations={"resource-policy.nri.io/affinity": "b: [a]"})
    a = make_container(pod, "a", cpu=1000, limit=1000, memory=3 * GiB)
    b = make_container(pod, "b", cpu=1000, limit=1000, memory=2 * GiB)
    rig.manager.run_pod(pod)
    for c in (a, b):
        rig.manager.create_container(pod, c)
        running = attrs.evolve(c, state=ContainerState.RUNNING)
        rig.manager.post_create(pod, running)
        rig.manager.post_start(pod, running)
    widened = rig.mems(b)
    assert len(widened) == 2
    rig.manager.stop_container(pod, rig.ctr(a))
    assert len(rig.mems(b)) == 1
    assert (
        _reasons(rig, b.id)[-1] == f"memory narrowed to NUMA nodes {rig.mems(b)}: default/p/a left"
    )


def test_refusals_count_in_the_right_number() -> None:
    rig = make_rig(tiny_machine(3), config(reservedResources={"cpu": "cpuset:0"}))
    rig.run("a", "Guaranteed", cpu=1000)
    with pytest.raises(OperationFailedError) as failure:
        rig.run("b", "Guaranteed", cpu=2000)
    assert "no pool has 2 exclusive CPUs: best socket #0 has 1 sharable CPU of which" in str(
        failure.value
    )
    with pytest.raises(OperationFailedError) as failure:
        rig.run("c", cpu=1500)
    assert "(1 sharable CPU, 0m used by shared containers)" in str(failure.value)


def test_a_fallback_from_isolated_cpus_names_both_shortages() -> None:
    rig = make_rig(tiny_machine(8, isolated="5-7"), config(reservedResources={"cpu": "cpuset:0"}))
    rig.run("fill", "Guaranteed", cpu=4000)  # 1-4: no sharable CPU left
    with pytest.raises(OperationFailedError) as failure:
        rig.run("p", "Guaranteed", cpu=4000, annotations=anno("prefer-isolated-cpus", "true"))
    message = str(failure.value)
    assert "no pool has 4 exclusive CPUs: best socket #0 has 0 sharable CPUs" in message
    assert "and no pool has 4 free isolated CPUs: best socket #0 has 3 free of its 3 " in message
    with pytest.raises(OperationFailedError) as failure:
        rig.run("r", "Guaranteed", cpu=4000, annotations=anno("require-isolated-cpus", "true"))
    assert str(failure.value) == (
        "create-container container default/r/c: no pool has 4 free isolated CPUs: best "
        "socket #0 has 3 free of its 3 isolated CPUs (require-isolated-cpus)"
    )


def test_require_isolated_cpus_without_whole_cpus_is_said_to_be_ignored() -> None:
    """Nothing to isolate (no whole CPUs): the container runs as it would without the
    annotation, and the notices say why it was ignored; false, and a container with whole
    CPUs, say nothing."""
    rig = make_rig("box-16", config(reservedPoolNamespaces=["infra"]))
    required = anno("require-isolated-cpus", "true")
    _, burstable, _ = rig.run("b", "Burstable", cpu=500, annotations=required)
    _, small, _ = rig.run("g", "Guaranteed", cpu=500, memory=GiB, annotations=required)
    _, reserved, _ = rig.run(
        "r", namespace="infra", cpu=100, annotations=anno("require-isolated-cpus", "1", "c")
    )
    rig.run("f", "Burstable", cpu=500, annotations=anno("require-isolated-cpus", "false"))
    assert [rig.kind(c) for c in (burstable, small, reserved)] == ["shared", "shared", "reserved"]
    key = f"require-isolated-cpus.{RESOURCE_POLICY_DOMAIN}"
    shared = (
        "the container has no whole CPUs to isolate (BestEffort, Burstable or Guaranteed "
        "below 1 CPU): it runs on shared CPUs"
    )
    assert [(n.source, n.message) for n in rig.log.notices] == [
        ("annotations", f"container c: annotation {key}='true' ignored: {shared}"),
        ("annotations", f"container c: annotation {key}='true' ignored: {shared}"),
        (
            "annotations",
            f"container c: annotation {key}/container.c='1' ignored: "
            "the container runs on the reserved CPUs",
        ),
    ]


def test_a_container_that_cannot_be_synchronized_is_named_by_its_label() -> None:
    rig = make_rig(tiny_machine(2), config(reservedResources={"cpu": "cpuset:0"}))
    pod = make_pod("big", "Guaranteed")
    big = attrs.evolve(
        make_container(pod, cpu=4000, limit=4000, memory=GiB), state=ContainerState.RUNNING
    )
    rig.manager.synchronize([pod], [big])
    texts = [n.message for n in rig.log.notices]
    assert any(
        t.startswith("cannot allocate default/big/c: no pool has 4 exclusive") for t in texts
    )


def test_cold_start_event_names_a_container_by_id_or_full_or_pod_name_only() -> None:
    rig = make_rig("server-112-pmem")
    cold = anno("cold-start", "1h")
    _, x, _ = rig.run("x", "Guaranteed", cpu=1000, memory=GiB, annotations=cold)
    _, y, _ = rig.run("y", "Guaranteed", cpu=1000, memory=GiB, annotations=cold)
    pmem = rig.mems(x)
    # a bare container name ("c") would name every container called c: it names none
    rig.manager.inject_event(PolicyEvent(COLD_START_DONE, "test", "c"))
    assert rig.mems(x) == pmem and rig.mems(y) == rig.mems(y)
    assert rig.alloc.grants[x.id].cold_start_until is not None
    assert rig.alloc.grants[y.id].cold_start_until is not None
    assert any("no container in a cold start" in n.message for n in rig.log.notices)
    rig.manager.inject_event(PolicyEvent(COLD_START_DONE, "test", "x/c"))
    assert rig.alloc.grants[x.id].cold_start_until is None
    assert rig.alloc.grants[y.id].cold_start_until is not None
    rig.manager.inject_event(PolicyEvent(COLD_START_DONE, "test", y.id))
    assert rig.alloc.grants[y.id].cold_start_until is None
    assert _reasons(rig, y.id)[-1] == f"cold start ended: memory {rig.mems(y)}"


def test_decision_reasons_read_as_the_grant() -> None:
    rig = make_rig("box-16")
    _, mixed, _ = rig.run("m", "Guaranteed", cpu=1500)
    _, shared, _ = rig.run("s", cpu=250, limit=500)
    _, system, _ = rig.run("k", cpu=100, namespace="kube-system")
    excl = rig.tags(mixed)["topology-aware.exclusive"]
    assert _reasons(rig, mixed.id) == [
        f"mixed cpus {excl} + 500m shared in {rig.pool(mixed)}, memory {rig.mems(mixed)}"
    ]
    assert _reasons(rig, shared.id) == [
        f"shared 250m in {rig.pool(shared)}, memory {rig.mems(shared)}"
    ]
    assert _reasons(rig, system.id) == [
        f"reserved 100m in {rig.pool(system)}, memory {rig.mems(system)}"
    ]
