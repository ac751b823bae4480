"""The sysfs tree is written in the kernel's file names and formats."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nrirp.adapters.fakehw import (
    SysfsTreeError,
    load_machine,
    resolve,
    write_procfs,
    write_sysfs,
)

CPU = "devices/system/cpu"
NODE = "devices/system/node"


@pytest.fixture(scope="module")
def pmem_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pmem") / "sys"
    write_sysfs(resolve(load_machine("server-112-pmem")), root)
    return root


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text()


def test_cpu_lists(pmem_tree: Path) -> None:
    for name in ("online", "present", "possible"):
        assert read(pmem_tree, f"{CPU}/{name}") == "0-111\n"
    assert read(pmem_tree, f"{CPU}/offline") == "\n"
    assert read(pmem_tree, f"{CPU}/isolated") == "\n"


def test_topology_files(pmem_tree: Path) -> None:
    topo = f"{CPU}/cpu57/topology"
    assert read(pmem_tree, f"{topo}/physical_package_id") == "0\n"
    assert read(pmem_tree, f"{topo}/core_id") == "1\n"
    assert read(pmem_tree, f"{topo}/die_id") == "0\n"
    assert read(pmem_tree, f"{topo}/thread_siblings_list") == "1,57\n"
    assert read(pmem_tree, f"{topo}/core_cpus_list") == "1,57\n"
    assert read(pmem_tree, f"{topo}/package_cpus_list") == "0-27,56-83\n"
    assert read(pmem_tree, f"{topo}/core_siblings_list") == "0-27,56-83\n"
    assert read(pmem_tree, f"{topo}/die_cpus_list") == "0-27,56-83\n"
    assert read(pmem_tree, f"{topo}/cluster_cpus_list") == "1,57\n"
    assert (pmem_tree / f"{topo}/cluster_id").is_file()


def test_cache_files(pmem_tree: Path) -> None:
    index = f"{CPU}/cpu57/cache"
    assert sorted(p.name for p in (pmem_tree / index).iterdir()) == [f"index{i}" for i in range(4)]
    assert read(pmem_tree, f"{index}/index0/type") == "Data\n"
    assert read(pmem_tree, f"{index}/index1/type") == "Instruction\n"
    assert read(pmem_tree, f"{index}/index2/type") == "Unified\n"
    assert read(pmem_tree, f"{index}/index2/level") == "2\n"
    assert read(pmem_tree, f"{index}/index2/size") == "1024K\n"
    assert read(pmem_tree, f"{index}/index3/size") == "39424K\n"
    assert read(pmem_tree, f"{index}/index3/shared_cpu_list") == "0-27,56-83\n"
    assert read(pmem_tree, f"{index}/index3/id") == "0\n"


def test_cpufreq_is_a_policy_symlink(pmem_tree: Path) -> None:
    link = pmem_tree / f"{CPU}/cpu9/cpufreq"
    assert link.is_symlink() and os.readlink(link) == "../cpufreq/policy9"
    assert read(pmem_tree, f"{CPU}/cpu9/cpufreq/base_frequency") == "2700000\n"
    assert read(pmem_tree, f"{CPU}/cpufreq/policy9/cpuinfo_max_freq") == "4000000\n"
    assert read(pmem_tree, f"{CPU}/cpu9/cpufreq/energy_performance_preference") == (
        "balance_performance\n"
    )


def test_node_files(pmem_tree: Path) -> None:
    assert read(pmem_tree, f"{NODE}/online") == "0-5\n"
    assert read(pmem_tree, f"{NODE}/possible") == "0-5\n"
    assert read(pmem_tree, f"{NODE}/has_cpu") == "0-3\n"
    assert read(pmem_tree, f"{NODE}/has_memory") == "0-5\n"
    assert read(pmem_tree, f"{NODE}/node1/cpulist") == "14-27,70-83\n"
    assert read(pmem_tree, f"{NODE}/node4/cpulist") == "\n"  # memory-only
    assert read(pmem_tree, f"{NODE}/node0/distance") == "10 11 21 21 17 28\n"
    assert read(pmem_tree, f"{NODE}/node4/distance") == "17 18 28 28 10 35\n"
    meminfo = read(pmem_tree, f"{NODE}/node4/meminfo").splitlines()
    assert meminfo[0] == "Node 4 MemTotal:       805306368 kB"
    assert read(pmem_tree, f"{NODE}/node0/meminfo").splitlines()[0] == (
        "Node 0 MemTotal:       100663296 kB"
    )


def test_hybrid_pmu_files_and_no_files_on_non_hybrid(tmp_path: Path, pmem_tree: Path) -> None:
    write_sysfs(resolve(load_machine("hybrid-desktop")), tmp_path / "sys")
    assert read(tmp_path / "sys", "devices/cpu_core/cpus") == "0-15\n"
    assert read(tmp_path / "sys", "devices/cpu_atom/cpus") == "16-23\n"
    assert read(tmp_path / "sys", f"{CPU}/cpu17/topology/cluster_cpus_list") == "16-19\n"
    assert read(tmp_path / "sys", f"{CPU}/cpu17/cache/index2/shared_cpu_list") == "16-19\n"
    assert read(tmp_path / "sys", f"{CPU}/cpu17/cache/index2/size") == "2048K\n"
    assert not (pmem_tree / "devices/cpu_atom").exists()


def test_pmu_lists_leave_out_cores_of_no_kind(tmp_path: Path) -> None:
    from nrirp.adapters.fakehw import spec_from_yaml

    spec = spec_from_yaml(
        "name: k\nexplicit:\n  nodes:\n    - id: 0\n      package: 0\n      memory: 1Gi\n"
        "      cores: [{id: 0, cpus: 0-1}, {id: 1, cpus: 2-3, type: none}]\n"
    )
    write_sysfs(resolve(spec), tmp_path / "sys")
    assert read(tmp_path / "sys", "devices/cpu_core/cpus") == "0-1\n"
    assert not (tmp_path / "sys/devices/cpu_atom").exists()


def test_procfs_meminfo_and_no_node_directory_without_numa(tmp_path: Path) -> None:
    layout = resolve(load_machine("nonuma-2s-16"))
    write_sysfs(layout, tmp_path / "sys")
    write_procfs(layout, tmp_path / "proc")
    assert not (tmp_path / "sys" / NODE).exists()
    assert read(tmp_path / "proc", "meminfo").splitlines()[0] == "MemTotal:       33554432 kB"
    with pytest.raises(SysfsTreeError):
        write_procfs(layout, tmp_path / "proc")  # not empty any more


def test_offline_cpus_keep_only_their_online_file(tmp_path: Path) -> None:
    from nrirp.adapters.fakehw import spec_from_yaml

    spec = spec_from_yaml(
        "name: o\ncompact: {cores_per_node: 2, threads_per_core: 2}\noffline: '1'\n"
    )
    write_sysfs(resolve(spec), tmp_path / "sys")
    root = tmp_path / "sys"
    assert read(root, f"{CPU}/online") == "0,2-3\n" and read(root, f"{CPU}/offline") == "1\n"
    assert read(root, f"{CPU}/cpu1/online") == "0\n" and read(root, f"{CPU}/cpu2/online") == "1\n"
    assert not (root / f"{CPU}/cpu1/topology").exists()
    assert not (root / f"{CPU}/cpu1/cache").exists()
    assert read(root, f"{CPU}/cpu0/topology/thread_siblings_list") == "0\n"
    assert read(root, f"{NODE}/node0/cpulist") == "0,2-3\n"


def test_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "junk").write_text("x")
    with pytest.raises(SysfsTreeError, match="not an empty directory"):
        write_sysfs(resolve(load_machine("box-16")), tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["junk"]
    write_sysfs(resolve(load_machine("box-16")), tmp_path / "new")  # a new directory is fine
    write_sysfs(resolve(load_machine("box-16")), tmp_path / "empty")
    assert (tmp_path / "empty/devices/system/cpu/online").read_text() == "0-15\n"
