"""Catalogue machines and request builders shared by the memory allocator tests."""

from __future__ import annotations

from functools import cache

from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocator, MemoryRequest
from nrirp.domain.topology import Machine, MemoryType

GiB = 1 << 30
DRAM = frozenset({MemoryType.DRAM})
PMEM = frozenset({MemoryType.PMEM})
HBM = frozenset({MemoryType.HBM})
DRAM_PMEM = frozenset({MemoryType.DRAM, MemoryType.PMEM})
ALL_TYPES = frozenset(MemoryType)


@cache
def machine(name: str) -> Machine:
    return expected_machine(load_machine(name))


def request(
    owner: str,
    gib: float,
    nodes: str,
    types: frozenset[MemoryType] = DRAM,
    *,
    strict: bool = False,
) -> MemoryRequest:
    return MemoryRequest(owner, int(gib * GiB), CPUSet.parse(nodes), types, strict)


def snapshot(allocator: MemoryAllocator) -> tuple[object, ...]:
    """Everything observable about the allocator's state."""
    return (
        allocator.zones(),
        allocator.widened(),
        allocator.owners(),
        {o: allocator.allocation(o) for o in allocator.owners()},
    )
