"""Restart, reconfiguration, resize, synchronize, config fields and exports."""

from __future__ import annotations

import attrs
import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import ContainerState, LinuxResources, shares_from_millis
from nrirp.domain.pipeline import OperationFailedError

from .support import GiB, config, make_container, make_pod, make_rig, tiny_machine


def _workload(rig: object) -> list[object]:
    run = rig.run  # type: ignore[attr-defined]
    return [
        run("be", "BestEffort")[1],
        run("bu", cpu=700)[1],
        run("bul", cpu=300, limit=900, memory=GiB)[1],
        run("g1", "Guaranteed", cpu=1000)[1],
        run("g2", "Guaranteed", cpu=2000, memory=2 * GiB)[1],
        run("gf", "Guaranteed", cpu=1500)[1],
        run("ks", cpu=100, namespace="kube-system")[1],
    ]


def _state(rig: object) -> dict[str, tuple[str, str, dict[str, str]]]:
    manager = rig.manager  # type: ignore[attr-defined]
    return {
        c.id: (str(c.cpus), str(c.mems), dict(c.tags))
        for c in manager.containers()
        if c.state.holds_resources
    }


@pytest.mark.parametrize("machine", ["box-16", "server-112-pmem", "sparse-8s-4096"])
def test_restart_gives_the_same_allocations(machine: str) -> None:
    rig = make_rig(machine)
    _workload(rig)
    before = _state(rig)
    again = make_rig(machine, store=rig.store, clock=rig.clock)
    assert _state(again) == before
    assert again.updates.updates == []  # nothing moved
    old, new = rig.alloc, again.alloc
    assert new.supply.sharable == old.supply.sharable
    assert new.supply.shared_granted == old.supply.shared_granted
    assert new.supply.reserved_granted == old.supply.reserved_granted
    assert {c: g.memory for c, g in new.grants.items()} == {
        c: g.memory for c, g in old.grants.items()
    }
    # and the restarted policy keeps deciding the same way
    a = rig.run("next", "Guaranteed", cpu=1000)[1]
    b = again.run("next", "Guaranteed", cpu=1000)[1]
    assert rig.cpus(a) == again.cpus(b)


def test_restart_reallocates_containers_whose_saved_grant_no_longer_fits() -> None:
    rig = make_rig("box-16")
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=1000)
    # another process of ours wrote a grant for a pool that does not exist
    broken = attrs.evolve(rig.ctr(ctr), tags={**rig.tags(ctr), "topology-aware.pool": "gone"})
    rig.manager.cache.put_container(broken)
    rig.manager._save()  # persist the edited tag
    again = make_rig("box-16", store=rig.store, clock=rig.clock)
    assert again.pool(ctr) != "gone" and len(again.cpus(ctr)) == 1


def test_synchronize_allocates_new_and_releases_gone() -> None:
    rig = make_rig("box-16")
    pod_a, a, _ = rig.run("a", "Guaranteed", cpu=2000)
    pod_b = make_pod("b", "Guaranteed")
    b = attrs.evolve(
        make_container(pod_b, cpu=1000, limit=1000, memory=GiB), state=ContainerState.RUNNING
    )
    updates = rig.manager.synchronize([pod_b], [b])
    assert rig.manager.container(a.id) is None and a.id not in rig.alloc.grants
    assert rig.kind(b) == "exclusive" and len(rig.cpus(b)) == 1
    assert {u.container_id for u in updates} == {b.id}
    del pod_a


def test_reconfigure_keeps_exclusive_cpus_that_stay_available() -> None:
    rig = make_rig("box-16")
    _, g, _ = rig.run("g", "Guaranteed", cpu=2000)
    _, s, _ = rig.run("s", cpu=500)
    kept = rig.cpus(g)
    outcome = rig.manager.reconfigure(config(reservedResources={"cpu": "cpuset:15"}))
    assert outcome.applied, outcome.reason
    assert rig.cpus(g) == kept
    assert rig.alloc.resources.reserved == CPUSet.of(15)
    assert not rig.cpus(s) & CPUSet.of(15)


def test_reconfigure_moves_what_must_move() -> None:
    rig = make_rig("box-16")
    _, g, _ = rig.run("g", "Guaranteed", cpu=2000)
    old = rig.cpus(g)
    outcome = rig.manager.reconfigure(config(availableResources={"cpu": f"exclude-cpuset:{old}"}))
    assert outcome.applied, outcome.reason
    assert len(rig.cpus(g)) == 2 and not rig.cpus(g) & old


def test_reconfigure_refuses_and_changes_nothing_when_it_cannot_fit() -> None:
    rig = make_rig("box-16")
    conts = [rig.run(f"g{i}", "Guaranteed", cpu=2000)[1] for i in range(3)]
    before = _state(rig)
    alloc = rig.alloc
    outcome = rig.manager.reconfigure(config(availableResources={"cpu": "cpuset:0-4"}))
    assert not outcome.applied
    assert "cannot keep" in outcome.reason and "exclusive CPUs" in outcome.reason
    assert rig.alloc is alloc and _state(rig) == before
    assert len(conts) == 3


def test_bad_config_is_refused_at_start_with_the_reason() -> None:
    with pytest.raises(OperationFailedError, match="reserves every available CPU"):
        make_rig(tiny_machine(2), config(reservedResources={"cpu": "cpuset:0-1"}))
    with pytest.raises(OperationFailedError, match="not among the available"):
        make_rig(
            "box-16",
            config(availableResources={"cpu": "cpuset:0-7"}, reservedResources={"cpu": "cpuset:9"}),
        )


def test_available_resources_forms() -> None:
    assert make_rig(
        "box-16", config(availableResources={"cpu": "cpuset:2-9"})
    ).alloc.resources.available == CPUSet.parse("2-9")
    rig = make_rig("box-16", config(availableResources={"cpu": "exclude-cpuset:0-3"}))
    assert rig.alloc.resources.available == CPUSet.parse("4-15")
    rig = make_rig("box-16", config(availableResources={"cpu": 6}))
    assert len(rig.alloc.resources.available) == 6
    rig = make_rig("box-16", config(reservedResources={"cpu": 2}))
    assert len(rig.alloc.resources.reserved) == 2


def test_memory_limits_from_available_and_reserved_memory() -> None:
    rig = make_rig(
        "box-16",
        config(
            availableResources={"memory": "6Gi"}, reservedResources={"cpu": "750m", "memory": "1Gi"}
        ),
    )
    assert rig.alloc.resources.memory_limit == 5 * GiB
    rig.run("a", "Guaranteed", cpu=1000, memory=3 * GiB)
    with pytest.raises(OperationFailedError, match="would exceed the policy's memory"):
        rig.run("b", "Guaranteed", cpu=1000, memory=3 * GiB)


def test_memory_configs_leaving_no_memory_are_refused_at_start() -> None:
    # box-16 has 16 GiB; the refusal names the memory the reservation is taken from
    with pytest.raises(OperationFailedError, match=r"availableResources.memory 0 leaves no"):
        make_rig("box-16", config(availableResources={"memory": "0"}))
    with pytest.raises(
        OperationFailedError,
        match=r"reservedResources.memory 5Gi leaves no memory for containers "
        r"\(of availableResources.memory 4Gi\)",
    ):
        make_rig(
            "box-16",
            config(
                availableResources={"memory": "4Gi"},
                reservedResources={"cpu": "750m", "memory": "5Gi"},
            ),
        )
    with pytest.raises(OperationFailedError, match=r"\(of the machine's 16.0 GiB\)"):
        make_rig("box-16", config(reservedResources={"cpu": "750m", "memory": "16Gi"}))
    rig = make_rig("box-16", config(reservedResources={"cpu": "750m", "memory": "15Gi"}))
    assert rig.alloc.resources.memory_limit == GiB


def test_pin_cpu_and_pin_memory_off_decide_without_setting() -> None:
    rig = make_rig("box-16", config(pinCPU=False, pinMemory=False))
    _, ctr, result = rig.run("g", "Guaranteed", cpu=1000)
    assert result.adjustment.resources.cpus is None and result.adjustment.resources.mems is None
    assert rig.kind(ctr) == "exclusive" and rig.tags(ctr)["topology-aware.exclusive"]


def test_resize_reallocates_preferring_the_old_pool() -> None:
    rig = make_rig("box-16")
    pod, ctr, _ = rig.run("g", "Guaranteed", cpu=1000)
    pool = rig.pool(ctr)
    bigger = LinuxResources(
        cpu_shares=shares_from_millis(2000), cpu_quota=200_000, cpu_period=100_000
    )
    rig.manager.update_container(pod, rig.ctr(ctr), bigger)
    assert rig.pool(ctr) == pool and len(rig.cpus(ctr)) == 2
    smaller = LinuxResources(
        cpu_shares=shares_from_millis(500), cpu_quota=50_000, cpu_period=100_000
    )
    rig.manager.update_container(pod, rig.ctr(ctr), smaller)
    assert rig.kind(ctr) == "shared"


def test_failed_resize_keeps_the_old_grant() -> None:
    rig = make_rig(tiny_machine(3), config(reservedResources={"cpu": "cpuset:0"}))
    pod, ctr, _ = rig.run("g", "Guaranteed", cpu=1000)
    before = (rig.cpus(ctr), dict(rig.tags(ctr)))
    huge = LinuxResources(
        cpu_shares=shares_from_millis(3000), cpu_quota=300_000, cpu_period=100_000
    )
    with pytest.raises(OperationFailedError, match="no pool has 3 exclusive CPUs"):
        rig.manager.update_container(pod, rig.ctr(ctr), huge)
    assert (rig.cpus(ctr), dict(rig.tags(ctr))) == before
    assert rig.alloc.grants[ctr.id].exclusive == before[0]
    assert rig.alloc.supply.sharable[0] == CPUSet.parse("1-2") - before[0]


def test_releasing_everything_returns_the_initial_state() -> None:
    rig = make_rig("server-112-pmem")
    initial = (list(rig.alloc.supply.sharable), list(rig.alloc.supply.isolated))
    created = []
    for name, qos, cpu in (
        ("a", "Guaranteed", 2000),
        ("b", "Burstable", 300),
        ("c", "BestEffort", 0),
    ):
        pod, ctr, _ = rig.run(name, qos, cpu=cpu, memory=GiB if qos != "BestEffort" else None)
        created.append((pod, ctr))
    for pod, ctr in created:
        rig.stop(pod, ctr)
    supply = rig.alloc.supply
    assert (list(supply.sharable), list(supply.isolated)) == initial
    assert set(supply.shared_granted) == {0} and set(supply.reserved_granted) == {0}
    assert rig.alloc.grants == {} and rig.alloc.memory.owners() == ()


def test_topology_zones_metrics_and_describe() -> None:
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    _, g, _ = rig.run("g", "Guaranteed", cpu=2000)
    rig.run("s", cpu=500)
    zones = {z.name: z for z in rig.manager.topology_zones()}
    assert set(zones) == {p.name for p in rig.alloc.tree.pools}
    root = zones["root"]
    assert root.type == "virtual node" and root.parent == ""
    assert zones["NUMA node #0"].parent == "socket #0" and zones["NUMA node #0"].type == "numa node"
    cpu = {r.name: r for r in root.resources}["cpu"]
    assert (cpu.capacity, cpu.allocatable) == (16000, 15000)
    assert cpu.available == 1000 * (15 - 2) - 500
    attrs_ = {a.name: a.value for a in zones["NUMA node #0"].attributes}
    assert attrs_["reserved cpuset"] == "0" and attrs_["memory set"] == "0"
    samples = {(m.name, m.labels): m.value for m in rig.manager.policy_metrics()}
    assert (
        samples[("nri_policy_topologyaware_zone_cpu_shared_assigned", (("zone", "root"),))] == 500
    )
    assert samples[("nri_policy_topologyaware_zone_container_count", (("zone", "root"),))] == 2
    described = rig.manager.describe()
    grants = {cid: grant for p in described["pools"] for cid, grant in p["grants"].items()}
    assert g.id in grants and described["reserved"] == "0"
    # named as everywhere (docs/core.md): the container's namespace, pod and name
    assert {k: grants[g.id][k] for k in ("namespace", "pod", "container")} == {
        "namespace": "default",
        "pod": "g",
        "container": g.name,
    }


def _shared_fits(rig: object) -> None:
    """Every pool's shared grants fit its shared CPUs."""
    supply = rig.alloc.supply  # type: ignore[attr-defined]
    for pool in rig.alloc.tree.pools:  # type: ignore[attr-defined]
        assert supply.shared_granted[pool.id] <= 1000 * len(supply.sharable[pool.id]), pool


def test_reconfigure_moves_shared_grants_the_new_config_leaves_no_room_for() -> None:
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    conts = [rig.run(f"b{i}", cpu=1000, limit=1000, memory=GiB)[1] for i in range(12)]
    outcome = rig.manager.reconfigure(config(reservedResources={"cpu": "cpuset:0-2"}))
    assert outcome.applied, outcome.reason
    _shared_fits(rig)
    assert all(not rig.cpus(c) & CPUSet.parse("0-2") for c in conts)
    moved = [n for n in rig.log.notices if "cannot hold" in n.message]
    assert moved, "the containers that had to move are named"


def test_reconfigure_refuses_a_config_whose_shared_cpus_cannot_hold_the_grants() -> None:
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    for i in range(15):
        rig.run(f"b{i}", cpu=1000, limit=1000)
    before = _state(rig)
    alloc = rig.alloc
    outcome = rig.manager.reconfigure(config(reservedResources={"cpu": "cpuset:0-2"}))
    assert not outcome.applied
    assert "cannot keep" in outcome.reason and "1000m shared CPU" in outcome.reason
    assert rig.alloc is alloc and _state(rig) == before
    _shared_fits(rig)


def test_reconfigure_moves_reserved_containers_to_the_new_reserved_cpus() -> None:
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    _, k, _ = rig.run("k", cpu=100, namespace="kube-system")
    assert (rig.pool(k), rig.cpus(k), rig.mems(k)) == ("root", CPUSet.of(0), CPUSet.parse("0-3"))
    outcome = rig.manager.reconfigure(config(reservedResources={"cpu": "cpuset:8"}))
    assert outcome.applied, outcome.reason
    assert (rig.pool(k), rig.cpus(k), rig.mems(k)) == ("root", CPUSet.of(8), CPUSet.parse("0-3"))


def test_reconfigure_with_fewer_reserved_cpus_moves_the_overflow_to_shared_cpus() -> None:
    """Reserved containers the new reserved CPUs cannot hold run on shared CPUs instead of
    refusing the configuration or squeezing onto the reserved ones."""
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0-1"}))
    ks = [rig.run(f"k{i}", cpu=800, limit=1000, namespace="kube-system")[1] for i in range(2)]
    assert [rig.kind(k) for k in ks] == ["reserved", "reserved"]
    outcome = rig.manager.reconfigure(config(reservedResources={"cpu": "cpuset:0"}))
    assert outcome.applied, outcome.reason
    assert [rig.kind(k) for k in ks] == ["reserved", "shared"]
    assert rig.cpus(ks[0]) == CPUSet.of(0) and not rig.cpus(ks[1]) & CPUSet.of(0)


CLASSES = {
    "cpuClasses": [{"name": "powersave"}],
    "sharedPoolCPUClass": "powersave",
}


def test_the_host_assignment_changes_only_with_classes_or_exclusive_cpus() -> None:
    """CPU classes go to CPUs: while shared containers come and go, the assignment stays
    the same object (the host enforcer then compares nothing); an exclusive grant, a new
    class or a restart give the CPUs their classes again."""
    rig = make_rig("box-16", config(CLASSES))
    first = rig.policy.host_assignment()
    conts = [rig.run(f"b{i}", cpu=100, limit=200)[1] for i in range(3)]
    assert rig.policy.host_assignment() is first
    shared = rig.alloc.supply.sharable[rig.alloc.tree.top.id]
    assert first.cpu_classes == {"powersave": shared}
    assert first.interrupts is not None and first.interrupts.avoid == CPUSet()
    _, excl, _ = rig.run("g", "Guaranteed", cpu=2000)
    second = rig.policy.host_assignment()
    assert second.cpu_classes["powersave"] == shared - rig.cpus(excl)
    assert second.interrupts is not None and second.interrupts.avoid == rig.cpus(excl)
    again = make_rig("box-16", config(CLASSES), store=rig.store, clock=rig.clock)
    assert again.policy.host_assignment() == second
    outcome = again.manager.reconfigure(
        config(
            {**CLASSES, "cpuClasses": [{"name": "powersave"}, {"name": "eco"}]},
            sharedPoolCPUClass="eco",
        )
    )
    assert outcome.applied
    assert list(again.policy.host_assignment().cpu_classes) == ["eco"]
    assert {again.tags(c)["topology-aware.cpu-class"] for c in conts} == {"eco"}


@pytest.mark.parametrize("restart", [False, True])
def test_reconfigure_takes_containers_over_in_the_same_order_as_a_restart(restart: bool) -> None:
    """A restart between a resize and a reconfiguration changes nothing: both take the
    containers over in cache order (a resize re-inserts its grant, so grant order differs),
    keeping first what can be kept."""
    rig = make_rig("box-16")
    created = [rig.run(f"s{i}", cpu=100, limit=200, memory=GiB) for i in range(4)]
    assert [rig.pool(c) for _, c, _ in created] == [f"NUMA node #{n}" for n in (1, 2, 3, 0)]
    pod, resized, _ = created[1]
    smaller = LinuxResources(
        cpu_shares=shares_from_millis(150), cpu_quota=20_000, cpu_period=100_000, memory_limit=GiB
    )
    rig.manager.update_container(pod, rig.ctr(resized), smaller)
    if restart:
        rig = make_rig("box-16", store=rig.store, clock=rig.clock)
    # the pools of NUMA nodes 2 and 3 go away: s0 and s3 stay, then s1 and s2 are placed
    # anew, s1 first (to the node with more room), s2 next (to the one with fewer containers)
    outcome = rig.manager.reconfigure(config(availableResources={"cpu": "cpuset:0-7"}))
    assert outcome.applied, outcome.reason
    assert [rig.pool(c) for _, c, _ in created] == [
        "NUMA node #1",
        "NUMA node #1",
        "NUMA node #0",
        "NUMA node #0",
    ]


def test_reconfigure_keeps_first_what_can_be_kept() -> None:
    """b's isolated CPU 14 stops being available; c keeps CPU 15 and b does not take it, though
    b comes first and prefers isolated CPUs."""
    rig = make_rig(
        tiny_machine(16, isolated="14-15"), config(reservedResources={"cpu": "cpuset:0"})
    )
    _, b, _ = rig.run("b", "Guaranteed", cpu=1000)
    _, c, _ = rig.run("c", "Guaranteed", cpu=1000)
    assert (rig.cpus(b), rig.cpus(c)) == (CPUSet.of(14), CPUSet.of(15))
    outcome = rig.manager.reconfigure(
        config(
            reservedResources={"cpu": "cpuset:0"}, availableResources={"cpu": "exclude-cpuset:14"}
        )
    )
    assert outcome.applied, outcome.reason
    assert rig.cpus(c) == CPUSet.of(15) and rig.kind(c) == "isolated"
    assert rig.kind(b) == "exclusive" and rig.cpus(b).issubset(CPUSet.parse("1-13"))
