"""Malformed sysfs input: a HardwareDiscoveryError that names the file and quotes its content."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.ports.hardware import HardwareDiscoveryError

from .support import rewrite

CPU = "devices/system/cpu"
NODE = "devices/system/node"


@pytest.mark.parametrize(
    ("rel", "content", "fragment"),
    [
        (f"{CPU}/online", "0-15,x\n", "not a cpu list"),
        (f"{CPU}/online", "\n", "no CPUs listed"),
        (f"{CPU}/isolated", "abc\n", "not a cpu list"),
        (f"{CPU}/cpu0/topology/thread_siblings_list", "2-3\n", "does not list cpu 0 itself"),
        (f"{CPU}/cpu0/topology/thread_siblings_list", "0-1-2\n", "not a cpu list"),
        (
            f"{CPU}/cpu2/topology/thread_siblings_list",
            "0,2-3\n",
            "lists cpus 0 whose own sibling lists leave out cpu 2",
        ),
        (f"{CPU}/cpu2/topology/core_id", "one\n", "not an integer"),
        (f"{CPU}/cpu2/topology/physical_package_id", "\n", "not an integer"),
        (f"{CPU}/cpu2/topology/die_id", "0x1\n", "not an integer"),
        (f"{CPU}/cpu2/topology/cluster_id", "?\n", "not an integer"),
        (f"{CPU}/cpu0/cache/index0/level", "L1\n", "not an integer"),
        (f"{CPU}/cpu0/cache/index0/level", "-2\n", "negative cache level"),
        (f"{CPU}/cpu0/cache/index2/type", "Weird\n", "unknown cache type"),
        (f"{CPU}/cpu0/cache/index0/size", "32Q\n", "not a cache size"),
        (f"{CPU}/cpu0/cache/index3/id", "x\n", "not an integer"),
        (f"{CPU}/cpu0/cache/index1/shared_cpu_list", "0-\n", "not a cpu list"),
        (f"{CPU}/cpu5/cpufreq/base_frequency", "fast\n", "not an integer"),
        (f"{CPU}/cpu5/cpufreq/cpuinfo_max_freq", "0\n", "frequency must be positive"),
        (f"{NODE}/online", "0-3,a\n", "not a cpu list"),
        (f"{NODE}/node0/cpulist", "0-3,\n", "not a cpu list"),
        (f"{NODE}/node1/meminfo", "garbage\n", "no 'Node N MemTotal: X kB' line"),
        (f"{NODE}/node1/meminfo", "Node 0 MemTotal: 4 kB\n", "is not for node 1"),
        (f"{NODE}/node0/distance", "10 11\n", "expected 4 distances"),
        (f"{NODE}/node0/distance", "10 x 21 21\n", "not integers"),
        (f"{NODE}/node0/distance", "10 0 21 21\n", "must be positive"),
        ("devices/cpu_atom/cpus", "zz\n", "not a cpu list"),
        (f"{CPU}/cpu3/acpi_cppc/nominal_freq", "-5\n", "frequency must be positive"),
    ],
)
def test_malformed_file(root: Path, rel: str, content: str, fragment: str) -> None:
    path = rewrite(root, rel, content)
    with pytest.raises(HardwareDiscoveryError) as info:
        SysfsDiscovery(str(root)).discover()
    message = str(info.value)
    assert str(path) in message
    assert repr(content) in message
    assert fragment in message


def test_long_content_is_quoted_shortened(root: Path) -> None:
    rewrite(root, f"{CPU}/isolated", "x" * 5000)
    with pytest.raises(HardwareDiscoveryError, match=r"\(5000 characters\)"):
        SysfsDiscovery(str(root)).discover()


def test_cpu_in_two_nodes(root: Path) -> None:
    rewrite(root, f"{NODE}/node1/cpulist", "0,4-7\n")
    with pytest.raises(HardwareDiscoveryError, match="cpu 0 is listed by node0 and node1"):
        SysfsDiscovery(str(root)).discover()


def test_online_cpu_in_no_node(root: Path) -> None:
    rewrite(root, f"{NODE}/node0/cpulist", "0-2\n")
    with pytest.raises(HardwareDiscoveryError, match="online cpus 3 are in no node"):
        SysfsDiscovery(str(root)).discover()


def test_missing_required_file_is_named(root: Path) -> None:
    (root / f"{CPU}/cpu4/topology/core_id").unlink()
    with pytest.raises(HardwareDiscoveryError) as info:
        SysfsDiscovery(str(root)).discover()
    assert f"{root}/{CPU}/cpu4/topology/core_id: missing" in str(info.value)


def test_missing_node_cpulist_is_named(root: Path) -> None:
    (root / f"{NODE}/node2/cpulist").unlink()
    with pytest.raises(HardwareDiscoveryError, match="node2/cpulist: missing"):
        SysfsDiscovery(str(root)).discover()


def test_online_cpu_without_directory(root: Path) -> None:
    rewrite(root, f"{CPU}/online", "0-16\n")
    rewrite(root, f"{NODE}/node3/cpulist", "12-16\n")
    with pytest.raises(HardwareDiscoveryError, match="cpu16/topology/"):
        SysfsDiscovery(str(root)).discover()


def test_inconsistent_topology_is_reported_as_discovery_error(root: Path) -> None:
    # cpu 1 (a sibling of cpu 0, read through cpu 0) claims to be an efficient core alone
    rewrite(root, "devices/cpu_atom/cpus", "1\n")
    with pytest.raises(HardwareDiscoveryError, match=r"inconsistent hardware.*mixes core types"):
        SysfsDiscovery(str(root)).discover()


def test_memory_type_for_unknown_node(root: Path) -> None:
    from nrirp.domain.topology import MemoryType

    with pytest.raises(HardwareDiscoveryError, match=r"unknown NUMA nodes \[9\]"):
        SysfsDiscovery(str(root), {9: MemoryType.HBM}).discover()


def test_missing_root(tmp_path: Path) -> None:
    with pytest.raises(HardwareDiscoveryError, match="no such directory"):
        SysfsDiscovery(str(tmp_path / "nope")).discover()


def test_tree_without_cpu_lists(tmp_path: Path) -> None:
    (tmp_path / CPU).mkdir(parents=True)
    with pytest.raises(HardwareDiscoveryError, match="neither 'online' nor 'present'"):
        SysfsDiscovery(str(tmp_path)).discover()


def test_cpu_in_both_hybrid_pmu_lists(root: Path) -> None:
    rewrite(root, "devices/cpu_core/cpus", "0-11\n")
    path = rewrite(root, "devices/cpu_atom/cpus", "11-15\n")
    with pytest.raises(HardwareDiscoveryError) as info:
        SysfsDiscovery(str(root)).discover()
    other = root / "devices/cpu_core/cpus"
    assert f"{path}: cpus 11 are also in {other}: '11-15\\n'" in str(info.value)
