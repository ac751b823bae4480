"""The memory-type rule: which kind of memory each NUMA node holds.

Linux does not say whether a node is DRAM, persistent memory or high-bandwidth memory, so this
follows the reference's heuristic: a node with CPUs holds DRAM; a CPU-less node smaller than the
average DRAM node is HBM, any other CPU-less node is PMEM (CXL-attached memory shows up as a
CPU-less node too and lands in one of the two by its size). Configured overrides win.
"""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Set as AbstractSet

from nrirp.domain.topology.model import MemoryType, TopologyError


def classify_memory_types(
    memory_bytes: Mapping[int, int],
    cpu_nodes: AbstractSet[int],
    overrides: Mapping[int, MemoryType] | None = None,
) -> dict[int, MemoryType]:
    """Memory type of every node in ``memory_bytes`` (node id -> capacity).

    ``cpu_nodes`` are the nodes that have CPUs. ``overrides`` (node id -> type) is applied first;
    the DRAM average is taken over nodes whose resulting type is DRAM and that have CPUs.
    An override for a node that does not exist raises :class:`TopologyError`.
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(memory_bytes))
    if unknown:
        raise TopologyError(f"memory type configured for unknown NUMA nodes {unknown}")
    types: dict[int, MemoryType] = {}
    for node_id in memory_bytes:
        if node_id in overrides:
            types[node_id] = overrides[node_id]
        elif node_id in cpu_nodes:
            types[node_id] = MemoryType.DRAM
    dram = [memory_bytes[n] for n, t in types.items() if t is MemoryType.DRAM and n in cpu_nodes]
    average = sum(dram) // len(dram) if dram else 0
    for node_id, size in memory_bytes.items():
        if node_id not in types:
            types[node_id] = MemoryType.HBM if size < average else MemoryType.PMEM
    return dict(sorted(types.items()))
