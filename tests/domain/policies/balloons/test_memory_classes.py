"""Memory pinning, preserved containers, scheduling and CPU classes (reference-balloons.md
§3.1, §7, §8). Machine: server-112-pmem (DRAM nodes 0-3, PMEM 4 near 0 and 5 near 2)."""

from __future__ import annotations

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import SchedulingPolicy
from tests.domain.policies.balloons.support import (
    GiB,
    anno,
    config,
    make_container,
    make_pod,
    make_rig,
)

MACHINE = "server-112-pmem"


def test_memory_follows_the_balloon_with_the_default_types() -> None:
    rig = make_rig(MACHINE)
    _, c = rig.run("a", 1000, memory=GiB)
    nodes = {rig.machine.node_of(cpu) for cpu in CPUSet(rig.balloon("default[0]").cpus)}
    assert nodes == {0}
    assert rig.mems(c) == CPUSet.parse("0,4")  # DRAM and the PMEM closest to it; never HBM


def test_memory_types_of_the_type_and_the_annotation() -> None:
    types = [{"name": "dram", "namespaces": ["d"], "memoryTypes": ["DRAM"]}]
    rig = make_rig(MACHINE, config(balloonTypes=types))
    _, d = rig.run("d", 1000, namespace="d", memory=GiB)
    _, p = rig.run("p", 1000, namespace="d", annotations=anno("memory-type", "PMEM"))
    node = rig.machine.node_of(CPUSet(rig.balloon("dram[0]").cpus).min())
    assert rig.mems(d) == CPUSet.of(node)
    assert rig.mems(p) == CPUSet.of(4)  # the annotation wins: the PMEM node closest


def test_pin_memory_off_leaves_mems_alone() -> None:
    types = [{"name": "free", "namespaces": ["f"], "pinMemory": False}]
    rig = make_rig(MACHINE, config(balloonTypes=types))
    _, c = rig.run("a", 1000, namespace="f")
    assert rig.mems(c) is None
    rig2 = make_rig(MACHINE, config(pinMemory=False))
    _, d = rig2.run("a", 1000)
    assert rig2.mems(d) is None and rig2.cpus(d) is not None


def test_memory_widens_when_a_node_is_full() -> None:
    types = [{"name": "m", "namespaces": ["m"], "memoryTypes": ["DRAM"], "maxCPUs": 2}]
    rig = make_rig(MACHINE, config(balloonTypes=types))
    _, a = rig.run("a", 1000, namespace="m", memory=90 * GiB)
    _, b = rig.run("b", 1000, namespace="m", memory=90 * GiB)
    zones = {rig.mems(a), rig.mems(b)}
    assert any(z is not None and len(z) > 1 for z in zones)  # 180 GiB > the node's 96 GiB


def test_preserved_containers_are_left_alone() -> None:
    preserve = {"matchExpressions": [{"key": "pod/labels/keep", "operator": "Exists"}]}
    rig = make_rig(cfg=config(preserve=preserve))
    _, by_annotation = rig.run("a", 1000, annotations=anno("cpu.preserve", "true"))
    _, by_match = rig.run("b", 1000, labels={"keep": "yes"})
    _, not_exactly_true = rig.run("c", 1000, annotations=anno("cpu.preserve", "True"))
    for ctr in (by_annotation, by_match):
        assert rig.cpus(ctr) is None and rig.mems(ctr) is None
        assert rig.where(ctr) == "(preserved)"
    assert rig.where(not_exactly_true) == "default[0]"
    assert rig.balloon("default[0]").requested == 1000  # preserved ones count nowhere


def test_memory_preserve_keeps_mems() -> None:
    rig = make_rig(MACHINE)
    _, c = rig.run("a", 1000, annotations=anno("memory.preserve", "true"))
    assert rig.cpus(c) is not None and rig.mems(c) is None


def test_scheduling_class_of_the_type_and_the_annotation() -> None:
    classes = [
        {"name": "rt", "policy": "fifo", "priority": 10},
        {"name": "bg", "policy": "batch", "nice": 5},
    ]
    types = [{"name": "rt", "namespaces": ["rt"], "schedulingClass": "rt"}]
    rig = make_rig(cfg=config(balloonTypes=types, schedulingClasses=classes))
    by_type = make_pod("r", namespace="rt")
    result = rig.create(by_type, make_container(by_type, cpu=100))
    assert result.adjustment.scheduling is not None
    assert result.adjustment.scheduling.policy is SchedulingPolicy.FIFO
    assert result.adjustment.scheduling.priority == 10
    annotated = make_pod("b", namespace="rt", annotations=anno("scheduling-class", "bg"))
    result = rig.create(annotated, make_container(annotated, cpu=100))
    assert result.adjustment.scheduling is not None
    assert result.adjustment.scheduling.policy is SchedulingPolicy.BATCH
    assert result.adjustment.scheduling.nice == 5
    unknown = make_pod("u", namespace="rt", annotations=anno("scheduling-class", "nope"))
    result = rig.create(unknown, make_container(unknown, cpu=100))
    assert result.adjustment.scheduling is None  # an unknown class applies nothing
    assert any("'nope'" in n and "not defined" in n for n in rig.notices())


def test_cpu_classes_go_to_balloon_and_idle_cpus() -> None:
    cfg = config(
        cpuClasses=[{"name": "turbo"}, {"name": "default"}],
        idleCPUClass="",
        balloonTypes=[{"name": "fast", "namespaces": ["fast"], "cpuClass": "turbo"}],
    )
    rig = make_rig(cfg=cfg)
    _, f = rig.run("f", 1000, namespace="fast")
    _, d = rig.run("d", 1000)
    assert rig.ctr(f).tags["balloons.cpu-class"] == "turbo"
    assert rig.ctr(d).tags["balloons.cpu-class"] == "default"  # the class named default
    placed = rig.policy.host_assignment().cpu_classes
    engine = rig.policy.engine
    fast = next(b for b in engine.balloons if b.kind.name == "fast")
    assert placed["turbo"] == CPUSet(fast.cpus)
    # the default balloons' CPUs and the idle ones (idleCPUClass "" falls back to default)
    assert placed["default"] == CPUSet(engine.catalog.allowed) - CPUSet(fast.cpus)


def test_undefined_cpu_class_is_only_a_warning() -> None:
    cfg = config(balloonTypes=[{"name": "a", "namespaces": ["a"], "cpuClass": "ghost"}])
    rig = make_rig(cfg=cfg)
    assert any("balloonTypes[0].cpuClass: 'ghost'" in n for n in rig.notices())
    _, c = rig.run("a", 100, namespace="a")
    assert rig.where(c) == "a[0]"
