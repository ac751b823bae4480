"""Missing optional files degrade gracefully; offline CPUs and overrides are handled."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.ports.hardware import HardwareDiscoveryError
from nrirp.domain.topology import CoreType, MemoryType

from .support import rewrite

CPU = "devices/system/cpu"
NODE = "devices/system/node"


def discover(root: Path, **kw: object) -> object:
    return SysfsDiscovery(str(root), **kw).discover()  # type: ignore[arg-type]


def remove(root: Path, pattern: str) -> int:
    found = list(root.glob(pattern))
    for path in found:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()
    return len(found)


def test_without_die_and_cluster_ids(root: Path) -> None:
    full = SysfsDiscovery(str(root)).discover()
    assert remove(root, f"{CPU}/cpu*/topology/die_id") == 16
    assert remove(root, f"{CPU}/cpu*/topology/cluster_id") == 16
    m = SysfsDiscovery(str(root)).discover()
    assert list(m.dies) == [(0, 0), (1, 0)]
    assert list(m.clusters) == [(0, 0), (1, 0)]  # one cluster per die
    assert m.cluster_cpus(1, 0) == m.package_cpus(1)
    assert m.cores == full.cores


def test_negative_ids_mean_unknown(root: Path) -> None:
    for cpu in range(16):
        rewrite(root, f"{CPU}/cpu{cpu}/topology/die_id", "-1\n")
        rewrite(root, f"{CPU}/cpu{cpu}/topology/cluster_id", "-1\n")
    m = SysfsDiscovery(str(root)).discover()
    assert list(m.dies) == [(0, 0), (1, 0)] and list(m.clusters) == [(0, 0), (1, 0)]


def test_without_cache_directories(root: Path) -> None:
    remove(root, f"{CPU}/cpu*/cache")
    m = SysfsDiscovery(str(root)).discover()
    assert m.caches == () and m.cache_of(0, 2) is None


def test_without_cache_ids_or_sizes(root: Path) -> None:
    remove(root, f"{CPU}/cpu*/cache/index*/id")
    remove(root, f"{CPU}/cpu*/cache/index*/size")
    m = SysfsDiscovery(str(root)).discover()
    assert [g.id for g in m.cache_groups(2)] == list(range(8))
    assert all(g.size_bytes is None for g in m.caches)


def test_without_cpufreq(root: Path) -> None:
    rewrite(root, f"{CPU}/cpu0/cpufreq/base_frequency", "2000000\n")
    assert SysfsDiscovery(str(root)).discover().cpus[0].base_frequency_khz == 2000000
    remove(root, f"{CPU}/cpu*/cpufreq")
    m = SysfsDiscovery(str(root)).discover()
    assert all(
        (c.base_frequency_khz, c.max_frequency_khz, c.epp) == (None, None, None)
        for c in m.cpus.values()
    )


def test_epp_is_read_and_blank_epp_is_none(root: Path) -> None:
    rewrite(root, f"{CPU}/cpu3/cpufreq/energy_performance_preference", "power\n")
    rewrite(root, f"{CPU}/cpu4/cpufreq/energy_performance_preference", "\n")
    m = SysfsDiscovery(str(root)).discover()
    assert m.cpus[3].epp == "power" and m.cpus[4].epp is None


def test_without_sibling_lists_cores_come_from_core_ids(root: Path) -> None:
    full = SysfsDiscovery(str(root)).discover()
    remove(root, f"{CPU}/cpu*/topology/thread_siblings_list")
    remove(root, f"{CPU}/cpu*/topology/core_cpus_list")
    assert SysfsDiscovery(str(root)).discover() == full


def test_kernel_without_numa(root: Path) -> None:
    # one node 0 with every CPU and the memory of /proc/meminfo (beside the sysfs root)
    remove(root, NODE)
    rewrite(root.parent, "proc/meminfo", "MemTotal:       32768000 kB\nMemFree:  1 kB\n")
    m = SysfsDiscovery(str(root)).discover()
    assert list(m.nodes) == [0] and m.distance_matrix() == {0: {0: 10}}
    assert m.node_cpus(0) == CPUSet.parse("0-15") and m.memory_bytes(0) == 32768000 * 1024
    assert m.memory_type(0) is MemoryType.DRAM
    # or from another procfs root
    rewrite(root.parent, "elsewhere/meminfo", "MemTotal: 1024 kB\n")
    other = SysfsDiscovery(str(root), procfs_root=str(root.parent / "elsewhere")).discover()
    assert other.memory_bytes(0) == 1 << 20


def test_kernel_without_numa_needs_meminfo(root: Path) -> None:
    remove(root, NODE)
    with pytest.raises(HardwareDiscoveryError) as err:
        SysfsDiscovery(str(root)).discover()
    assert str(err.value) == (
        f"{root}/devices/system/node is missing (a kernel without NUMA), so the memory size "
        f"comes from {root.parent}/proc/meminfo: missing"
    )
    rewrite(root.parent, "proc/meminfo", "MemFree: 12 kB\n")
    with pytest.raises(HardwareDiscoveryError, match="no 'MemTotal: X kB' line: 'MemFree"):
        SysfsDiscovery(str(root)).discover()


def test_the_procfs_root_is_beside_the_sysfs_root() -> None:
    assert SysfsDiscovery().procfs_root == "/proc"
    assert SysfsDiscovery("/tmp/x/sys/").procfs_root == "/tmp/x/proc"


def test_node_ids_from_directories_without_online_list(root: Path) -> None:
    full = SysfsDiscovery(str(root)).discover()
    remove(root, f"{NODE}/online")
    assert SysfsDiscovery(str(root)).discover() == full


def test_without_meminfo_or_distance(root: Path) -> None:
    remove(root, f"{NODE}/node1/meminfo")
    remove(root, f"{NODE}/node1/distance")
    m = SysfsDiscovery(str(root)).discover()
    assert m.memory_bytes(1) == 0 and dict(m.nodes[1].distances) == {}
    assert m.distance(1, 1) == 10 and m.distance(1, 0) == 20  # documented defaults
    assert m.distance(0, 1) == 11  # node 0's own row is still read


def test_online_falls_back_to_present(root: Path) -> None:
    remove(root, f"{CPU}/online")
    assert SysfsDiscovery(str(root)).discover().online == CPUSet.parse("0-15")


def test_offline_cpus_are_ignored_even_where_listed(root: Path) -> None:
    # only the online list changes: every other file still lists cpu 3
    rewrite(root, f"{CPU}/online", "0-2,4-15\n")
    rewrite(root, f"{CPU}/isolated", "3,9,40\n")
    m = SysfsDiscovery(str(root)).discover()
    assert 3 not in m.online and 3 not in m.cpus and len(m.online) == 15
    assert m.thread_siblings(2) == CPUSet.of(2)
    assert 3 not in m.node_cpus(0)
    assert all(3 not in g.cpus for g in m.caches)
    assert m.isolated == CPUSet.of(9)  # isolcpus may name offline or absent CPUs


def test_memory_type_override_wins(root: Path) -> None:
    m = SysfsDiscovery(str(root), {1: MemoryType.HBM}).discover()
    assert m.memory_type(1) is MemoryType.HBM and m.memory_type(0) is MemoryType.DRAM


def test_cpuless_nodes_follow_the_size_rule(root: Path) -> None:
    # turn node 3 into a small and node 2 into a large memory-only node
    rewrite(root, f"{NODE}/node0/cpulist", "0-3,8-11\n")
    rewrite(root, f"{NODE}/node1/cpulist", "4-7,12-15\n")
    rewrite(root, f"{NODE}/node2/cpulist", "\n")
    rewrite(root, f"{NODE}/node3/cpulist", "\n")
    rewrite(root, f"{NODE}/node2/meminfo", "Node 2 MemTotal:  8388608 kB\n")
    rewrite(root, f"{NODE}/node3/meminfo", "Node 3 MemTotal:  1048576 kB\n")
    m = SysfsDiscovery(str(root)).discover()
    assert m.memory_type(2) is MemoryType.PMEM  # 8 GiB >= average DRAM (4 GiB)
    assert m.memory_type(3) is MemoryType.HBM  # 1 GiB < 4 GiB
    assert m.closest_cpu_node(2) == 0


def test_asymmetric_distances_are_kept(root: Path) -> None:
    rewrite(root, f"{NODE}/node0/distance", "10 15 21 21\n")
    m = SysfsDiscovery(str(root)).discover()
    assert m.distance(0, 1) == 15 and m.distance(1, 0) == 11
    assert not m.has_symmetric_distances()


def test_hybrid_pmu_lists(root: Path) -> None:
    rewrite(root, "devices/cpu_core/cpus", "0-11\n")
    rewrite(root, "devices/cpu_atom/cpus", "12-15\n")
    m = SysfsDiscovery(str(root)).discover()
    assert m.is_hybrid and m.cpus_of_type(CoreType.EFFICIENT) == CPUSet.parse("12-15")
    # only cpu_core present (as on some non-hybrid parts): nothing is an E-core
    remove(root, "devices/cpu_atom")
    assert not SysfsDiscovery(str(root)).discover().is_hybrid


def test_cpus_in_no_core_kind_list_have_no_kind(root: Path) -> None:
    # the kernel marks 0-11 as performance cores and leaves 12-15 out of every list
    rewrite(root, "devices/cpu_core/cpus", "0-11\n")
    m = SysfsDiscovery(str(root)).discover()
    assert m.cpus_of_type(CoreType.PERFORMANCE) == CPUSet.parse("0-11")
    assert m.cpus_of_type(CoreType.NONE) == CPUSet.parse("12-15")
    assert m.core_of(12).core_type is CoreType.NONE and not m.is_hybrid
    # with E-cores too, the rest are still of no kind
    rewrite(root, "devices/cpu_atom/cpus", "14-15\n")
    m = SysfsDiscovery(str(root)).discover()
    assert m.cpus_of_type(CoreType.NONE) == CPUSet.parse("12-13")
    assert m.cpus_of_type(CoreType.EFFICIENT) == CPUSet.parse("14-15")
    # without a cpu_core list nothing is marked: all performance cores (no E-cores listed)
    remove(root, "devices/cpu_core")
    remove(root, "devices/cpu_atom")
    m = SysfsDiscovery(str(root)).discover()
    assert m.cpus_of_type(CoreType.PERFORMANCE) == m.online


def test_real_sys_of_this_machine() -> None:
    import os

    m = SysfsDiscovery().discover()
    assert len(m.online) == os.cpu_count()
    assert m.online.issubset(CPUSet.from_ids(range(len(m.online) * 64)))
