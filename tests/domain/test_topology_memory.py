"""The memory-type rule (the reference's heuristic) and its configured overrides."""

from __future__ import annotations

import pytest

from nrirp.domain.topology import MemoryType, TopologyError, classify_memory_types

GiB = 1 << 30


def test_cpu_nodes_are_dram_and_cpuless_nodes_split_by_average_dram_size() -> None:
    types = classify_memory_types(
        {0: 64 * GiB, 1: 128 * GiB, 2: 16 * GiB, 3: 96 * GiB, 4: 512 * GiB}, {0, 1}
    )
    # average DRAM node: 96 GiB. 16 < 96 -> HBM; 96 is not smaller -> PMEM; 512 -> PMEM
    assert types == {
        0: MemoryType.DRAM,
        1: MemoryType.DRAM,
        2: MemoryType.HBM,
        3: MemoryType.PMEM,
        4: MemoryType.PMEM,
    }


def test_overrides_win_and_change_the_dram_average() -> None:
    sizes = {0: 64 * GiB, 1: 16 * GiB, 2: 48 * GiB}
    assert (
        classify_memory_types(sizes, {0, 1})[2] is MemoryType.PMEM
    )  # average 40 GiB, 48 is not smaller
    # node 1 is really HBM with CPUs (e.g. HBM-only mode): it leaves the DRAM average
    types = classify_memory_types(sizes, {0, 1}, {1: MemoryType.HBM})
    assert types == {0: MemoryType.DRAM, 1: MemoryType.HBM, 2: MemoryType.HBM}
    assert classify_memory_types(sizes, {0, 1}, {2: MemoryType.DRAM})[2] is MemoryType.DRAM


def test_no_dram_means_every_cpuless_node_is_pmem() -> None:
    assert classify_memory_types({0: GiB, 1: 0}, set()) == {
        0: MemoryType.PMEM,
        1: MemoryType.PMEM,
    }


def test_override_for_unknown_node_is_an_error() -> None:
    with pytest.raises(TopologyError, match=r"unknown NUMA nodes \[9\]"):
        classify_memory_types({0: GiB}, {0}, {9: MemoryType.HBM})
