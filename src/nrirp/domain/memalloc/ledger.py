"""Per-zone demand, kept incrementally, and the search for overcommitted node sets.

The demand of a node set S is the memory of the allocations whose zone lies inside S. Every
allocation fits iff no S has demand above its capacity (Hall's condition), and it is enough to
test the *connected unions* of zones in use: any overcommitted S stays overcommitted when cut
down to the zones inside it, and one of its node-disjoint parts is overcommitted on its own.
For a nested (laminar) family, such as a pool tree, those unions are the zones themselves. A
family whose unions number more than ``union_limit`` falls back to the exact flow test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import attrs

from nrirp.domain.memalloc.hall import overcommitted_set

UNION_LIMIT = 512


@attrs.frozen
class Overcommit:
    """A node set (bits) whose demand exceeds its capacity."""

    nodes: int
    demand: int
    capacity: int

    @property
    def excess(self) -> int:
        return self.demand - self.capacity


@attrs.frozen
class _Family:
    """What the zones in use imply: the node sets to test, smallest first, and their zones."""

    tests: tuple[tuple[int, tuple[int, ...]], ...]  # (node set, zones inside it)
    exact: bool  # False: too many unions; only the zones are listed, the flow test is needed


def _family(zones: frozenset[int], union_limit: int) -> _Family:
    ordered = sorted(zones, key=lambda z: (z.bit_count(), z))
    unions = set(zones)
    frontier = list(ordered)
    exact = True
    while frontier and exact:
        grown: list[int] = []
        for u in frontier:
            for z in ordered:
                if z & u and z & ~u and (u | z) not in unions:
                    unions.add(u | z)
                    grown.append(u | z)
        frontier = grown
        exact = len(unions) - len(zones) <= union_limit
    sets = sorted(unions if exact else zones, key=lambda s: (s.bit_count(), s))
    tests = tuple((s, tuple(z for z in ordered if z & ~s == 0)) for s in sets)
    return _Family(tests=tests, exact=exact)


class DemandLedger:
    """Bytes and owners per zone (zone bits -> ...), and the overcommit test over them."""

    def __init__(self, *, union_limit: int = UNION_LIMIT) -> None:
        self.usage: dict[int, int] = {}
        self.members: dict[int, dict[str, None]] = {}  # insertion-ordered owner sets
        self._union_limit = union_limit
        self._families: dict[frozenset[int], _Family] = {}
        self._current: _Family | None = None

    def add(self, zone: int, owner: str, size: int) -> None:
        members = self.members.get(zone)
        if members is None:
            self.members[zone] = members = {}
            self.usage[zone] = 0
            self._current = None
        members[owner] = None
        self.usage[zone] += size

    def remove(self, zone: int, owner: str, size: int) -> None:
        members = self.members[zone]
        del members[owner]
        if members:
            self.usage[zone] -= size
        else:
            del self.members[zone], self.usage[zone]
            self._current = None

    def demand(self, nodes: int) -> int:
        """Bytes accounted to zones inside ``nodes``."""
        return sum(b for z, b in self.usage.items() if z & ~nodes == 0)

    def owners_within(self, nodes: int) -> Iterator[tuple[int, str]]:
        """(zone, owner) of every allocation whose zone lies inside ``nodes``."""
        for zone, members in self.members.items():
            if zone & ~nodes == 0:
                for owner in members:
                    yield zone, owner

    def overcommit(
        self, capacity: Callable[[int], int], node_capacity: dict[int, int], touched: int = 0
    ) -> Overcommit | None:
        """The smallest overcommitted node set containing ``touched`` (0: any), or None.

        Demand only grows in sets that contain a zone which gained memory, so after one change
        the caller passes that zone as ``touched`` and only its supersets are tested.
        """
        family = self._family()
        usage = self.usage
        for nodes, inside in family.tests:
            if touched & ~nodes:
                continue
            demand = sum(usage[z] for z in inside)
            cap = capacity(nodes)
            if demand > cap:
                return Overcommit(nodes=nodes, demand=demand, capacity=cap)
        if family.exact:
            return None
        found = overcommitted_set(usage, node_capacity)
        if found is None:
            return None
        return Overcommit(nodes=found, demand=self.demand(found), capacity=capacity(found))

    def _family(self) -> _Family:
        if self._current is None:
            key = frozenset(self.usage)
            family = self._families.get(key)
            if family is None:
                if len(self._families) >= 256:
                    self._families.clear()
                family = _family(key, self._union_limit)
                self._families[key] = family
            self._current = family
        return self._current
