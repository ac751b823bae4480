"""The pool tree on every catalogue machine: names, nesting, folding and memory attachment."""

from __future__ import annotations

import pytest

from nrirp.adapters.fakehw import expected_machine, spec_from_yaml
from nrirp.adapters.fakehw.catalogue import machine_names
from nrirp.domain.config import BurstableLevel
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.topology_aware.pools import (
    PoolKind,
    PoolTreeError,
    build_pool_tree,
)
from nrirp.domain.topology import CPU, CacheGroup, CacheType, Machine, NumaNode

from .support import GiB, anno, catalogue, make_rig


def shape(name: str) -> list[tuple[str, str, str, str]]:
    m = catalogue(name)
    tree = build_pool_tree(m, m.online)
    return [
        (p.name, p.parent.name if p.parent else "", str(p.cpus), str(p.mems)) for p in tree.pools
    ]


def test_box16_root_sockets_numa_nodes() -> None:
    assert shape("box-16") == [
        ("root", "", "0-15", "0-3"),
        ("socket #0", "root", "0-7", "0-1"),
        ("NUMA node #0", "socket #0", "0-3", "0"),
        ("NUMA node #1", "socket #0", "4-7", "1"),
        ("socket #1", "root", "8-15", "2-3"),
        ("NUMA node #2", "socket #1", "8-11", "2"),
        ("NUMA node #3", "socket #1", "12-15", "3"),
    ]


def test_server_112_pmem_nodes_attach_to_closest_dram_pool() -> None:
    assert shape("server-112-pmem") == [
        ("root", "", "0-111", "0-5"),
        ("socket #0", "root", "0-27,56-83", "0-1,4"),
        ("NUMA node #0", "socket #0", "0-13,56-69", "0,4"),
        ("NUMA node #1", "socket #0", "14-27,70-83", "1"),
        ("socket #1", "root", "28-55,84-111", "2-3,5"),
        ("NUMA node #2", "socket #1", "28-41,84-97", "2,5"),
        ("NUMA node #3", "socket #1", "42-55,98-111", "3"),
    ]


def test_hbm_cxl_hbm_and_cxl_nodes_attach_by_distance() -> None:
    rows = {name: mems for name, _, _, mems in shape("hbm-cxl")}
    assert rows["NUMA node #0"] == "0,4,8"  # its HBM (4) and the CXL expander (8)
    assert rows["NUMA node #1"] == "1,5"
    assert rows["NUMA node #2"] == "2,6,9"
    assert rows["socket #1"] == "2-3,6-7,9"
    assert rows["root"] == "0-9"


def test_memory_equally_close_to_several_nodes_joins_each_of_their_pools() -> None:
    # epyc-nps2-64: the CXL node 2 is at distance 22 from both NUMA nodes (the reference
    # attaches it to each); the L3 groups of 4 cores split each node
    rows = shape("epyc-nps2-64")
    assert rows[:3] == [
        ("socket #0", "", "0-63", "0-2"),
        ("NUMA node #0", "socket #0", "0-15,32-47", "0,2"),
        ("NUMA node #0/L3 cache #0", "NUMA node #0", "0-3,32-35", "0,2"),
    ]
    by_name = {name: mems for name, _, _, mems in rows}
    assert by_name["NUMA node #1"] == "1-2" and by_name["NUMA node #1/L3 cache #7"] == "1-2"
    assert len(rows) == 1 + 2 + 8


def test_a_kernel_without_numa_gives_every_pool_the_one_node() -> None:
    assert shape("nonuma-2s-16") == [
        ("root", "", "0-15", "0"),
        ("socket #0", "root", "0-7", "0"),
        ("socket #1", "root", "8-15", "0"),
    ]


def test_single_socket_single_node_is_one_pool() -> None:
    tree = build_pool_tree(catalogue("hybrid-desktop"), catalogue("hybrid-desktop").online)
    assert [(p.name, p.kind) for p in tree.pools] == [("socket #0", PoolKind.SOCKET)]
    assert tree.top.levels == frozenset(BurstableLevel)


def test_one_node_per_socket_folds_the_numa_level() -> None:
    names = [n for n, *_ in shape("server-4s-144")]
    assert names == ["root", "socket #0", "socket #1", "socket #2", "socket #3"]
    tree = build_pool_tree(catalogue("server-4s-144"), catalogue("server-4s-144").online)
    assert BurstableLevel.NUMA in tree.pools[1].levels


def test_dies_kept_when_a_package_has_several() -> None:
    m = catalogue("sparse-8s-4096")
    tree = build_pool_tree(m, m.online)
    assert len(tree.pools) == 1 + 8 + 16 + 32
    names = [p.name for p in tree.pools[:8]]
    assert names == [
        "root",
        "socket #0",
        "die #0/0",
        "NUMA node #0",
        "NUMA node #1",
        "die #0/1",
        "NUMA node #2",
        "NUMA node #3",
    ]
    assert [p.id for p in tree.pools] == list(range(len(tree.pools)))  # pre-order ids
    die = tree.pools[2]
    assert die.parent is tree.pools[1] and die.cpus == CPUSet.parse("0-255")
    assert [c.name for c in die.children] == ["NUMA node #0", "NUMA node #1"]


def test_parents_hold_the_union_of_children_on_every_catalogue_machine() -> None:
    for name in machine_names():
        m = catalogue(name)
        tree = build_pool_tree(m, m.online)
        assert tree.top.cpus == m.online, name
        for pool in tree.pools:
            if pool.children:
                assert pool.cpus == CPUSet().union(*(c.cpus for c in pool.children)), pool
                assert pool.mems.issuperset(CPUSet().union(*(c.mems for c in pool.children)))
            for child in pool.children:
                assert child.depth == pool.depth + 1 and child.ancestors[0] is pool


def _l3_machine(node_memory: int = 8 * GiB) -> Machine:
    """One package, one node, 8 CPUs in two L3 groups (like a two-CCX part)."""
    cpus = [CPU(id=i, package_id=0, die_id=0, cluster_id=i, core_id=i, node_id=0) for i in range(8)]
    caches = [
        CacheGroup(level=3, type=CacheType.UNIFIED, id=0, cpus=CPUSet.parse("0-3")),
        CacheGroup(level=3, type=CacheType.UNIFIED, id=1, cpus=CPUSet.parse("4-7")),
    ]
    return Machine.build(
        cpus, [NumaNode(id=0, cpus=CPUSet.parse("0-7"), memory_bytes=node_memory)], caches
    )


def test_l3_level_only_where_a_pool_has_more_than_one_l3() -> None:
    m = _l3_machine()
    tree = build_pool_tree(m, m.online)
    assert [(p.name, str(p.cpus), str(p.mems)) for p in tree.pools] == [
        ("socket #0", "0-7", "0"),
        ("socket #0/L3 cache #0", "0-3", "0"),
        ("socket #0/L3 cache #1", "4-7", "0"),
    ]
    assert tree.pools[1].kind is PoolKind.L3 and BurstableLevel.L3CACHE in tree.pools[1].levels
    assert build_pool_tree(catalogue("box-16"), catalogue("box-16").online).pools[2].children == []


def test_memoryless_numa_node_is_folded_into_its_parent() -> None:
    cpus = [
        CPU(id=i, package_id=0, die_id=0, cluster_id=i, core_id=i, node_id=i // 2) for i in range(4)
    ]
    nodes = [
        NumaNode(id=0, cpus=CPUSet.parse("0-1"), memory_bytes=4 * GiB),
        NumaNode(id=1, cpus=CPUSet.parse("2-3"), memory_bytes=0),
    ]
    m = Machine.build(cpus, nodes)
    tree = build_pool_tree(m, m.online)
    assert [(p.name, str(p.cpus), str(p.mems)) for p in tree.pools] == [("socket #0", "0-3", "0")]


def test_asymmetric_distances_are_refused() -> None:
    cpus = [CPU(id=i, package_id=0, die_id=0, cluster_id=i, core_id=i, node_id=i) for i in range(2)]
    nodes = [
        NumaNode(id=0, cpus=CPUSet.of(0), memory_bytes=GiB, distances={0: 10, 1: 20}),
        NumaNode(id=1, cpus=CPUSet.of(1), memory_bytes=GiB, distances={0: 21, 1: 10}),
    ]
    m = Machine.build(cpus, nodes)
    with pytest.raises(PoolTreeError, match="asymmetric"):
        build_pool_tree(m, m.online)


def test_available_cpus_restrict_the_tree() -> None:
    m = catalogue("box-16")
    tree = build_pool_tree(m, CPUSet.parse("0-7"))
    assert [p.name for p in tree.pools] == ["socket #0", "NUMA node #0", "NUMA node #1"]


def test_hops_between_related_pools_only() -> None:
    m = catalogue("box-16")
    tree = build_pool_tree(m, m.online)
    root, s0, n0, n1 = tree.pools[0], tree.pools[1], tree.pools[2], tree.pools[3]
    assert n0.hops_to(n0) == 0 and n0.hops_to(s0) == 1 and n0.hops_to(root) == 2
    assert root.hops_to(n1) == 2 and n0.hops_to(n1) is None


# Two sockets: socket 0 has a DRAM node (0) and a memory-less CPU node (1), socket 1 one DRAM
# node (2); the PMEM node 3 hangs off the memory-less node 1, the PMEM node 4 off node 2.
_PMEM_BEHIND_MEMORYLESS_NODE = """
name: pmem-behind-memoryless-node
explicit:
  nodes:
    - {id: 0, package: 0, memory: 8Gi, cores: [{id: 0, cpus: "0"}, {id: 1, cpus: "1"}]}
    - {id: 1, package: 0, memory: 0, cores: [{id: 2, cpus: "2"}, {id: 3, cpus: "3"}]}
    - {id: 2, package: 1, memory: 8Gi, cores: [{id: 4, cpus: "4"}, {id: 5, cpus: "5"}]}
memory_nodes:
  - {memory: 64Gi, nearest: 1, type: pmem}
  - {memory: 64Gi, nearest: 2, type: pmem}
"""


def test_memory_only_node_behind_a_memoryless_cpu_node_joins_the_pools_of_its_cpus() -> None:
    m = expected_machine(spec_from_yaml(_PMEM_BEHIND_MEMORYLESS_NODE))
    assert m.closest_cpu_node_set(3) == CPUSet.of(1)
    tree = build_pool_tree(m, m.online)
    # node 1 has no pool of its own (no memory): its CPUs, and the PMEM behind them, are
    # socket #0's
    assert [(p.name, str(p.cpus), str(p.mems)) for p in tree.pools] == [
        ("root", "0-5", "0,2-4"),
        ("socket #0", "0-3", "0,3"),
        ("socket #1", "4-5", "2,4"),
    ]


def test_memory_only_node_behind_a_memoryless_socket_is_in_its_pools() -> None:
    spec = """
name: memoryless-socket
explicit:
  nodes:
    - {id: 0, package: 0, memory: 8Gi, cores: [{id: 0, cpus: "0"}, {id: 1, cpus: "1"}]}
    - {id: 1, package: 1, memory: 0, cores: [{id: 2, cpus: "2"}, {id: 3, cpus: "3"}]}
memory_nodes:
  - {memory: 64Gi, nearest: 1, type: pmem}
"""
    m = expected_machine(spec_from_yaml(spec))
    tree = build_pool_tree(m, m.online)
    assert [(p.name, str(p.mems)) for p in tree.pools] == [
        ("root", "0,2"),
        ("socket #0", "0"),
        ("socket #1", "2"),  # DRAM requests placed there are covered by node 0 (pool_nodes)
    ]


def test_memory_behind_a_memoryless_cpu_node_is_offered_to_containers_on_its_cpus() -> None:
    rig = make_rig(expected_machine(spec_from_yaml(_PMEM_BEHIND_MEMORYLESS_NODE)))
    _, ctr, _ = rig.run(
        "pm", "Guaranteed", cpu=2000, memory=GiB, annotations=anno("memory-type", "mixed")
    )
    assert rig.pool(ctr) == "socket #0"
    assert rig.mems(ctr) == CPUSet.parse("0,3")
