"""Discovery of sysfs trees laid out like real machines (not produced by our writer)."""

from __future__ import annotations

from pathlib import Path

from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheType, MemoryType

from .support import unpack_dump


def test_two_socket_xeon_with_linux_numbering_and_an_offline_cpu(tmp_path: Path) -> None:
    m = SysfsDiscovery(str(unpack_dump("xeon-2s-56.txt", tmp_path))).discover()
    # cpu 55 is present but offline: ignored everywhere
    assert m.online == CPUSet.parse("0-54")
    assert m.package_cpus(0) == CPUSet.parse("0-13,28-41")
    assert m.package_cpus(1) == CPUSet.parse("14-27,42-54")
    # siblings are N and N+28; core ids repeat per package and have a gap at 7
    assert m.thread_siblings(3) == CPUSet.parse("3,31")
    assert m.thread_siblings(27) == CPUSet.of(27)  # its sibling 55 is offline
    assert sorted(core for (pkg, core) in m.cores if pkg == 1) == [*range(7), *range(8, 15)]
    assert m.core_cpus(1, 14) == CPUSet.of(27)
    assert len(m.cores) == 28
    # kernel 4.9: no die_id/cluster_id files -> one die per package, one cluster per die
    assert list(m.dies) == [(0, 0), (1, 0)]
    assert list(m.clusters) == [(0, 0), (1, 0)]
    assert m.cluster_cpus(1, 0) == m.package_cpus(1)
    # no cache id files: ids numbered per level in CPU order
    l3 = m.cache_groups(3)
    assert [(g.id, str(g.cpus), g.size_bytes) for g in l3] == [
        (0, "0-13,28-41", 35840 << 10),
        (1, "14-27,42-54", 35840 << 10),
    ]
    assert len(m.cache_groups(2)) == 28 and len(m.cache_groups(1, CacheType.INSTRUCTION)) == 28
    node0 = m.nodes[0]
    assert node0.memory_bytes == 131811176 << 10 and node0.memory_type is MemoryType.DRAM
    assert m.distance_matrix() == {0: {0: 10, 1: 21}, 1: {0: 21, 1: 10}}
    assert m.isolated == CPUSet.parse("13,41")
    cpu = m.cpus[30]
    assert (cpu.base_frequency_khz, cpu.max_frequency_khz, cpu.epp) == (None, 2401000, None)
    assert not m.is_hybrid


def test_epyc_with_gapped_core_ids_and_one_l3_per_ccd(tmp_path: Path) -> None:
    m = SysfsDiscovery(str(unpack_dump("epyc-1s-32.txt", tmp_path))).discover()
    assert m.online == CPUSet.parse("0-31") and len(m.cores) == 16
    assert m.thread_siblings(5) == CPUSet.parse("5,21")
    assert m.core_of(5).id == 9
    assert [(g.id, str(g.cpus)) for g in m.cache_groups(3)] == [
        (0, "0-3,16-19"),
        (1, "4-7,20-23"),
        (2, "8-11,24-27"),
        (3, "12-15,28-31"),
    ]
    l2 = m.cache_of(21, 2)
    assert l2 is not None and l2.id == 9 and l2.size_bytes == 512 << 10
    assert len(m.clusters) == 16 and m.cluster_of(21).cpus == CPUSet.parse("5,21")
    cpu = m.cpus[0]
    # no cpufreq/base_frequency with amd-pstate: the CPPC nominal frequency (MHz) stands in
    assert (cpu.base_frequency_khz, cpu.max_frequency_khz, cpu.epp) == (
        3000000,
        3729000,
        "balance_performance",
    )
    assert m.nodes[0].memory_bytes == 131595052 << 10
    assert m.isolated == CPUSet()
