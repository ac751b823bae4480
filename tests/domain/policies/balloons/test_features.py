"""Balloon type options: composites, idle sharing, devices, isolated and core-type preferences,
hyperthreads, balancing, loads (reference-balloons.md §5, §6)."""

from __future__ import annotations

from nrirp.adapters.fakehw import expected_machine, load_machine, spec_from_data, spec_to_data
from nrirp.adapters.fakehw.hints import FakeTopologyHints
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine
from nrirp.domain.topology.hints import TopologyHint
from tests.domain.policies.balloons.support import anno, catalogue, config, make_rig

NIC = "/sys/devices/pci0000:00/0000:00:01.0"


def isolated_box() -> Machine:
    data = spec_to_data(load_machine("box-16"))
    data.update(name="box-16-isolated", isolated="6-7,14-15")
    return expected_machine(spec_from_data(data))


def cpus_of(rig_balloon_cpus: int) -> CPUSet:
    return CPUSet(rig_balloon_cpus)


# ------------------------------------------------------------------ composite balloons
def test_composite_balloon_is_the_union_of_its_components() -> None:
    types = [
        {"name": "left", "preferCloseToDevices": [NIC]},
        {"name": "right"},
        {
            "name": "both",
            "namespaces": ["both"],
            "components": [{"balloonType": "left"}, {"balloonType": "right"}],
        },
    ]
    hints = FakeTopologyHints({NIC: TopologyHint(NIC, cpus=CPUSet.parse("12-15"))})
    rig = make_rig(cfg=config(balloonTypes=types), hints=hints)
    _, c = rig.run("a", 3000, namespace="both")
    balloon = rig.balloon("both[0]")
    left, right = balloon.components
    assert (left.name, right.name) == ("left[0]", "right[0]")
    # 3000m over two components: ceil(1500m) = 2 CPUs each
    assert left.cpus.bit_count() == right.cpus.bit_count() == 2
    assert CPUSet(left.cpus) <= CPUSet.parse("12-15")  # near its device
    assert rig.cpus(c) == CPUSet(left.cpus | right.cpus) == CPUSet(balloon.cpus)
    assert rig.names() == ["reserved[0]", "default[0]", "both[0]"]  # components are inside


def test_balance_balloons_creates_the_least_used_component() -> None:
    types = [
        {"name": "x"},
        {"name": "y"},
        {
            "name": "xy",
            "namespaces": ["xy"],
            "preferNewBalloons": True,
            "components": [{"balloonType": "x"}, {"balloonType": "y"}],
            "componentCreation": "balance-balloons",
        },
    ]
    rig = make_rig(cfg=config(balloonTypes=types))
    rig.run("a", 500, namespace="xy")
    rig.run("b", 500, namespace="xy")
    first, second = rig.balloon("xy[0]"), rig.balloon("xy[1]")
    assert [c.kind.name for c in first.components] == ["x"]  # tie: the first listed
    assert [c.kind.name for c in second.components] == ["y"]  # x has one balloon now


# ------------------------------------------------------------------ idle sharing
def test_share_idle_cpus_in_same_numa() -> None:
    types = [{"name": "app", "namespaces": ["app"], "shareIdleCPUsInSame": "numa"}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, c = rig.run("a", 1000, namespace="app")
    balloon = rig.balloon("app[0]")
    node = catalogue("box-16").node_cpus(catalogue("box-16").node_of(balloon.cpus.bit_length() - 1))
    assert CPUSet(balloon.shared) == (node - CPUSet(balloon.cpus)) - CPUSet(
        rig.balloon("reserved[0]").cpus
    )
    assert rig.cpus(c) == CPUSet(balloon.cpus | balloon.shared)
    # a CPU taken by another balloon leaves the shared set, and the container is updated
    rig.run("d", 1000)
    assert not (rig.balloon("default[0]").cpus & balloon.shared)
    assert rig.cpus(c) == CPUSet(balloon.cpus | balloon.shared)


def test_thread_level_shares_nothing() -> None:
    types = [{"name": "app", "namespaces": ["app"], "shareIdleCPUsInSame": "thread"}]
    rig = make_rig(cfg=config(balloonTypes=types))
    rig.run("a", 1000, namespace="app")
    assert rig.balloon("app[0]").shared == 0


# ------------------------------------------------------------------ devices and CPU kinds
def test_prefer_close_to_devices_by_sysfs_path() -> None:
    hints = FakeTopologyHints({NIC: TopologyHint(NIC, nodes=CPUSet.of(3))})
    types = [{"name": "net", "namespaces": ["net"], "preferCloseToDevices": [NIC]}]
    rig = make_rig(cfg=config(balloonTypes=types), hints=hints)
    _, c = rig.run("a", 2000, namespace="net")
    assert rig.cpus(c) is not None and rig.cpus(c) <= CPUSet.parse("12-15")
    # other types keep away from what some type prefers
    rig.run("d", 4000)
    assert CPUSet(rig.balloon("default[0]").cpus).isdisjoint(CPUSet.parse("12-15"))


def test_unknown_device_is_reported_once() -> None:
    types = [{"name": "net", "namespaces": ["net"], "preferCloseToDevices": ["/sys/nothing"]}]
    rig = make_rig(cfg=config(balloonTypes=types), hints=FakeTopologyHints({}))
    rig.run("a", 1000, namespace="net")
    rig.run("b", 1000, namespace="net")
    assert sum("'/sys/nothing' gives no CPU" in n for n in rig.notices()) <= 1


def test_isolated_cpus_are_avoided_unless_preferred() -> None:
    types = [{"name": "rt", "namespaces": ["rt"], "preferIsolCpus": True}]
    rig = make_rig(isolated_box(), config(balloonTypes=types))
    _, rt = rig.run("rt", 2000, namespace="rt")
    assert rig.cpus(rt) == CPUSet.parse("6-7")
    rig.run("o", 8000)
    assert CPUSet(rig.balloon("default[0]").cpus).isdisjoint(CPUSet.parse("6-7,14-15"))


def test_prefer_core_type_on_a_hybrid_machine() -> None:
    types = [
        {
            "name": "eco",
            "namespaces": ["eco"],
            "preferCoreType": "efficient",
            "allocatorPriority": "none",
        },
        {"name": "fast", "namespaces": ["fast"], "preferCoreType": "performance"},
    ]
    rig = make_rig("hybrid-desktop", config(balloonTypes=types))
    _, eco = rig.run("e", 2000, namespace="eco")
    _, fast = rig.run("f", 2000, namespace="fast")
    assert rig.cpus(eco) is not None and rig.cpus(eco) <= CPUSet.parse("16-23")
    assert rig.cpus(fast) is not None and rig.cpus(fast) <= CPUSet.parse("0-15")


# ------------------------------------------------------------------ how CPUs are picked
def test_hide_hyperthreads_shows_one_thread_per_core() -> None:
    types = [{"name": "ht", "namespaces": ["ht"], "hideHyperthreads": True}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, c = rig.run("a", 4000, namespace="ht")
    balloon = CPUSet(rig.balloon("ht[0]").cpus)
    assert len(balloon) == 4 and rig.cpus(c) == CPUSet.from_ids(
        cpu for cpu in balloon if cpu % 2 == 0
    )
    # the annotation overrides the type
    _, d = rig.run("b", 100, namespace="ht", annotations=anno("hide-hyperthreads", "false"))
    assert rig.cpus(d) == CPUSet(rig.balloon("ht[0]").cpus)


def test_balancing_spreads_balloons_and_packing_fills() -> None:
    types = [{"name": "app", "namespaces": ["app"], "preferNewBalloons": True}]
    packed = make_rig(cfg=config(balloonTypes=types))
    spread = make_rig(cfg=config(balloonTypes=types, allocatorTopologyBalancing=True))
    for rig in (packed, spread):
        rig.run("a", 2000, namespace="app")
        rig.run("b", 2000, namespace="app")
    machine = catalogue("box-16")

    def packages(rig: object, name: str) -> set[int]:
        return {machine.package_of(c) for c in CPUSet(rig.balloon(name).cpus)}  # type: ignore[attr-defined]

    assert packages(packed, "app[0]") == packages(packed, "app[1]")
    assert packages(spread, "app[0]") != packages(spread, "app[1]")


def test_prefer_spread_on_physical_cores() -> None:
    types = [{"name": "s", "namespaces": ["s"], "preferSpreadOnPhysicalCores": True}]
    rig = make_rig("server-112-pmem", config(balloonTypes=types))
    rig.run("a", 3000, namespace="s")
    cpus = CPUSet(rig.balloon("s[0]").cpus)
    machine = catalogue("server-112-pmem")
    assert len({machine.core_of(cpu).id for cpu in cpus}) == 3  # three cores, a thread each
    assert len({machine.node_of(cpu) for cpu in cpus}) == 1


def test_loads_keep_balloons_off_each_others_cores() -> None:
    types = [
        {
            "name": "avx",
            "namespaces": ["avx"],
            "loads": ["avx"],
            "preferNewBalloons": True,
            "preferSpreadingPods": True,
        },
    ]
    cfg = config(balloonTypes=types, loadClasses=[{"name": "avx", "level": "core"}])
    rig = make_rig(cfg=cfg)
    rig.run("a", 1000, namespace="avx")
    rig.run("b", 1000, namespace="avx")
    first, second = CPUSet(rig.balloon("avx[0]").cpus), CPUSet(rig.balloon("avx[1]").cpus)
    assert {c // 2 for c in first}.isdisjoint({c // 2 for c in second})
