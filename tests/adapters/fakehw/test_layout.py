"""What a spec means: numbering, clusters, hybrid cores, sparse ids, caches, distances."""

from __future__ import annotations

import pytest

from nrirp.adapters.fakehw import MachineSpecError, expected_machine, resolve, spec_from_yaml
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheType, CoreType, MemoryType


def machine(text: str):  # type: ignore[no-untyped-def]
    return expected_machine(spec_from_yaml(text))


def test_smt_adjacent_numbering() -> None:
    m = machine("name: a\ncompact: {packages: 2, cores_per_node: 2, threads_per_core: 2}\n")
    assert m.core_cpus(0, 0) == CPUSet.parse("0-1") and m.core_cpus(1, 1) == CPUSet.parse("6-7")
    assert m.package_cpus(1) == CPUSet.parse("4-7")


def test_smt_last_numbering_puts_siblings_n_apart() -> None:
    m = machine(
        "name: a\ncompact: {packages: 2, cores_per_node: 3, threads_per_core: 2, "
        "numbering: smt-last}\n"
    )
    assert m.core_cpus(0, 0) == CPUSet.parse("0,6")
    assert m.core_cpus(1, 2) == CPUSet.parse("5,11")  # core ids repeat per package
    assert m.package_cpus(1) == CPUSet.parse("3-5,9-11")


def test_dies_nodes_and_clusters() -> None:
    m = machine(
        "name: a\ncompact: {packages: 1, dies_per_package: 2, nodes_per_die: 2, "
        "cores_per_node: 4, cores_per_cluster: 2}\n"
    )
    assert list(m.dies) == [(0, 0), (0, 1)]
    assert m.dies[(0, 1)].nodes == CPUSet.parse("2-3")
    assert m.node_cpus(3) == CPUSet.parse("12-15")
    assert len(m.clusters) == 8 and m.cluster_cpus(0, 7) == CPUSet.parse("14-15")
    # core ids run on within the package across dies
    assert m.core_of(15).id == 15


def test_compact_hybrid() -> None:
    m = machine(
        "name: h\ncompact: {cores_per_node: 2, threads_per_core: 2, "
        "efficient_cores_per_node: 6, efficient_cores_per_cluster: 4, "
        "frequency: {base_khz: 3000000}, efficient_frequency: {base_khz: 2000000}}\n"
        "caches: [{level: 2, shared_by: cluster, size: 1M, efficient_size: 4M}]\n"
    )
    assert m.cpus_of_type(CoreType.PERFORMANCE) == CPUSet.parse("0-3")
    assert m.cpus_of_type(CoreType.EFFICIENT) == CPUSet.parse("4-9")
    assert [str(c.cpus) for c in m.clusters.values()] == ["0-1", "2-3", "4-7", "8-9"]
    l2 = {str(g.cpus): g.size_bytes for g in m.cache_groups(2)}
    assert l2 == {"0-1": 1 << 20, "2-3": 1 << 20, "4-7": 4 << 20, "8-9": 4 << 20}
    assert m.cpus[4].base_frequency_khz == 2000000 and m.cpus[0].base_frequency_khz == 3000000


def test_cpu_ids_renumber_onto_sparse_ids() -> None:
    m = machine(
        "name: s\ncompact: {packages: 2, cores_per_node: 2, threads_per_core: 2, "
        "cpu_ids: '0-3,1000-1003'}\n"
    )
    assert m.package_cpus(1) == CPUSet.parse("1000-1003")
    assert m.thread_siblings(1001) == CPUSet.parse("1000-1001")


def test_caches_by_scope() -> None:
    m = machine(
        "name: c\ncompact: {packages: 2, nodes_per_die: 2, cores_per_node: 2}\n"
        "caches:\n"
        "  - {level: 1, type: data, size: 32K}\n"
        "  - {level: 3, shared_by: node, size: 8M}\n"
        "  - {level: 4, shared_by: package}\n"
    )
    assert [str(g.cpus) for g in m.cache_groups(1, CacheType.DATA)] == [str(i) for i in range(8)]
    assert [str(g.cpus) for g in m.cache_groups(3)] == ["0-1", "2-3", "4-5", "6-7"]
    assert [(g.id, str(g.cpus), g.size_bytes) for g in m.cache_groups(4)] == [
        (0, "0-3", None),
        (1, "4-7", None),
    ]


def test_default_distances() -> None:
    m = machine(
        "name: d\ncompact: {packages: 2, dies_per_package: 2, nodes_per_die: 2}\n"
        "memory_nodes: [{memory: 64Gi, nearest: 5}, {memory: 64Gi, nearest: 0, distance: 20}]\n"
    )
    assert m.distance(0, 1) == 11  # same die
    assert m.distance(0, 2) == 12  # same package, other die
    assert m.distance(0, 4) == 21  # other package
    assert m.distance(8, 5) == 17 and m.distance(5, 8) == 17  # memory node to its CPU node
    assert m.distance(8, 4) == 17 + 11 - 10  # ... and through it to the others
    assert m.distance(9, 0) == 20 and m.distance(8, 9) == 7 + 10 + 21
    assert m.closest_cpu_nodes() == {8: 5, 9: 0}
    assert m.has_symmetric_distances()


def test_memory_nodes_ids_types_and_the_size_rule() -> None:
    m = machine(
        "name: m\ncompact: {nodes_per_die: 2, memory_per_node: 8Gi}\n"
        "memory_nodes:\n"
        "  - {memory: 2Gi, nearest: 0}\n"
        "  - {memory: 64Gi, nearest: 1, id: 7}\n"
        "  - {memory: 64Gi, nearest: 1, type: hbm}\n"
    )
    assert list(m.nodes) == [0, 1, 2, 3, 7]  # unnumbered nodes take the lowest free ids
    assert m.memory_type(2) is MemoryType.HBM  # smaller than the 8 GiB DRAM average
    assert m.memory_type(7) is MemoryType.PMEM
    assert m.memory_type(3) is MemoryType.HBM  # declared


def test_offline_cpus_leave_the_machine_but_not_the_layout() -> None:
    spec = spec_from_yaml(
        "name: o\ncompact: {cores_per_node: 4, threads_per_core: 2}\noffline: '3,7'\n"
    )
    layout = resolve(spec)
    assert layout.present == CPUSet.parse("0-7") and layout.online == CPUSet.parse("0-2,4-6")
    m = expected_machine(spec)
    assert m.online == layout.online and m.core_of(2).cpus == CPUSet.of(2)
    assert m.cache_of(6, 2) is not None and 7 not in m.cache_groups(3)[0].cpus


def test_memory_node_equally_close_to_several_cpu_nodes() -> None:
    m = machine(
        "name: d\ncompact: {packages: 2, nodes_per_die: 2}\n"
        "memory_nodes: [{memory: 64Gi, nearest: [0, 1], distance: 20}]\n"
    )
    assert m.distance(4, 0) == m.distance(4, 1) == 20
    assert m.distance(4, 2) == 20 + 21 - 10  # through the closer of its CPU nodes
    assert m.closest_cpu_node_set(4) == CPUSet.parse("0-1") and m.closest_cpu_node(4) == 0
    # a matrix must agree with the declared nodes
    text = (
        "name: d\ncompact: {nodes_per_die: 2}\n"
        "memory_nodes: [{memory: 1Gi, nearest: [0, 1]}]\n"
        "distances: [[10, 11, 17], [11, 10, 18], [17, 18, 10]]\n"
    )
    with pytest.raises(MachineSpecError, match="declared nearest to nodes 0-1 but the matrix "):
        spec_from_yaml(text)


def test_caches_split_into_groups_of_cores_or_listed_by_hand() -> None:
    m = machine(
        "name: c\ncompact: {nodes_per_die: 2, cores_per_node: 6, threads_per_core: 2}\n"
        "caches:\n"
        "  - {level: 3, shared_by: node, cores_per_instance: 4, size: 16M}\n"
        "  - level: 2\n"
        "    size: 1M\n"
        "    instances: [{cpus: 0-3, size: 2M}, {cpus: 4-11}, {cpus: 20-23, size: 512K}]\n"
    )
    l3 = [(str(g.cpus), g.size_bytes) for g in m.cache_groups(3)]
    # each node's 6 cores: one instance of 4 cores, one of the 2 left
    assert l3 == [("0-7", 16 << 20), ("8-11", 16 << 20), ("12-19", 16 << 20), ("20-23", 16 << 20)]
    l2 = [(str(g.cpus), g.size_bytes) for g in m.cache_groups(2)]
    assert l2 == [("0-3", 2 << 20), ("4-11", 1 << 20), ("20-23", 512 << 10)]
    assert m.cache_of(12, 2) is None  # in no instance: no L2


def test_cores_of_no_kind_next_to_performance_cores() -> None:
    m = machine(
        "name: k\nexplicit:\n  nodes:\n    - id: 0\n      package: 0\n      memory: 1Gi\n"
        "      cores: [{id: 0, cpus: 0-1}, {id: 1, cpus: 2-3, type: none}, "
        "{id: 2, cpus: '4', type: efficient}]\n"
    )
    assert m.cpus_of_type(CoreType.PERFORMANCE) == CPUSet.parse("0-1")
    assert m.cpus_of_type(CoreType.NONE) == CPUSet.parse("2-3")
    assert m.cpus_of_type(CoreType.EFFICIENT) == CPUSet.of(4)


def test_a_kernel_without_numa_has_one_node_with_all_the_memory() -> None:
    m = machine(
        "name: n\nnuma: false\n"
        "compact: {packages: 2, nodes_per_die: 2, cores_per_node: 2, memory_per_node: 1Gi}\n"
        "caches: [{level: 3, shared_by: node, size: 8M}]\n"
    )
    assert list(m.nodes) == [0] and m.node_cpus(0) == m.online == CPUSet.parse("0-7")
    assert m.memory_bytes(0) == 4 << 30
    assert {c.node_id for c in m.cpus.values()} == {0} and len(m.packages) == 2
    # the hardware's caches stay: one L3 per (former) node
    assert [str(g.cpus) for g in m.cache_groups(3)] == ["0-1", "2-3", "4-5", "6-7"]
    with pytest.raises(MachineSpecError) as err:
        spec_from_yaml(
            "name: n\nnuma: false\ncompact: {nodes_per_die: 2}\n"
            "memory_nodes: [{memory: 1Gi, nearest: 0}]\n"
            "distances: [[10, 11, 17], [11, 10, 18], [17, 18, 10]]\n"
            "devices: [{pci: '0000:01:00.0', node: 1}]\n"
        )
    assert str(err.value).splitlines()[1:] == [
        "  a kernel without NUMA ('numa: false') has none @ $.memory_nodes",
        "  a kernel without NUMA ('numa: false') has none @ $.distances",
        "  a kernel without NUMA ('numa: false') reports -1, got 1 @ $.devices[0].node",
    ]
