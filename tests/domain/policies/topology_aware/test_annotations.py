"""Per-container annotations of the topology-aware policy."""

from __future__ import annotations

import pytest

from nrirp.adapters.fakehw.hints import FakeTopologyHints
from nrirp.domain.config.errors import ConfigError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Device,
    IOPriority,
    IOPriorityClass,
    LinuxResources,
    SchedulingPolicy,
)
from nrirp.domain.pipeline import OperationFailedError
from nrirp.domain.policies.topology_aware import COLD_START_DONE
from nrirp.domain.policy import PolicyEvent
from nrirp.domain.topology.hints import TopologyHint

from .support import GiB, anno, catalogue, config, make_rig


def test_hide_hyperthreads_holds_the_cpus_asked_and_shows_one_thread_of_each_core() -> None:
    """The reference allocates the N CPUs asked for and hides the sibling threads: the grant
    holds N hardware threads (what the scheduler accounts), the cpuset shows one per core."""
    rig = make_rig("box-16")  # smt-adjacent: cores are (0,1), (2,3), ...
    hide = anno("hide-hyperthreads", "true")
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=4000, annotations=hide)
    exclusive = CPUSet.parse(rig.tags(ctr)["topology-aware.exclusive"])
    assert len(exclusive) == 4  # 4 CPUs asked, 4 held: 2 whole cores from the allocator
    cores = {rig.machine.core_of(c).cpus for c in exclusive}
    assert len(cores) == 2 and CPUSet().union(*cores) == exclusive
    assert rig.cpus(ctr) == CPUSet.from_ids(c.min() for c in cores)  # one thread of each
    pool = rig.alloc.tree.by_name(rig.pool(ctr))
    assert pool is not None and not rig.alloc.supply.sharable[pool.id] & exclusive
    _, shared, _ = rig.run("s", cpu=200, annotations=hide)
    assert rig.cpus(shared).isdisjoint(exclusive)  # the hidden siblings stay the grant's
    assert all(len(rig.machine.core_of(c).cpus & rig.cpus(shared)) == 1 for c in rig.cpus(shared))
    _, plain, _ = rig.run("p", cpu=200)
    assert rig.cpus(plain).isdisjoint(exclusive)


def test_hide_hyperthreads_fills_a_node_as_the_scheduler_accounts_it() -> None:
    """Every CPU the scheduler counts free can be granted: hiding threads takes no more."""
    rig = make_rig("box-16", config(reservedResources={"cpu": "cpuset:0"}))
    hide = anno("hide-hyperthreads", "true")
    # socket #0 holds CPUs 0-7: 0 reserved, 7 left for exclusive grants of 3 + 3 + 1
    grants = [
        rig.run(f"g{i}", "Guaranteed", cpu=cpu, annotations=hide)[1]
        for i, cpu in enumerate((3000, 3000, 1000, 3000, 3000, 2000))
    ]
    held = [CPUSet.parse(rig.tags(g)["topology-aware.exclusive"]) for g in grants]
    assert [len(h) for h in held] == [3, 3, 1, 3, 3, 2]
    assert len(CPUSet().union(*held)) == 15  # every CPU but the reserved one, none twice
    for g, h in zip(grants, held, strict=True):
        assert rig.cpus(g) == CPUSet.from_ids(min(rig.machine.core_of(c).cpus & h) for c in h)


def test_hide_hyperthreads_on_the_112_cpu_machine_shows_one_thread_of_the_core() -> None:
    rig = make_rig("server-112-pmem")
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=2000, annotations=anno("hide-hyperthreads", "true"))
    exclusive = CPUSet.parse(rig.tags(ctr)["topology-aware.exclusive"])
    assert len(exclusive) == 2  # the allocator's whole core for an even request
    assert exclusive == rig.machine.thread_siblings(exclusive.min())
    assert rig.cpus(ctr) == CPUSet.of(exclusive.min())
    # a restart keeps the grant as it is
    again = make_rig("server-112-pmem", store=rig.store, clock=rig.clock)
    assert again.cpus(ctr) == rig.cpus(ctr) and again.updates.updates == []
    assert again.tags(ctr)["topology-aware.exclusive"] == str(exclusive)


def test_hide_hyperthreads_mixed_and_refusal_count_cpus() -> None:
    rig = make_rig("box-16")
    hide = anno("hide-hyperthreads", "true")
    _, mixed, _ = rig.run("m", "Guaranteed", cpu=1500, annotations=hide)
    exclusive = CPUSet.parse(rig.tags(mixed)["topology-aware.exclusive"])
    assert len(exclusive) == 1
    pool = rig.alloc.tree.by_name(rig.pool(mixed))
    assert pool is not None
    shown = exclusive | rig.alloc.supply.shared_cpus(pool)
    assert rig.cpus(mixed) == CPUSet.from_ids(
        min(rig.machine.core_of(c).cpus & shown) for c in shown
    )
    with pytest.raises(OperationFailedError, match=r"no pool has 16 exclusive CPUs: best"):
        rig.run("big", "Guaranteed", cpu=16000, annotations=hide)


def test_cpu_preserve_leaves_cpus_alone_but_pins_memory() -> None:
    rig = make_rig("box-16")
    _, ctr, result = rig.run("g", "Guaranteed", cpu=2000, annotations=anno("cpu.preserve", "true"))
    assert result.adjustment.resources.cpus is None
    assert rig.ctr(ctr).cpus is None and rig.kind(ctr) == "preserve"
    assert rig.mems(ctr) is not None
    assert not rig.alloc.grants[ctr.id].exclusive  # nothing taken from the pools


def test_memory_preserve_leaves_mems_alone() -> None:
    rig = make_rig("box-16")
    _, ctr, result = rig.run(
        "g", "Guaranteed", cpu=1000, annotations=anno("memory.preserve", "true")
    )
    assert result.adjustment.resources.mems is None and rig.ctr(ctr).mems is None
    assert rig.cpus(ctr)
    assert rig.alloc.memory.zone_of(ctr.id) is None


def test_memory_type_pmem_and_default_types() -> None:
    rig = make_rig("server-112-pmem")
    _, plain, _ = rig.run("d", cpu=200, memory=GiB)
    pool = rig.alloc.tree.by_name(rig.pool(plain))
    assert pool is not None and rig.mems(plain) == pool.mems  # DRAM and PMEM by default
    _, dram, _ = rig.run("dr", cpu=200, memory=GiB, annotations=anno("memory-type", "dram"))
    assert rig.mems(dram).issubset(CPUSet.parse("0-3"))
    assert rig.tags(dram)["topology-aware.memory-types"] == "dram"
    _, pmem, _ = rig.run("pm", cpu=200, memory=GiB, annotations=anno("memory-type", "pmem"))
    assert rig.mems(pmem).issubset(CPUSet.parse("4-5"))
    _, both, _ = rig.run("mx", cpu=200, memory=GiB, annotations=anno("memory-type", "mixed"))
    assert rig.tags(both)["topology-aware.memory-types"] == "dram,pmem"


def test_every_pool_offers_every_requested_type() -> None:
    """As the reference's memory allocator does, a zone covers every requested type: on
    server-112-pmem only NUMA nodes #0 and #2 have PMEM attached, and a container of #1 or #3
    gets its DRAM node and the PMEM node nearest to it. So ``mixed`` (and the default types,
    DRAM and PMEM) spread over every node, each with one DRAM and one PMEM node."""
    rig = make_rig("server-112-pmem")
    nodes = set()
    for i, types in enumerate(("mixed", "mixed", None, None, "dram", "pmem")):
        annotations = anno("memory-type", types) if types else None
        _, ctr, _ = rig.run(f"c{i}", "Guaranteed", cpu=200, memory=GiB, annotations=annotations)
        node = int(rig.pool(ctr).removeprefix("NUMA node #"))
        nodes.add(node)
        # PMEM node 4 is at distance 17 from node 0 and 18 from node 1; 5 likewise for 2, 3
        expected = {
            "mixed": CPUSet.of(node, 4 if node < 2 else 5),
            None: CPUSet.of(node, 4 if node < 2 else 5),
            "dram": CPUSet.of(node),
            "pmem": CPUSet.of(4 if node < 2 else 5),
        }[types]
        assert rig.mems(ctr) == expected, f"c{i} ({types}) in node {node}: {rig.mems(ctr)}"
    assert nodes == {0, 1, 2, 3}  # the offers tie: colocation spreads them


def test_hbm_only_when_asked_for() -> None:
    rig = make_rig("hbm-cxl")
    _, plain, _ = rig.run("p", "Guaranteed", cpu=1000, memory=GiB)
    hbm_nodes = CPUSet.parse("4-7")
    assert not rig.mems(plain) & hbm_nodes
    _, fast, _ = rig.run(
        "h", "Guaranteed", cpu=1000, memory=GiB, annotations=anno("memory-type", "hbm")
    )
    assert rig.mems(fast).issubset(hbm_nodes) and rig.mems(fast)


def test_memory_type_missing_on_the_machine_is_refused() -> None:
    rig = make_rig("box-16")
    with pytest.raises(OperationFailedError, match="no pmem memory"):
        rig.run("p", cpu=100, annotations=anno("memory-type", "pmem"))


def test_bad_memory_type_is_reported_and_ignored() -> None:
    rig = make_rig("box-16")
    _, ctr, _ = rig.run("p", cpu=100, annotations=anno("memory-type", "flash"))
    assert rig.tags(ctr)["topology-aware.memory-types"] == "dram"
    assert any("unknown memory type 'flash'" in n.message for n in rig.log.notices)


def test_cold_start_limits_memory_to_pmem_until_done() -> None:
    rig = make_rig("server-112-pmem")
    _, ctr, _ = rig.run(
        "c",
        "Guaranteed",
        cpu=1000,
        memory=GiB,
        annotations=anno("cold-start", "duration: 30s"),
    )
    pool = rig.alloc.tree.by_name(rig.pool(ctr))
    # every pool offers PMEM (#1 the nearest PMEM node, 4); #0 has less room (reserved CPU)
    assert pool is not None and pool.name == "NUMA node #1"
    assert pool.mems == CPUSet.parse("1")
    assert rig.mems(ctr) == CPUSet.of(4)  # PMEM only
    rig.timers.advance(29)
    assert rig.mems(ctr) == CPUSet.of(4)
    rig.timers.advance(1)  # the timer injects cold-start-done
    assert rig.mems(ctr) == CPUSet.parse("1,4")
    assert rig.updates.updates[-1].resources.mems == CPUSet.parse("1,4")


def test_cold_start_done_event_injected_by_hand() -> None:
    rig = make_rig("server-112-pmem")
    _, ctr, _ = rig.run(
        "c", "Guaranteed", cpu=1000, memory=GiB, annotations=anno("cold-start", "10s")
    )
    assert rig.mems(ctr) == CPUSet.of(4)
    rig.manager.inject_event(PolicyEvent(COLD_START_DONE, "test", "default/c/c"))
    assert rig.mems(ctr) == CPUSet.parse("1,4")
    assert rig.policy.export_state() is None


def test_cold_start_survives_a_restart() -> None:
    rig = make_rig("server-112-pmem")
    _, ctr, _ = rig.run(
        "c", "Guaranteed", cpu=1000, memory=GiB, annotations=anno("cold-start", "60s")
    )
    data = rig.policy.export_state()
    assert data == {"cold_start": {ctr.id: rig.clock.now() + 60}}
    again = make_rig("server-112-pmem", store=rig.store, clock=rig.clock)
    assert again.mems(ctr) == CPUSet.of(4)
    assert again.policy.export_state() == data
    again.timers.advance(60)
    assert again.mems(ctr) == CPUSet.parse("1,4")
    assert again.policy.export_state() is None  # the ended cold start is no longer saved


def test_saved_cold_starts_follow_the_containers() -> None:
    """The persisted policy data lists exactly the running cold starts: a released or ended
    one drops out, a refused container leaves nothing behind."""
    rig = make_rig("server-112-pmem")
    cold = anno("cold-start", "60s")
    pod_a, a, _ = rig.run("a", "Guaranteed", cpu=1000, memory=GiB, annotations=cold)
    _, b, _ = rig.run("b", "Guaranteed", cpu=1000, memory=GiB, annotations=cold)
    rig.run("plain", "Guaranteed", cpu=1000, memory=GiB)
    assert set(rig.policy.export_state()["cold_start"]) == {a.id, b.id}
    with pytest.raises(OperationFailedError):
        rig.run("huge", "Guaranteed", cpu=500_000, memory=GiB, annotations=cold)
    assert set(rig.policy.export_state()["cold_start"]) == {a.id, b.id}
    rig.stop(pod_a, a)
    assert set(rig.policy.export_state()["cold_start"]) == {b.id}
    rig.manager.inject_event(PolicyEvent(COLD_START_DONE, "test", b.id))
    assert rig.policy.export_state() is None


def test_prefer_cpu_priority_low_on_hybrid_takes_e_cores() -> None:
    rig = make_rig("hybrid-desktop")
    _, low, _ = rig.run("l", "Guaranteed", cpu=2000, annotations=anno("prefer-cpu-priority", "low"))
    e_cores = CPUSet.parse("16-23")
    assert rig.cpus(low).issubset(e_cores)
    _, high, _ = rig.run(
        "h", "Guaranteed", cpu=2000, annotations=anno("prefer-cpu-priority", "high")
    )
    assert not rig.cpus(high) & e_cores


def test_default_cpu_priority_config() -> None:
    rig = make_rig("hybrid-desktop", config(defaultCPUPriority="low"))
    _, ctr, _ = rig.run("l", "Guaranteed", cpu=2000)
    assert rig.cpus(ctr).issubset(CPUSet.parse("16-23"))


def test_unlimited_burstable_level_annotation_and_config() -> None:
    # with a memory limit (without one, more memory decides first: the next test)
    rig = make_rig("box-16")
    _, pkg, _ = rig.run("a", cpu=300, memory=GiB)
    assert rig.pool(pkg).startswith("socket #")
    _, numa, _ = rig.run("b", cpu=300, memory=GiB, annotations=anno("unlimited-burstable", "numa"))
    assert rig.pool(numa).startswith("NUMA node #")
    _, system, _ = rig.run(
        "c", cpu=300, memory=GiB, annotations=anno("unlimited-burstable", "system")
    )
    assert rig.pool(system) == "root"
    _, limited, _ = rig.run("d", cpu=300, limit=600, memory=GiB)
    assert rig.pool(limited).startswith("NUMA node #")  # limited ones go deep
    rig2 = make_rig("box-16", config(unlimitedBurstable="system"))
    _, ctr, _ = rig2.run("e", cpu=300, memory=GiB)
    assert rig2.pool(ctr) == "root"


def test_burstable_without_a_memory_limit_prefers_more_memory() -> None:
    """The reference: a Burstable container without a memory limit prefers the pool with
    more memory capacity (before its CPU items): the root pool, every node's memory."""
    rig = make_rig("box-16")
    _, unlimited, _ = rig.run("u", cpu=300, limit=600)
    assert rig.pool(unlimited) == "root" and rig.mems(unlimited) == CPUSet.parse("0-3")
    _, limited, _ = rig.run("l", cpu=300, limit=600, memory=GiB)
    assert rig.pool(limited).startswith("NUMA node #")
    # memory the pools' own nodes cannot hold still leaves only the roomy pools
    _, guaranteed, _ = rig.run("g", "Guaranteed", cpu=300, memory=GiB)
    assert rig.pool(guaranteed).startswith("NUMA node #")  # not Burstable
    _, best, _ = rig.run("b", "BestEffort")
    assert rig.pool(best).startswith("NUMA node #")  # not Burstable


def test_unlimited_burstable_off_every_pool_takes_the_lowest_id() -> None:
    """No pool sits at the level (no L3 cache information here): the reference breaks the
    tie by the lowest pool id, the root pool, instead of going on to the later items."""
    from .test_choice import two_sockets

    rig = make_rig(two_sockets(), config(reservedResources={"cpu": "cpuset:0"}))
    l3 = anno("unlimited-burstable", "l3cache")
    _, ctr, _ = rig.run("u", cpu=300, memory=GiB, annotations=l3)
    assert rig.pool(ctr) == "root"
    _, pkg, _ = rig.run("p", cpu=300, memory=GiB)  # the package level has pools: sockets
    assert rig.pool(pkg).startswith("socket #")


def _hint_rig(cpus: str) -> tuple[object, Device]:
    device = Device(path="/dev/accel0", type="c", major=240, minor=0)
    hints = FakeTopologyHints(
        {
            "/dev/accel0": TopologyHint(
                provider="/sys/devices/pci0000:00/0000:00:05.0", cpus=CPUSet.parse(cpus)
            )
        }
    )
    return hints, device


def test_topology_hints_pull_containers_to_the_device() -> None:
    hints, device = _hint_rig("12-15")
    rig = make_rig("box-16", hints=hints)  # type: ignore[arg-type]
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=1000, devices=(device,))
    assert rig.pool(ctr) == "NUMA node #3" and rig.cpus(ctr).issubset(CPUSet.parse("12-15"))


def test_strict_hints_refuse_pools_that_miss_the_hint() -> None:
    hints, device = _hint_rig("12-15")
    rig = make_rig(
        "box-16",
        config(availableResources={"cpu": "cpuset:0-7"}),
        hints=hints,  # type: ignore[arg-type]
    )
    with pytest.raises(OperationFailedError, match="inside every topology hint"):
        rig.run(
            "s",
            "Guaranteed",
            cpu=1000,
            devices=(device,),
            annotations=anno("strict.topologyhints", "true"),
        )
    _, loose, _ = rig.run("l", "Guaranteed", cpu=1000, devices=(device,))
    assert rig.cpus(loose).issubset(CPUSet.parse("0-7"))


def test_strict_hints_grant_cpus_inside_the_hint_not_just_in_a_pool_holding_it() -> None:
    """The reference's verifyStrictTopologyHints: the granted CPUs lie inside the hint. A
    device local to CPUs 9 and 11: 2 exclusive CPUs are those two (without strict, the
    allocator's pick in NUMA node #2 is a whole core, 8-9); a shared container, whose CPUs
    would be a pool's shared set, fits in no pool inside the hint and is refused."""
    strict = anno("strict.topologyhints", "true")
    hints, device = _hint_rig("9,11")
    rig = make_rig("box-16", hints=hints)  # type: ignore[arg-type]
    _, loose, _ = rig.run("l", "Guaranteed", cpu=2000, devices=(device,))
    assert rig.cpus(loose) == CPUSet.parse("8-9")  # in the pool holding the hint
    fresh = make_rig("box-16", hints=hints)  # type: ignore[arg-type]
    _, ctr, _ = fresh.run("s", "Guaranteed", cpu=2000, devices=(device,), annotations=strict)
    assert fresh.cpus(ctr) == CPUSet.parse("9,11")
    with pytest.raises(OperationFailedError, match="inside every topology hint"):
        fresh.run("t", cpu=200, limit=400, memory=GiB, devices=(device,), annotations=strict)
    # a hint of a whole socket: a shared container goes to a pool inside it
    hints, device = _hint_rig("8-15")
    rig = make_rig("box-16", hints=hints)  # type: ignore[arg-type]
    _, shared, _ = rig.run(
        "u", cpu=200, limit=400, memory=GiB, devices=(device,), annotations=strict
    )
    assert rig.cpus(shared).issubset(CPUSet.parse("8-15"))


def test_strict_hints_keep_memory_on_the_hinted_node() -> None:
    """A device on NUMA node 1 of server-112-pmem: the memory stays on node 1, not the
    nearest PMEM node the pool's offer also holds without the annotation."""
    m = catalogue("server-112-pmem")
    hint = TopologyHint(
        provider="/sys/devices/pci0000:3a/0000:3a:00.0", cpus=m.node_cpus(1), nodes=CPUSet.of(1)
    )
    device = Device(path="/dev/accel0", type="c", major=240, minor=0)
    hints = FakeTopologyHints({"/dev/accel0": hint})
    rig = make_rig("server-112-pmem", hints=hints)  # type: ignore[arg-type]
    _, loose, _ = rig.run("l", "Guaranteed", cpu=1000, devices=(device,))
    assert rig.mems(loose) == CPUSet.parse("1,4")
    strict = anno("strict.topologyhints", "true")
    _, ctr, _ = rig.run("s", "Guaranteed", cpu=1000, devices=(device,), annotations=strict)
    assert rig.mems(ctr) == CPUSet.of(1) and rig.cpus(ctr).issubset(m.node_cpus(1))


def test_strict_hints_bound_a_reserved_fallbacks_memory_across_resizes_and_restarts() -> None:
    """A kube-system container the full reserved CPUs send to the shared ones is placed as a
    shared container, strict hints included (memory on the hinted node, not the PMEM node
    the pool adds); an in-place resize and a restart, which keep that grant, keep the bound
    (a resize used to ask for the pool's whole memory, node 1 and PMEM node 4)."""
    m = catalogue("server-112-pmem")
    hint = TopologyHint(
        provider="/sys/devices/pci0000:3a/0000:3a:00.0", cpus=m.node_cpus(1), nodes=CPUSet.of(1)
    )
    device = Device(path="/dev/accel0", type="c", major=240, minor=0)
    hints = FakeTopologyHints({"/dev/accel0": hint})
    rig = make_rig("server-112-pmem", config(), hints=hints)  # type: ignore[arg-type]
    _, first, _ = rig.run("r", "Guaranteed", cpu=500, namespace="kube-system")
    assert rig.kind(first) == "reserved"
    strict = anno("strict.topologyhints", "true")
    pod, ctr, _ = rig.run(
        "s", "Guaranteed", cpu=1000, namespace="kube-system", devices=(device,), annotations=strict
    )
    assert rig.kind(ctr) == "shared" and rig.cpus(ctr).issubset(m.node_cpus(1))
    assert rig.mems(ctr) == CPUSet.of(1)
    placed = (rig.pool(ctr), rig.cpus(ctr))
    rig.manager.update_container(pod, rig.ctr(ctr), LinuxResources(memory_limit=2 * GiB))
    assert (rig.pool(ctr), rig.cpus(ctr)) == placed, "the resize keeps the grant"
    assert rig.mems(ctr) == CPUSet.of(1)
    assert rig.alloc.memory.zone_of(ctr.id) == CPUSet.of(1)
    again = make_rig("server-112-pmem", store=rig.store, clock=rig.clock, hints=hints)  # type: ignore[arg-type]
    assert (again.pool(ctr), again.cpus(ctr), again.mems(ctr)) == (*placed, CPUSet.of(1))
    again.manager.update_container(pod, again.ctr(ctr), LinuxResources(memory_limit=GiB))
    assert again.mems(ctr) == CPUSet.of(1)


def test_hints_prefer_the_deepest_pool_holding_the_device() -> None:
    hints, device = _hint_rig("8-15")
    rig = make_rig("box-16", hints=hints)  # type: ignore[arg-type]
    _, ctr, _ = rig.run("g", cpu=200, limit=400, devices=(device,))
    assert rig.pool(ctr) == "socket #1"  # the NUMA nodes hold half of the hint each


def test_pick_resources_by_hints_takes_hinted_cpus_first() -> None:
    hints, device = _hint_rig("9,11")
    rig = make_rig("box-16", hints=hints)  # type: ignore[arg-type]
    _, ctr, _ = rig.run(
        "g",
        "Guaranteed",
        cpu=2000,
        devices=(device,),
        annotations=anno("pick-resources-by-hints", "true"),
    )
    assert rig.cpus(ctr) == CPUSet.parse("9,11")


WEB_RULE = """
c:
- scope:
    key: pod/namespace
    operator: Equals
    values: [default]
  match:
    key: pod/name
    operator: Equals
    values: [web]
  weight: 100
"""


def test_affinity_and_anti_affinity_steer_the_pool() -> None:
    rig = make_rig("box-16")
    _, web, _ = rig.run("web", "Guaranteed", cpu=1000)
    web_pool = rig.alloc.tree.by_name(rig.pool(web))
    assert web_pool is not None
    _, lone, _ = rig.run("lone", "Guaranteed", cpu=1000)
    assert rig.pool(lone) != rig.pool(web)  # without affinity it goes elsewhere
    _, near, _ = rig.run(
        "near", "Guaranteed", cpu=1000, annotations={"resource-policy.nri.io/affinity": WEB_RULE}
    )
    assert rig.pool(near) == rig.pool(web)
    _, far, _ = rig.run(
        "far",
        "Guaranteed",
        cpu=1000,
        annotations={"resource-policy.nri.io/anti-affinity": WEB_RULE},
    )
    far_pool = rig.alloc.tree.by_name(rig.pool(far))
    assert far_pool is not None and far_pool.hops_to(web_pool) is None


def test_shorthand_affinity_pulls_the_named_container_too() -> None:
    """The reference makes `c: [helper]` symmetric: `helper`, created after `c`, is pulled
    to `c`'s pool, where without the annotation it would go elsewhere."""
    from .support import make_container

    for shorthand in (False, True):
        rig = make_rig("box-16")
        annotations = {"resource-policy.nri.io/affinity": "c: [helper]"} if shorthand else {}
        pod, main, _ = rig.run("p", "Guaranteed", cpu=1000, annotations=annotations)
        helper = make_container(pod, "helper", cpu=1000, limit=1000, memory=GiB)
        rig.manager.create_container(pod, helper)
        assert (rig.pool(helper) == rig.pool(main)) is shorthand


def test_broken_affinity_annotation_is_reported_not_fatal() -> None:
    rig = make_rig("box-16")
    _, ctr, _ = rig.run(
        "p", cpu=100, annotations={"resource-policy.nri.io/affinity": "c: [ {weight: 5000} ]"}
    )
    assert rig.kind(ctr) == "shared"
    assert any("affinity ignored" in n.message for n in rig.log.notices)


def test_colocate_pods_config() -> None:
    rig = make_rig("box-16", config(colocatePods=True))
    pod = rig.run("p", "Guaranteed", cpu=1000)[0]
    from .support import make_container

    second = make_container(pod, "second", cpu=1000, limit=1000, memory=GiB)
    rig.manager.create_container(pod, second)
    assert rig.pool(second) == rig.pool(make_container(pod))


def test_scheduling_class_annotation_namespace_and_qos_defaults() -> None:
    cfg = config(
        schedulingClasses=[
            {"name": "rt", "policy": "fifo", "priority": 10, "ioClass": "rt", "ioPriority": 2},
            {"name": "nice", "nice": 5},
            {"name": "batch", "policy": "batch"},
        ],
        namespaceSchedulingClasses={"jobs": "batch"},
        podQoSSchedulingClasses={"BestEffort": "nice"},
    )
    rig = make_rig("box-16", cfg)
    _, _, result = rig.run("rt", cpu=100, annotations=anno("scheduling-class", "rt"))
    assert result.adjustment.scheduling is not None
    assert result.adjustment.scheduling.policy is SchedulingPolicy.FIFO
    assert result.adjustment.scheduling.priority == 10
    assert result.adjustment.io_priority == IOPriority(IOPriorityClass.REALTIME, 2)
    _, _, job = rig.run("job", cpu=100, namespace="jobs")
    assert job.adjustment.scheduling is not None
    assert job.adjustment.scheduling.policy is SchedulingPolicy.BATCH
    _, _, be = rig.run("be", "BestEffort")
    assert be.adjustment.scheduling is not None and be.adjustment.scheduling.nice == 5
    # the container is named once, by the pipeline
    with pytest.raises(
        OperationFailedError,
        match=r"^create-container container default/bad/c: scheduling class 'nope' ",
    ):
        rig.run("bad", cpu=100, annotations=anno("scheduling-class", "nope"))


def test_cpu_classes_from_annotation_and_pool_defaults() -> None:
    cfg = config(
        cpuClasses=[{"name": "fast"}, {"name": "slow"}, {"name": "sys"}],
        sharedPoolCPUClass="slow",
        reservedPoolCPUClass="sys",
        defaultExclusiveCPUClass="fast",
    )
    rig = make_rig("box-16", cfg)
    host = {}
    for name, kw in (
        ("shared", {"cpu": 100}),
        ("excl", {"qos": "Guaranteed", "cpu": 1000}),
        ("sys", {"cpu": 100, "namespace": "kube-system"}),
        ("anno", {"qos": "Guaranteed", "cpu": 1000, "annotations": anno("cpu-class", "slow")}),
    ):
        _, ctr, _ = rig.run(name, **kw)  # type: ignore[arg-type]
        host[name] = ctr
    classes = {n: rig.tags(c)["topology-aware.cpu-class"] for n, c in host.items()}
    assert classes == {"shared": "slow", "excl": "fast", "sys": "sys", "anno": "slow"}
    # classes go to CPUs: the shared CPUs, the reserved ones, each exclusive grant's
    placed = rig.policy.host_assignment().cpu_classes
    excl, annotated = rig.cpus(host["excl"]), rig.cpus(host["anno"])
    assert placed["fast"] == excl
    assert placed["sys"] == rig.alloc.resources.reserved
    assert placed["slow"] == rig.alloc.supply.sharable[rig.alloc.tree.top.id] | annotated
    assert not placed["slow"] & excl
    with pytest.raises(OperationFailedError, match="CPU class 'turbo'"):
        rig.run("bad", "Guaranteed", cpu=1000, annotations=anno("cpu-class", "turbo"))


def test_cpu_class_annotation_needs_guaranteed_exclusive_cpus() -> None:
    """The reference refuses a cpu-class annotation on a container that is not Guaranteed or
    that gets no exclusive CPUs (a class is applied to CPUs the container has to itself)."""
    rig = make_rig("box-16", config(cpuClasses=[{"name": "fast"}]))
    fast = anno("cpu-class", "fast")
    before = rig.alloc.supply.shared_granted[:]
    for name, kw, reason in (
        ("b", {"cpu": 100, "limit": 200, "memory": GiB}, "this one is Burstable"),
        ("e", {"qos": "BestEffort"}, "this one is BestEffort"),
        ("s", {"qos": "Guaranteed", "cpu": 500}, r"this one gets none \(shared\)"),
        (
            "p",
            {
                "qos": "Guaranteed",
                "cpu": 2000,
                "annotations": {**fast, **anno("prefer-shared-cpus", "true")},
            },
            r"this one gets none \(shared\)",
        ),
    ):
        kw.setdefault("annotations", fast)
        with pytest.raises(
            OperationFailedError,
            match=f"only for Guaranteed containers with exclusive CPUs; {reason}",
        ):
            rig.run(name, **kw)  # type: ignore[arg-type]
    assert rig.alloc.grants == {} and rig.alloc.supply.shared_granted == before
    _, mixed, _ = rig.run("m", "Guaranteed", cpu=1500, annotations=fast)  # 1 exclusive CPU
    _, iso, _ = rig.run("i", "Guaranteed", cpu=2000, annotations=fast)
    assert [rig.tags(c)["topology-aware.cpu-class"] for c in (mixed, iso)] == ["fast", "fast"]
    exclusive = [rig.alloc.grants[c.id].exclusive for c in (mixed, iso)]
    assert rig.policy.host_assignment().cpu_classes["fast"] == exclusive[0] | exclusive[1]


def test_pct_priority_takes_the_reference_strings() -> None:
    cfg = config(
        cpuClasses=[{"name": "hi", "pctPriority": "high"}, {"name": "lo", "pctPriority": "low"}]
    )
    assert [str(c.pct_priority) for c in cfg.spec.cpu_classes] == ["high", "low"]  # type: ignore[union-attr]
    for bad in (1, "normal", "HIGH"):
        with pytest.raises(
            ConfigError, match=r"pctPriority: invalid value .*: expected one of 'high', 'low'"
        ):
            config(cpuClasses=[{"name": "x", "pctPriority": bad}])


def test_rdt_and_blockio_classes() -> None:
    cfg = config(
        control={
            "rdt": {
                "partitions": {"p": {"classes": {"gold": {}, "BestEffort": {}}}},
                "usePodQoSAsDefaultClass": True,
            },
            "blockio": {"classes": {"slowio": []}},
        }
    )
    rig = make_rig("box-16", cfg)
    _, _, gold = rig.run(
        "g",
        cpu=100,
        annotations={**anno("rdtclass", "gold"), **anno("blockioclass", "slowio")},
    )
    assert gold.adjustment.resources.rdt_class == "gold"
    assert gold.adjustment.resources.blockio_class == "slowio"
    _, _, be = rig.run("be", "BestEffort")
    assert be.adjustment.resources.rdt_class == "BestEffort"
    with pytest.raises(OperationFailedError, match="RDT class 'silver'"):
        rig.run("bad", cpu=100, annotations=anno("rdtclass", "silver"))
    with pytest.raises(OperationFailedError, match="block I/O class 'fastio'"):
        rig.run("bad2", cpu=100, annotations=anno("blockioclass", "fastio"))


def test_irq_affinity_is_recorded_as_a_tag() -> None:
    rig = make_rig("box-16")
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=1000, annotations=anno("irq-affinity", "claim"))
    assert rig.tags(ctr)["topology-aware.irq-affinity"] == "claim"


def test_container_scoped_annotation_wins_over_pod_scope() -> None:
    rig = make_rig("box-16")
    annotations = {
        **anno("prefer-shared-cpus", "true"),
        **anno("prefer-shared-cpus", "false", container="c"),
    }
    _, ctr, _ = rig.run("g", "Guaranteed", cpu=2000, annotations=annotations)
    assert rig.kind(ctr) == "exclusive"
