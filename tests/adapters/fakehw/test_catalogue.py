"""Catalogue machines: each discovered from its written sysfs tree, and what makes each one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nrirp.adapters.fakehw import (
    FakeHardwareDiscovery,
    UnknownMachineError,
    expected_machine,
    load_machine,
    load_machine_or_file,
    machine_names,
    resolve,
    write_procfs,
    write_sysfs,
)
from nrirp.adapters.fakehw.discovery import scratch_dir
from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.topology import CacheType, CoreType, Machine, MemoryType

REQUIRED = {
    "hybrid-desktop",
    "box-16",
    "server-112-pmem",
    "server-4s-144",
    "sparse-8s-4096",
    "hbm-cxl",
}


def test_catalogue_has_the_required_machines() -> None:
    assert set(machine_names()) >= REQUIRED
    assert all(load_machine(n).description for n in machine_names())


@pytest.fixture(scope="module")
def discovered() -> Iterator[dict[str, Machine]]:
    """Every catalogue machine written as sysfs and read back by the sysfs adapter."""
    import tempfile

    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        out = {}
        for name in machine_names():
            layout = resolve(load_machine(name))
            root = Path(tmp) / name
            write_sysfs(layout, root / "sys")
            write_procfs(layout, root / "proc")
            out[name] = SysfsDiscovery(str(root / "sys"), layout.declared_memory_types).discover()
        yield out


@pytest.mark.parametrize("name", machine_names())
def test_discovery_of_written_tree_gives_the_spec_machine(
    discovered: dict[str, Machine], name: str
) -> None:
    assert discovered[name] == expected_machine(load_machine(name))


def test_box_16(discovered: dict[str, Machine]) -> None:
    m = discovered["box-16"]
    assert len(m.online) == 16 and len(m.packages) == 2 and len(m.nodes) == 4
    assert len(m.cores) == 8 and all(len(c.cpus) == 2 for c in m.cores.values())
    assert [str(n.cpus) for n in m.nodes.values()] == ["0-3", "4-7", "8-11", "12-15"]


def test_hybrid_desktop(discovered: dict[str, Machine]) -> None:
    m = discovered["hybrid-desktop"]
    assert m.is_hybrid
    assert m.cpus_of_type(CoreType.PERFORMANCE) == CPUSet.parse("0-15")
    assert m.cpus_of_type(CoreType.EFFICIENT) == CPUSet.parse("16-23")
    assert m.thread_siblings(7) == CPUSet.parse("6-7") and m.thread_siblings(20) == CPUSet.of(20)
    e_clusters = [c for c in m.clusters.values() if c.cpus & m.cpus_of_type(CoreType.EFFICIENT)]
    assert [str(c.cpus) for c in e_clusters] == ["16-19", "20-23"]
    for cluster in e_clusters:  # four E-cores share one L2
        l2 = m.cache_of(cluster.cpus.min(), 2)
        assert l2 is not None and l2.cpus == cluster.cpus
    assert {m.cpus[c].max_frequency_khz for c in range(16)} == {5100000, 5200000}
    assert m.cpus[4].max_frequency_khz == 5200000  # a favoured core
    assert m.cpus[16].base_frequency_khz < m.cpus[0].base_frequency_khz  # type: ignore[operator]
    assert {c.epp for c in m.cpus.values()} == {"balance_performance"}


def test_server_112_pmem(discovered: dict[str, Machine]) -> None:
    m = discovered["server-112-pmem"]
    assert len(m.online) == 112 and len(m.packages) == 2
    assert m.nodes_of_type(MemoryType.DRAM) == CPUSet.parse("0-3")
    assert m.nodes_of_type(MemoryType.PMEM) == CPUSet.parse("4-5")
    assert m.memory_only_nodes == CPUSet.parse("4-5")
    assert m.closest_cpu_nodes() == {4: 0, 5: 2}
    assert m.thread_siblings(0) == CPUSet.parse("0,56")


def test_server_4s_144(discovered: dict[str, Machine]) -> None:
    m = discovered["server-4s-144"]
    assert len(m.online) == 144 and len(m.packages) == 4 and len(m.nodes) == 4
    assert all(len(p.cpus) == 36 for p in m.packages.values())


def test_sparse_8s_4096(discovered: dict[str, Machine]) -> None:
    m = discovered["sparse-8s-4096"]
    assert len(m.online) == 4096 and len(m.packages) == 8 and len(m.dies) == 16
    assert len(m.nodes) == 32 and m.online.max() == 7679
    assert 512 not in m.online and 1024 in m.online  # gaps in the numbering
    assert m.package_cpus(7) == CPUSet.parse("7168-7679")
    assert len(m.cores) == 2048 and len(m.cache_groups(3)) == 16
    assert m.isolated == CPUSet.parse("7676-7679")
    assert m.distance(0, 1) == 11 and m.distance(0, 2) == 12 and m.distance(0, 4) == 21


def test_hbm_cxl(discovered: dict[str, Machine]) -> None:
    m = discovered["hbm-cxl"]
    assert m.nodes_of_type(MemoryType.HBM) == CPUSet.parse("4-7")
    assert m.nodes_of_type(MemoryType.PMEM) == CPUSet.parse("8-9")  # CXL: big, CPU-less
    assert m.closest_cpu_nodes() == {4: 0, 5: 1, 6: 2, 7: 3, 8: 0, 9: 2}
    assert m.nodes_by_distance(0)[:4] == [0, 1, 4, 5]
    assert len({m.distance(0, n) for n in m.nodes}) >= 6  # not a two-value matrix
    assert m.has_symmetric_distances()


def test_epyc_nps2_64(discovered: dict[str, Machine]) -> None:
    m = discovered["epyc-nps2-64"]
    assert len(m.online) == 64 and len(m.packages) == 1 and m.cpu_nodes == CPUSet.parse("0-1")
    l3 = m.cache_groups(3)
    assert [str(g.cpus) for g in l3[:2]] == ["0-3,32-35", "4-7,36-39"] and len(l3) == 8
    assert all(len(g.cpus) == 8 for g in l3)  # 4 cores x 2 threads each
    # the CXL node is equally close to both nodes
    assert m.memory_type(2) is MemoryType.PMEM
    assert m.closest_cpu_node_set(2) == CPUSet.parse("0-1") and m.closest_cpu_node(2) == 0
    assert m.distance(0, 2) == m.distance(1, 2) == 22


def test_nonuma_2s_16(discovered: dict[str, Machine]) -> None:
    m = discovered["nonuma-2s-16"]
    assert len(m.packages) == 2 and list(m.nodes) == [0]
    assert m.node_cpus(0) == m.online == CPUSet.parse("0-15")
    assert m.memory_bytes(0) == 32 << 30  # MemTotal of /proc/meminfo
    assert m.distance_matrix() == {0: {0: 10}}
    assert [str(g.cpus) for g in m.cache_groups(3)] == ["0-7", "8-15"]


def test_hbm_and_cxl_types_follow_from_sizes_without_configuration(tmp_path: Path) -> None:
    # the catalogue's declared types agree with the memory-type rule
    write_sysfs(resolve(load_machine("hbm-cxl")), tmp_path / "sys")
    m = SysfsDiscovery(str(tmp_path / "sys")).discover()
    assert m.nodes_of_type(MemoryType.HBM) == CPUSet.parse("4-7")


def test_fake_discovery_is_a_hardware_discovery_port() -> None:
    discovery: HardwareDiscovery = FakeHardwareDiscovery(load_machine("box-16"))
    assert discovery.discover() == expected_machine(load_machine("box-16"))


def test_fake_discovery_passes_declared_types_and_overrides() -> None:
    spec = load_machine("server-112-pmem")
    assert FakeHardwareDiscovery(spec).discover().memory_type(4) is MemoryType.PMEM
    overridden = FakeHardwareDiscovery(spec, {4: MemoryType.HBM}).discover()
    assert overridden.memory_type(4) is MemoryType.HBM
    assert overridden.memory_type(5) is MemoryType.PMEM


def test_unknown_machine_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMachineError, match=r"no catalogue machine named .nope.*box-16"):
        load_machine("nope")
    with pytest.raises(UnknownMachineError):
        load_machine("../machines/box-16")


def test_load_machine_or_file(tmp_path: Path) -> None:
    assert load_machine_or_file("box-16").name == "box-16"
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\ncompact: {cores_per_node: 3}\n")
    assert load_machine_or_file(str(path)).name == "mine"


def test_l1_caches_are_per_core(discovered: dict[str, Machine]) -> None:
    m = discovered["server-4s-144"]
    l1d = m.cache_of(0, 1, CacheType.DATA)
    assert l1d is not None and l1d.cpus == m.thread_siblings(0)


def test_a_fake_machine_inconsistency_is_named_by_the_machine_not_its_scratch_tree() -> None:
    from nrirp.domain.ports.hardware import HardwareDiscoveryError

    fake = FakeHardwareDiscovery(load_machine("box-16"), {9: MemoryType.PMEM})
    with pytest.raises(HardwareDiscoveryError) as failed:
        fake.discover()
    assert str(failed.value) == (
        "machine box-16: memory type configured for unknown NUMA nodes [9]"
    )
