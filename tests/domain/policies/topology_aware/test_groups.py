"""CPU groups: reserved, shared, exclusive, isolated, mixed; shared pools shrink and grow."""

from __future__ import annotations

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.pipeline import OperationFailedError
from nrirp.domain.topology import CPU, Machine, NumaNode

from .support import GiB, anno, catalogue, config, make_rig, tiny_machine


def ids(updates: object) -> dict[str, str]:
    return {u.container_id: str(u.resources.cpus) for u in updates}  # type: ignore[attr-defined]


def test_default_config_reserves_one_cpu_for_750m() -> None:
    rig = make_rig("box-16")
    res = rig.alloc.resources
    assert len(res.reserved) == 1 and res.reserved.issubset(res.available)
    assert res.available == catalogue("box-16").online


def test_kube_system_gets_the_reserved_cpus_in_the_root_pool() -> None:
    """As in the reference, reserved containers live in the root pool: the reserved CPUs and
    every memory node."""
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:8-9"}))
    _, ks, _ = rig.run("dns", cpu=100, namespace="kube-system", memory=GiB)
    assert rig.cpus(ks) == CPUSet.parse("8-9")
    assert rig.kind(ks) == "reserved" and rig.pool(ks) == "root"
    assert rig.mems(ks) == CPUSet.parse("0-3")
    pmem = make_rig("server-112-pmem")
    _, ks, _ = pmem.run("dns", cpu=100, namespace="kube-system", memory=GiB)
    assert pmem.pool(ks) == "root" and pmem.mems(ks) == CPUSet.parse("0-5")
    assert pmem.cpus(ks) == pmem.alloc.resources.reserved


def test_cpu_preserve_containers_live_in_the_root_pool() -> None:
    rig = make_rig("server-112-pmem")
    _, ctr, _ = rig.run("p", "Guaranteed", cpu=2000, annotations=anno("cpu.preserve", "true"))
    assert rig.kind(ctr) == "preserve" and rig.pool(ctr) == "root"
    assert rig.ctr(ctr).cpus is None and rig.mems(ctr) == CPUSet.parse("0-5")


def test_reserved_containers_fall_back_to_the_shared_cpus_when_reserved_ones_run_out() -> None:
    """The reserved CPUs (one: 1000m) take kube-system containers while they hold them; the
    next one runs on the shared CPUs of a pool chosen as for any shared container (the
    reference's fallback), and a smaller one that fits still gets the reserved CPUs."""
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    reserved = CPUSet.of(0)
    pod_a, a, _ = rig.run("a", cpu=600, limit=1000, namespace="kube-system")
    assert rig.kind(a) == "reserved" and rig.cpus(a) == reserved
    _, b, _ = rig.run("b", cpu=600, limit=1000, memory=GiB, namespace="kube-system")
    assert rig.kind(b) == "shared" and rig.pool(b).startswith("NUMA node #")
    assert not rig.cpus(b) & reserved
    pool = rig.alloc.tree.by_name(rig.pool(b))
    assert pool is not None and rig.cpus(b) == rig.alloc.supply.shared_cpus(pool)
    assert rig.alloc.supply.shared_granted[pool.id] == 600  # accounted as shared
    _, c, _ = rig.run("c", cpu=300, limit=1000, namespace="kube-system")
    assert rig.kind(c) == "reserved" and rig.cpus(c) == reserved
    assert rig.alloc.supply.allocatable_reserved(rig.alloc.tree.top) == 100
    # a restart keeps every grant as it is
    again = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}), store=rig.store)
    assert [again.kind(x) for x in (a, b, c)] == ["reserved", "shared", "reserved"]
    assert again.pool(b) == rig.pool(b) and again.updates.updates == []
    # room again once a leaves: the next one is reserved
    again.stop(pod_a, a)
    _, d, _ = again.run("d", cpu=600, limit=1000, namespace="kube-system")
    assert again.kind(d) == "reserved"


def test_reserved_pool_namespaces_globs_and_prefer_reserved_annotation() -> None:
    rig = make_rig("box-16", config(reservedPoolNamespaces=["infra-*"]))
    _, a, _ = rig.run("a", cpu=200, namespace="infra-logging")
    _, b, _ = rig.run("b", cpu=200, namespace="infra")
    _, c, _ = rig.run("c", cpu=200, annotations=anno("prefer-reserved-cpus", "true"))
    reserved = rig.alloc.resources.reserved
    assert rig.cpus(a) == reserved and rig.kind(a) == "reserved"
    assert rig.kind(b) == "shared" and not rig.cpus(b) & reserved
    assert rig.cpus(c) == reserved
    # an explicit "false" takes a kube-system container off the reserved CPUs
    _, d, _ = rig.run(
        "d", cpu=200, namespace="kube-system", annotations=anno("prefer-reserved-cpus", "false")
    )
    assert rig.kind(d) == "shared" and not rig.cpus(d) & reserved


def test_besteffort_burstable_and_small_guaranteed_share() -> None:
    rig = make_rig("box-16")
    reserved = rig.alloc.resources.reserved
    for name, qos, cpu in (
        ("be", "BestEffort", 0),
        ("bu", "Burstable", 300),
        ("g", "Guaranteed", 500),
    ):
        _, ctr, _ = rig.run(name, qos, cpu=cpu, limit=800 if qos == "Burstable" else None)
        assert rig.kind(ctr) == "shared", name
        assert not rig.cpus(ctr) & reserved
        pool = rig.alloc.tree.by_name(rig.pool(ctr))
        assert pool is not None and rig.cpus(ctr) == rig.alloc.supply.shared_cpus(pool)
        assert rig.mems(ctr) == pool.mems


def test_guaranteed_integer_gets_exclusive_cpus_sliced_from_the_shared_set() -> None:
    rig = make_rig("box-16")
    _, shared, _ = rig.run("be", "BestEffort")
    assert rig.cpus(shared) == CPUSet.parse("4-7") and rig.pool(shared) == "NUMA node #1"
    _, excl, result = rig.run("g1", "Guaranteed", cpu=1000)
    assert rig.kind(excl) == "exclusive" and rig.pool(excl) == "NUMA node #1"
    assert rig.cpus(excl) == CPUSet.of(4) and rig.mems(excl) == CPUSet.of(1)
    # exactly the shared container of that pool moved, in the same request
    assert ids(result.updates) == {shared.id: "5-7"}
    assert rig.cpus(shared) == CPUSet.parse("5-7")
    assert rig.tags(excl)["topology-aware.exclusive"] == "4"


def test_shared_pool_grows_back_when_the_exclusive_container_leaves() -> None:
    rig = make_rig("box-16")
    _, shared, _ = rig.run("be", "BestEffort")
    pod, excl, _ = rig.run("g2", "Guaranteed", cpu=2000)
    assert rig.cpus(shared) == CPUSet.parse("4-7") - rig.cpus(excl)
    assert ids(rig.stop(pod, excl)) == {shared.id: "4-7"}
    assert rig.cpus(shared) == CPUSet.parse("4-7")


def test_updates_only_go_to_containers_whose_cpus_changed() -> None:
    rig = make_rig("box-16")
    # shared containers in every leaf pool
    created = [rig.run(f"be{i}", "BestEffort")[1] for i in range(4)]
    pools = {rig.pool(c) for c in created}
    assert pools == {"NUMA node #0", "NUMA node #1", "NUMA node #2", "NUMA node #3"}
    _, excl, result = rig.run("g", "Guaranteed", cpu=1000)
    moved = {c.id for c in created if rig.pool(c) == rig.pool(excl)}
    assert set(ids(result.updates)) == moved and len(moved) == 1


def test_parent_pool_shared_containers_move_too() -> None:
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0,4"}))
    _, burst, _ = rig.run("bu", "Burstable", cpu=500, memory=GiB)  # unlimited: package level
    # socket #1: no reserved CPUs there, so more shared capacity than socket #0
    assert rig.pool(burst) == "socket #1" and rig.cpus(burst) == CPUSet.parse("8-15")
    _, excl, result = rig.run("g", "Guaranteed", cpu=1000)
    assert rig.pool(excl) == "NUMA node #2"  # most sliceable capacity, lowest id
    assert ids(result.updates) == {burst.id: str(CPUSet.parse("8-15") - rig.cpus(excl))}


def test_mixed_gets_whole_cpus_exclusive_plus_the_shared_set() -> None:
    rig = make_rig("box-16")
    _, mixed, _ = rig.run(
        "mix", "Guaranteed", cpu=2500, annotations=anno("prefer-shared-cpus", "false")
    )
    assert rig.kind(mixed) == "exclusive"  # tagged by its whole CPUs
    assert rig.alloc.grants[mixed.id].kind.value == "mixed"
    pool = rig.alloc.tree.by_name(rig.pool(mixed))
    assert pool is not None
    exclusive = CPUSet.parse(rig.tags(mixed)["topology-aware.exclusive"])
    assert len(exclusive) == 2
    assert rig.cpus(mixed) == exclusive | rig.alloc.supply.shared_cpus(pool)
    assert rig.alloc.supply.shared_granted[pool.id] == 500


def test_fractional_guaranteed_from_two_cpus_is_shared_by_default() -> None:
    rig = make_rig("box-16")
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=2500)
    assert rig.kind(ctr) == "shared"
    pool = rig.alloc.tree.by_name(rig.pool(ctr))
    assert pool is not None and rig.alloc.supply.shared_granted[pool.id] == 2500


def test_fractional_guaranteed_between_one_and_two_cpus_is_mixed() -> None:
    rig = make_rig(tiny_machine(4, isolated="3"), config(reservedResources={"cpu": "cpuset:0"}))
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=1500)
    assert rig.kind(ctr) == "isolated"  # the whole CPU on the isolated one
    assert rig.cpus(ctr) == CPUSet.parse("1-3")  # plus the shared CPUs
    assert rig.alloc.supply.shared_granted[0] == 500
    _, other, _ = rig.run(
        "s", "Guaranteed", cpu=1500, annotations=anno("prefer-shared-cpus", "true")
    )
    assert rig.kind(other) == "shared"


def test_prefer_shared_cpus_config_and_annotation() -> None:
    rig = make_rig("box-16", config(preferSharedCPUs=True))
    _, a, _ = rig.run("a", "Guaranteed", cpu=2000)
    _, b, _ = rig.run("b", "Guaranteed", cpu=2000, annotations=anno("prefer-shared-cpus", "false"))
    assert rig.kind(a) == "shared" and rig.kind(b) == "exclusive"
    rig2 = make_rig("box-16")
    _, c, _ = rig2.run("c", "Guaranteed", cpu=2000, annotations=anno("prefer-shared-cpus", "true"))
    assert rig2.kind(c) == "shared"


def test_isolated_cpus_for_single_cpu_containers() -> None:
    rig = make_rig(tiny_machine(4, isolated="3"), config(reservedResources={"cpu": "cpuset:0"}))
    assert rig.alloc.resources.isolated == CPUSet.of(3)
    _, shared, _ = rig.run("be", "BestEffort")
    assert rig.cpus(shared) == CPUSet.parse("1-2")  # isolated CPUs are not shared
    _, one, result = rig.run("g1", "Guaranteed", cpu=1000)
    assert rig.kind(one) == "isolated" and rig.cpus(one) == CPUSet.of(3)
    assert result.updates == ()  # the shared set did not change
    _, two, _ = rig.run("g2", "Guaranteed", cpu=1000)
    assert rig.kind(two) == "exclusive" and rig.cpus(two) == CPUSet.of(1)


def test_isolated_only_when_the_whole_exclusive_part_fits() -> None:
    rig = make_rig(tiny_machine(6, isolated="5"), config(reservedResources={"cpu": "cpuset:0"}))
    _, two, _ = rig.run(
        "g2", "Guaranteed", cpu=2000, annotations=anno("prefer-isolated-cpus", "true")
    )
    assert rig.kind(two) == "exclusive" and not rig.cpus(two) & CPUSet.of(5)


def test_prefer_isolated_false_config_uses_sharable_cpus() -> None:
    rig = make_rig(
        tiny_machine(4, isolated="3"),
        config(reservedResources={"cpu": "cpuset:0"}, preferIsolatedCPUs=False),
    )
    _, one, _ = rig.run("g1", "Guaranteed", cpu=1000)
    assert rig.kind(one) == "exclusive" and rig.cpus(one) != CPUSet.of(3)


def test_require_isolated_fails_without_isolated_cpus() -> None:
    rig = make_rig("box-16")
    with pytest.raises(OperationFailedError, match="isolated CPUs"):
        rig.run("g1", "Guaranteed", cpu=1000, annotations=anno("require-isolated-cpus", "true"))
    assert rig.alloc.grants == {}


def test_small_node_shared_containers_fall_back_to_reserved_and_return() -> None:
    # this VM's shape: CPU 0 reserved, CPU 1 shared; an exclusive container takes CPU 1
    rig = make_rig(tiny_machine(2), config(reservedResources={"cpu": "cpuset:0"}))
    _, shared, _ = rig.run("be", "BestEffort")
    assert rig.cpus(shared) == CPUSet.of(1)
    pod, excl, result = rig.run("g1", "Guaranteed", cpu=1000)
    assert rig.cpus(excl) == CPUSet.of(1)
    assert ids(result.updates) == {shared.id: "0"}
    assert ids(rig.stop(pod, excl)) == {shared.id: "1"}


def test_exclusive_refused_when_shared_requests_would_not_fit() -> None:
    rig = make_rig(tiny_machine(3), config(reservedResources={"cpu": "cpuset:0"}))
    _, burst, _ = rig.run("bu", "Burstable", cpu=1500, limit=2000)
    with pytest.raises(OperationFailedError) as failure:
        rig.run("g1", "Guaranteed", cpu=1000)
    message = str(failure.value)
    assert "no pool has 1 exclusive CPU: " in message
    assert "socket #0 has 2 sharable CPUs of which 1500m are used by shared containers" in message
    assert list(rig.alloc.grants) == [burst.id]
    assert rig.alloc.supply.sharable[0] == CPUSet.parse("1-2")


def test_shared_request_too_big_names_the_shortage() -> None:
    rig = make_rig(tiny_machine(3), config(reservedResources={"cpu": "cpuset:0"}))
    with pytest.raises(
        OperationFailedError, match=r"no pool has 2500m shared CPU: best socket #0 has 2000m free"
    ):
        rig.run("bu", "Burstable", cpu=2500)


def test_memory_too_big_for_any_pool_is_refused() -> None:
    rig = make_rig("box-16")
    with pytest.raises(OperationFailedError, match=r"no pool has 32\.0 GiB of dram memory"):
        rig.run("g", "Guaranteed", cpu=1000, memory=32 * GiB)
    assert rig.alloc.grants == {}


NEAR_A = """
c:
- scope: {key: pod/namespace, operator: Equals, values: [default]}
  match: {key: pod/name, operator: Equals, values: [a]}
  weight: 1000
"""


def test_memory_pinned_to_the_pool_nodes_and_widened_when_overcommitted() -> None:
    rig = make_rig("box-16")  # 4 GiB per node
    _, a, _ = rig.run("a", "Guaranteed", cpu=1000, memory=3 * GiB)
    pool = rig.alloc.tree.by_name(rig.pool(a))
    assert pool is not None and rig.mems(a) == pool.mems and len(pool.mems) == 1
    # affinity puts b in the same pool; 6 GiB do not fit in one 4 GiB node
    pod_b, b, result = rig.run(
        "b",
        "Guaranteed",
        cpu=1000,
        memory=3 * GiB,
        annotations={"resource-policy.nri.io/affinity": NEAR_A},
    )
    assert rig.pool(b) == rig.pool(a)
    widened = {c.id: rig.mems(c) for c in (a, b) if len(rig.mems(c)) > 1}
    assert widened, "one of them must have been widened"
    assert all(pool.mems < mems for mems in widened.values())
    if a.id in widened:
        assert {u.container_id for u in result.updates} == {a.id}
    # b leaves: a is back on its own node
    rig.stop(pod_b, b)
    assert rig.mems(a) == pool.mems
    assert rig.tags(a)["topology-aware.memory"] == str(pool.mems)


def _socket_of_two_busy_nodes() -> Machine:
    """One package: NUMA node 0 with CPUs 0-4 (0 to be reserved), node 1 with CPUs 5-8."""
    cpus = [
        CPU(id=i, package_id=0, die_id=0, cluster_id=i, core_id=i, node_id=0 if i < 5 else 1)
        for i in range(9)
    ]
    nodes = [
        NumaNode(id=0, cpus=CPUSet.parse("0-4"), memory_bytes=8 * GiB),
        NumaNode(id=1, cpus=CPUSet.parse("5-8"), memory_bytes=8 * GiB),
    ]
    return Machine.build(cpus, nodes)


def test_exclusive_cpus_across_busy_child_pools() -> None:
    """Issue 13 item 6: 4 exclusive CPUs fit the socket (8 sharable, 500m used) though
    neither NUMA node can give 4: they come from both, each node keeping a CPU for its
    shared container (the reference takes them from the socket; we were refusing)."""
    rig = make_rig(_socket_of_two_busy_nodes(), config(reservedResources={"cpu": "cpuset:0"}))
    _, a, _ = rig.run("a", cpu=250, limit=500, memory=GiB)
    _, b, _ = rig.run("b", cpu=250, limit=500, memory=GiB)
    assert {rig.pool(a), rig.pool(b)} == {"NUMA node #0", "NUMA node #1"}
    _, g, _ = rig.run("g", "Guaranteed", cpu=4000)
    exclusive = rig.cpus(g)
    assert rig.pool(g) == "socket #0" and len(exclusive) == 4
    for ctr in (a, b):  # every shared container keeps CPUs of its own node
        pool = rig.alloc.tree.by_name(rig.pool(ctr))
        assert pool is not None and rig.cpus(ctr) == rig.alloc.supply.sharable[pool.id]
        assert rig.cpus(ctr) and rig.cpus(ctr).isdisjoint(exclusive)
        assert rig.cpus(ctr) <= pool.cpus
    # 3 more: the socket has 4 sharable CPUs and 500m used, but each node must keep one
    with pytest.raises(OperationFailedError) as info:
        rig.run("h", "Guaranteed", cpu=3000)
    assert "its child pools keep at least 2 CPUs of them for their shared containers" in str(
        info.value
    )
    _, h, _ = rig.run("h2", "Guaranteed", cpu=2000)  # 2 fit
    assert len(rig.cpus(h)) == 2 and rig.cpus(a) and rig.cpus(b)


@pytest.mark.parametrize("pod_key", ["prefer-isolated-cpus.resource-policy.nri.io/pod", "plain"])
@pytest.mark.parametrize(
    ("pod_value", "container_value", "cpu", "kind"),
    [
        ("true", "false", 1000, "exclusive"),
        ("false", "true", 1000, "isolated"),
        ("true", "false", 2000, "exclusive"),
        ("false", "true", 2000, "isolated"),
        ("true", "false", 1500, "exclusive"),  # mixed: tagged by its whole CPU
        ("false", "true", 1500, "isolated"),
    ],
)
def test_container_level_isolation_preference_beats_the_pod_level_one(
    pod_key: str, pod_value: str, container_value: str, cpu: int, kind: str
) -> None:
    """Issue 13 item 9: `prefer-isolated-cpus/container.NAME` wins over `/pod` and the plain
    key, whichever value each has (the reference's effective annotation)."""
    rig = make_rig(tiny_machine(8, isolated="5-7"), config(reservedResources={"cpu": "cpuset:0"}))
    key = "prefer-isolated-cpus.resource-policy.nri.io"
    annotations = {
        key if pod_key == "plain" else pod_key: pod_value,
        f"{key}/container.c": container_value,
    }
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=cpu, annotations=annotations)
    assert rig.kind(ctr) == kind
    exclusive = CPUSet.parse(rig.tags(ctr)["topology-aware.exclusive"])
    assert exclusive.issubset(CPUSet.parse("5-7")) is (kind == "isolated")
