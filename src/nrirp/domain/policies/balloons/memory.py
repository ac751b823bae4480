"""Memory pinning of balloon members (``reference-balloons.md`` §7).

A balloon's memory nodes are the NUMA nodes whose CPUs overlap the CPUs its containers run on.
A member's zone starts there; nodes of each wanted memory type missing from it are added
(the closest ones), then nodes of unwanted types are dropped while a wanted one remains. The
memory allocator accounts the member's memory limit in that zone and widens zones that would
be overcommitted. Re-pinning a member only ever adds nodes to its zone.
"""

from __future__ import annotations

import contextlib

import attrs

from nrirp.domain.cpuallocator.index import bit_ids
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryAllocator, MemoryRequest
from nrirp.domain.topology import Machine, MemoryType

_CACHED = 4096
"""CPU sets whose nodes are remembered (a balloon's CPUs change a few times per operation)."""


@attrs.frozen
class Placed:
    """A member's memory: its zone (node ids as bits) and whether the allocator accounts it."""

    zone: int
    accounted: bool


class MemoryPlacer:
    """Zones for balloon members on one machine, accounted by a :class:`MemoryAllocator`."""

    def __init__(self, machine: Machine) -> None:
        self.machine = machine
        self.allocator = MemoryAllocator(machine)
        present = frozenset(n.memory_type for n in machine.nodes.values())
        self.present = present
        self.default_types = (present - {MemoryType.HBM}) or present
        """Types used when neither the annotation nor the type names any: every type the
        machine has but HBM (HBM is never used unless asked for)."""
        self._node_of_cpu = {cpu.id: cpu.node_id for cpu in machine.cpus.values()}
        self._by_type = {
            t: CPUSet.from_ids(n.id for n in machine.nodes.values() if n.memory_type is t).bits
            for t in present
        }
        self._zones: dict[tuple[int, frozenset[MemoryType]], int] = {}
        self._nodes_of: dict[int, int] = {}

    def nodes_of(self, cpus: int) -> int:
        """The NUMA nodes (as bits) whose CPUs overlap ``cpus``."""
        found = self._nodes_of.get(cpus)
        if found is None:
            found = 0
            for cpu in bit_ids(cpus):
                found |= 1 << self._node_of_cpu[cpu]
            if len(self._nodes_of) >= _CACHED:
                self._nodes_of.clear()
            self._nodes_of[cpus] = found
        return found

    def types(self, wanted: frozenset[MemoryType]) -> frozenset[MemoryType]:
        """The wanted types the machine has (the default types when none is wanted)."""
        found = (wanted or self.default_types) & self.present
        return found or self.default_types

    def zone(self, nodes: int, types: frozenset[MemoryType]) -> int:
        """The zone for a balloon on ``nodes`` and members wanting ``types``."""
        key = (nodes, types)
        cached = self._zones.get(key)
        if cached is not None:
            return cached
        zone = nodes
        for memory_type in sorted(types, key=lambda t: t.value):
            if not zone & self._by_type[memory_type]:
                zone |= self._closest(zone or self._all(), self._by_type[memory_type])
        wanted = 0
        for memory_type in types:
            wanted |= self._by_type[memory_type]
        if zone & wanted:
            zone &= wanted
        self._zones[key] = zone
        return zone

    def place(
        self, owner: str, size: int, zone: int, types: frozenset[MemoryType]
    ) -> tuple[Placed, dict[str, CPUSet]]:
        """Account ``size`` bytes of ``owner`` in ``zone`` (added to what it had); returns its
        placement and the other owners whose zones widened. If the allocator refuses, the
        owner just gets the zone, unaccounted."""
        previous = self.allocator.allocation(owner)
        preferred = zone
        if previous is not None:
            preferred |= previous.preferred.bits
            if (
                preferred == previous.preferred.bits
                and previous.request.size == size
                and previous.request.types == types
            ):
                return Placed(previous.zone.bits, True), {}
        try:
            placed, moved = self.allocator.allocate(
                MemoryRequest(owner, size, CPUSet(preferred), types)
            )
        except MemoryAllocationError:
            return Placed(preferred, False), {}
        return Placed(placed.bits, True), moved

    def preserve(self, owner: str, size: int, zone: CPUSet | None) -> None:
        """Account a ``memory.preserve`` container where it is (never moved); nothing if the
        allocator refuses."""
        nodes = zone if zone else CPUSet(self._all())
        with contextlib.suppress(MemoryAllocationError):
            self.allocator.allocate(MemoryRequest(owner, size, nodes, self.present, strict=True))

    def restore(
        self, owner: str, size: int, preferred: int, zone: int, types: frozenset[MemoryType]
    ) -> bool:
        """Take a saved placement back without moving anyone; False when it is not usable."""
        try:
            self.allocator.restore(
                MemoryRequest(owner, size, CPUSet(preferred), types), CPUSet(zone)
            )
        except MemoryAllocationError:
            return False
        return True

    def release(self, owner: str) -> dict[str, CPUSet]:
        """Forget ``owner``; returns the owners whose zones narrowed back."""
        return self.allocator.release(owner)

    def _all(self) -> int:
        return CPUSet.from_ids(self.machine.nodes).bits

    def _closest(self, zone: int, candidates: int) -> int:
        distance = self.machine.distance
        best: int | None = None
        out = 0
        for node in bit_ids(candidates):
            d = min(distance(z, node) for z in bit_ids(zone))
            if best is None or d < best:
                best, out = d, 1 << node
            elif d == best:
                out |= 1 << node
        return out
