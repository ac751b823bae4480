"""Zone arithmetic over the usable NUMA nodes: capacities, allowed types, nearest nodes.

Zones are handled as bit masks (``CPUSet.bits``) inside the allocator; every result here is
cached, since a policy asks the same few questions (pool zones, the same type sets) over and
over.
"""

from __future__ import annotations

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine, MemoryType


def bit_ids(bits: int) -> list[int]:
    """The ids of the set bits, ascending."""
    return CPUSet(bits).ids()


class MemoryNodes:
    """Capacities, memory types and distances of a machine's usable NUMA nodes."""

    def __init__(self, machine: Machine, usable: CPUSet) -> None:
        self.machine = machine
        self.usable = usable.bits
        self.node_capacity = {n: machine.memory_bytes(n) for n in usable}
        self._distance = {
            a: {b: machine.distance(a, b) for b in machine.nodes} for a in machine.nodes
        }
        self._type_bits = {t: machine.nodes_of_type(t).bits & self.usable for t in MemoryType}
        self._capacity: dict[int, int] = {}
        self._allowed: dict[frozenset[MemoryType], int] = {}
        self._widen: dict[tuple[int, int], int] = {}
        self._chain: dict[tuple[int, int], tuple[int, ...]] = {}

    def capacity(self, zone: int) -> int:
        """Bytes of memory in the usable nodes of ``zone``."""
        zone &= self.usable
        cap = self._capacity.get(zone)
        if cap is None:
            cap = sum(self.node_capacity[n] for n in bit_ids(zone))
            self._capacity[zone] = cap
        return cap

    def allowed(self, types: frozenset[MemoryType]) -> int:
        """The usable nodes holding one of ``types``."""
        bits = self._allowed.get(types)
        if bits is None:
            bits = 0
            for t in types:
                bits |= self._type_bits[t]
            self._allowed[types] = bits
        return bits

    def nearest(self, zone: int, candidates: int) -> int:
        """The ``candidates`` outside ``zone`` at the smallest distance from it.

        The distance from a zone to a node is the smallest distance from one of the zone's
        nodes to it; every candidate at that distance is returned (0 when none is left).
        """
        outside = candidates & ~zone
        if not outside:
            return 0
        sources = [self._distance[z] for z in bit_ids(zone)]
        best: int | None = None
        chosen = 0
        for n in bit_ids(outside):
            d = min(row[n] for row in sources)
            if best is None or d < best:
                best, chosen = d, 1 << n
            elif d == best:
                chosen |= 1 << n
        return chosen

    def widen(self, zone: int, allowed: int) -> int:
        """One widening step: ``zone`` plus its nearest ``allowed`` nodes (``zone`` if none)."""
        key = (zone, allowed)
        wider = self._widen.get(key)
        if wider is None:
            wider = zone | self.nearest(zone, allowed)
            self._widen[key] = wider
        return wider

    def chain(self, preferred: int, allowed: int) -> tuple[int, ...]:
        """``preferred`` and every zone widening steps lead to, up to all ``allowed`` nodes."""
        key = (preferred, allowed)
        steps = self._chain.get(key)
        if steps is None:
            out = [preferred]
            while (wider := self.widen(out[-1], allowed)) != out[-1]:
                out.append(wider)
            steps = tuple(out)
            self._chain[key] = steps
        return steps

    def escape(self, zone: int, allowed: int, full: int) -> int | None:
        """The narrowest widening of ``zone`` that is not inside ``full`` (None: there is none)."""
        while zone & ~full == 0:
            wider = self.widen(zone, allowed)
            if wider == zone:
                return None
            zone = wider
        return zone
