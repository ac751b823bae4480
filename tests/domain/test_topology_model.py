"""Machine.build and the topology queries the policies use."""

from __future__ import annotations

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import (
    CPU,
    CacheGroup,
    CacheType,
    CoreType,
    Machine,
    MemoryType,
    NumaNode,
    TopologyError,
)
from tests.domain.support import node_across_packages_machine

DIST = {
    0: {0: 10, 1: 21, 2: 17, 3: 28},
    1: {0: 21, 1: 10, 2: 28, 3: 17},
    2: {0: 17, 1: 28, 2: 10, 3: 28},
    3: {0: 28, 1: 17, 2: 28, 3: 10},
}


def two_socket() -> Machine:
    """2 packages x 2 cores x 2 threads, Linux numbering (siblings N and N+4), sparse ids
    on package 1 (ids 100+), core ids repeating per package, two PMEM nodes."""
    cpus = []
    layout = {0: [(0, 0, 0), (0, 1, 1)], 1: [(1, 0, 100), (1, 1, 101)]}
    for package, cores in layout.items():
        for _, core, first in cores:
            for cpu_id in (first, first + 4):
                cpus.append(
                    CPU(
                        id=cpu_id,
                        package_id=package,
                        die_id=0,
                        cluster_id=core,
                        core_id=core,
                        node_id=package,
                        base_frequency_khz=2000000,
                    )
                )
    nodes = [
        NumaNode(0, CPUSet.parse("0-1,4-5"), 64 << 30, MemoryType.DRAM, DIST[0]),
        NumaNode(1, CPUSet.parse("100-101,104-105"), 64 << 30, MemoryType.DRAM, DIST[1]),
        NumaNode(2, CPUSet(), 512 << 30, MemoryType.PMEM, DIST[2]),
        NumaNode(3, CPUSet(), 512 << 30, MemoryType.PMEM, DIST[3]),
    ]
    caches = [
        CacheGroup(2, CacheType.UNIFIED, i, c, 1 << 20)
        for i, c in enumerate(CPUSet.parse(t) for t in ("0,4", "1,5", "100,104", "101,105"))
    ] + [
        CacheGroup(3, CacheType.UNIFIED, 1, CPUSet.parse("100-101,104-105"), 32 << 20),
        CacheGroup(3, CacheType.UNIFIED, 0, CPUSet.parse("0-1,4-5"), 32 << 20),
    ]
    return Machine.build(cpus, nodes, caches, isolated=CPUSet.of(5))


def test_build_derives_packages_dies_clusters_cores() -> None:
    m = two_socket()
    assert m.online == CPUSet.parse("0-1,4-5,100-101,104-105")
    assert m.all_cpus == m.online
    assert list(m.packages) == [0, 1]
    assert m.package_cpus(1) == CPUSet.parse("100-101,104-105")
    assert m.packages[0].nodes == CPUSet.of(0) and m.packages[0].dies == (0,)
    assert m.die_cpus(1, 0) == m.package_cpus(1)
    assert m.cluster_cpus(1, 1) == CPUSet.parse("101,105")
    # core ids repeat per package: (0, 0) and (1, 0) are different cores
    assert m.core_cpus(0, 0) == CPUSet.parse("0,4")
    assert m.core_cpus(1, 0) == CPUSet.parse("100,104")
    assert len(m.cores) == 4
    assert m.thread_siblings(104) == CPUSet.parse("100,104")
    assert m.core_of(5).id == 1 and m.package_of(101) == 1 and m.node_of(101) == 1
    assert m.die_of(100).package_id == 1 and m.cluster_of(5).cpus == CPUSet.parse("1,5")
    assert [n.id for n in m.nodes_of_package(0)] == [0]
    assert [n.id for n in m.nodes_of_die(1, 0)] == [1]
    assert [d.id for d in m.dies_of_package(0)] == [0]
    assert m.isolated == CPUSet.of(5)
    assert m.node_cpus(2) == CPUSet()


def test_caches_are_ordered_and_indexed_per_cpu() -> None:
    m = two_socket()
    assert [(g.level, g.id) for g in m.caches] == [(2, 0), (2, 1), (2, 2), (2, 3), (3, 0), (3, 1)]
    assert m.cache_cpus(3, 1) == m.package_cpus(1)
    assert [g.level for g in m.caches_of_cpu(104)] == [2, 3]
    l2 = m.cache_of(104, 2)
    assert l2 is not None and l2.cpus == CPUSet.parse("100,104")
    assert m.cache_of(104, 1, CacheType.DATA) is None
    assert m.caches_of_cpu(999) == ()
    assert len(m.cache_groups(2)) == 4
    with pytest.raises(KeyError):
        m.cache_cpus(4, 0)


def test_memory_queries() -> None:
    m = two_socket()
    assert m.memory_bytes(2) == 512 << 30
    assert m.memory_type(3) is MemoryType.PMEM
    assert m.nodes_of_type(MemoryType.DRAM) == CPUSet.parse("0-1")
    assert m.memory_by_type() == {MemoryType.DRAM: 128 << 30, MemoryType.PMEM: 1024 << 30}
    assert m.cpu_nodes == CPUSet.parse("0-1") and m.memory_only_nodes == CPUSet.parse("2-3")
    assert not m.nodes[2].has_cpus and m.nodes[0].has_cpus


def test_distance_queries() -> None:
    m = two_socket()
    assert m.distance(0, 2) == 17 and m.distance(1, 2) == 28
    assert m.nodes_by_distance(0) == [0, 2, 1, 3]
    assert m.nodes_nearest_cpu(104) == [1, 3, 0, 2]
    assert m.nearest_nodes(0) == CPUSet.of(2)
    assert m.nearest_nodes(0, with_cpus=True) == CPUSet.of(1)
    assert m.nearest_nodes(0, with_cpus=False) == CPUSet.of(2)
    assert m.closest_cpu_node(3) == 1 and m.closest_cpu_node(0) == 0
    assert m.closest_cpu_nodes() == {2: 0, 3: 1}
    assert m.distance_matrix() == DIST
    assert m.has_symmetric_distances()


def test_unknown_distances_default_and_asymmetry_is_kept() -> None:
    cpus = [CPU(0, 0, 0, 0, 0, 0), CPU(1, 0, 0, 1, 1, 1)]
    nodes = [
        NumaNode(0, CPUSet.of(0), 1 << 30, distances={0: 10, 1: 20}),
        NumaNode(1, CPUSet.of(1), 1 << 30, distances={0: 30}),
    ]
    m = Machine.build(cpus, nodes)
    assert m.distance(1, 1) == 10  # not in the row: local default
    assert m.distance(1, 0) == 30 and m.distance(0, 1) == 20
    assert not m.has_symmetric_distances()


def test_hybrid_queries() -> None:
    cpus = [
        CPU(0, 0, 0, 0, 0, 0),
        CPU(1, 0, 0, 0, 0, 0),
        CPU(2, 0, 0, 8, 8, 0, CoreType.EFFICIENT),
        CPU(3, 0, 0, 8, 9, 0, CoreType.EFFICIENT),
    ]
    m = Machine.build(cpus, [NumaNode(0, CPUSet.parse("0-3"), 1 << 30)])
    assert m.is_hybrid
    assert m.cpus_of_type(CoreType.EFFICIENT) == CPUSet.parse("2-3")
    assert m.cores[(0, 8)].core_type is CoreType.EFFICIENT
    assert m.cluster_cpus(0, 8) == CPUSet.parse("2-3")
    assert not two_socket().is_hybrid


def test_machine_equality_ignores_the_cache_index() -> None:
    assert two_socket() == two_socket()


def _node(cpus: str = "0", **kw: object) -> NumaNode:
    return NumaNode(0, CPUSet.parse(cpus), 1 << 30, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("cpus", "nodes", "caches", "isolated", "message"),
    [
        ([CPU(0, 0, 0, 0, 0, 0), CPU(0, 0, 0, 0, 0, 0)], [_node()], [], "", "duplicate CPU ids"),
        ([CPU(0, 0, 0, 0, 0, 5)], [_node()], [], "", "unknown NUMA node 5"),
        ([CPU(0, 0, 0, 0, 0, 0)], [_node("")], [], "", "missing from node 0"),
        ([CPU(0, 0, 0, 0, 0, 0)], [_node("0-1")], [], "", "not online"),
        ([CPU(0, 0, 0, 0, 0, 0)], [_node()], [], "3", "isolated cpus 3"),
        (
            [CPU(0, 0, 0, 0, 0, 0)],
            [_node(distances={0: 10, 7: 20})],
            [],
            "",
            r"unknown nodes \[7\]",
        ),
        (
            [CPU(0, 0, 0, 0, 0, 0), CPU(1, 0, 0, 0, 0, 0, CoreType.EFFICIENT)],
            [_node("0-1")],
            [],
            "",
            "mixes core types",
        ),
        (
            [CPU(0, 0, 0, 3, 0, 0), CPU(1, 0, 1, 3, 1, 0)],
            [_node("0-1")],
            [],
            "",
            "spans dies 0 and 1",
        ),
        (
            [CPU(0, 0, 0, 0, 0, 0)],
            [_node()],
            [CacheGroup(2, CacheType.UNIFIED, 0, CPUSet.parse("0-1"))],
            "",
            "not online",
        ),
    ],
)
def test_build_rejects_inconsistent_input(
    cpus: list[CPU], nodes: list[NumaNode], caches: list[CacheGroup], isolated: str, message: str
) -> None:
    with pytest.raises(TopologyError, match=message):
        Machine.build(cpus, nodes, caches, CPUSet.parse(isolated))


def test_nodes_across_dies_names_each_node_on_more_than_one_die_or_package() -> None:
    assert node_across_packages_machine().nodes_across_dies() == {0: 2}
    assert node_across_packages_machine().node_across_dies() == (
        "NUMA node 0 spans 2 dies or packages"
    )
    assert two_socket().nodes_across_dies() == {}
    assert two_socket().node_across_dies() is None
    one_node = Machine.build(
        [CPU(0, 0, 0, 0, 0, 0), CPU(1, 1, 0, 1, 1, 0)],
        [NumaNode(0, CPUSet.parse("0-1"), 1 << 30)],
    )
    assert one_node.nodes_across_dies() == {}  # one node: a kernel without NUMA shows that
