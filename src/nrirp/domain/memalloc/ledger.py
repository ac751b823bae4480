"""Per-zone demand, kept incrementally, and the search for overcommitted node sets.

The demand of a node set S is the memory of the allocations whose zone lies inside S. Every
allocation fits iff no S has demand above its capacity (Hall's condition), and it is enough to
test the *connected unions* of zones in use: any overcommitted S stays overcommitted when cut
down to the zones inside it, and one of its node-disjoint parts is overcommitted on its own.
For a nested (laminar) family, such as a pool tree, those unions are the zones themselves. A
family whose unions number more than ``union_limit`` falls back to the exact flow test.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

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


class _Family:
    """What the zones in use imply: the node sets to test, smallest first, with the zones
    inside each and its capacity; the tests that contain a zone are indexed on first use."""

    __slots__ = ("_by_touched", "exact", "tests")

    def __init__(self, tests: tuple[_Test, ...], exact: bool) -> None:
        self.tests = tests
        self.exact = exact  # False: too many unions; only the zones are listed, use the flow
        self._by_touched: dict[int, tuple[_Test, ...]] = {}

    def containing(self, touched: int) -> tuple[_Test, ...]:
        found = self._by_touched.get(touched)
        if found is None:
            found = tuple(t for t in self.tests if touched & ~t[0] == 0)
            self._by_touched[touched] = found
        return found


_Test = tuple[int, tuple[int, ...], int]  # (node set, zones inside it, its capacity)


def _family(zones: frozenset[int], union_limit: int, capacity: Callable[[int], int]) -> _Family:
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
    tests = tuple((s, tuple(z for z in ordered if z & ~s == 0), capacity(s)) for s in sets)
    return _Family(tests, exact)


class DemandLedger:
    """Bytes and owners per zone (zone bits -> ...), and the overcommit test over them."""

    def __init__(self, node_capacity: Mapping[int, int], *, union_limit: int = UNION_LIMIT) -> None:
        self.usage: dict[int, int] = {}
        self.members: dict[int, dict[str, None]] = {}  # insertion-ordered owner sets
        self._node_capacity = dict(node_capacity)
        self._capacity: dict[int, int] = {}
        self._union_limit = union_limit
        self._families: dict[frozenset[int], _Family] = {}
        self._current: _Family | None = None

    def capacity(self, nodes: int) -> int:
        """Bytes the known nodes of ``nodes`` hold."""
        cap = self._capacity.get(nodes)
        if cap is None:
            cap = sum(c for n, c in self._node_capacity.items() if nodes >> n & 1)
            self._capacity[nodes] = cap
        return cap

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

    def overcommit(self, touched: int = 0) -> Overcommit | None:
        """The smallest overcommitted node set containing ``touched`` (0: any), or None.

        Demand only grows in sets that contain a zone which gained memory, so after one change
        the caller passes that zone as ``touched`` and only its supersets are tested.
        """
        family = self._family()
        usage = self.usage
        for nodes, inside, cap in family.containing(touched):
            demand = 0
            for z in inside:
                demand += usage[z]
            if demand > cap:
                return Overcommit(nodes=nodes, demand=demand, capacity=cap)
        if family.exact:
            return None
        found = overcommitted_set(usage, self._node_capacity)
        if found is None:
            return None
        return Overcommit(nodes=found, demand=self.demand(found), capacity=self.capacity(found))

    def narrowing_fits(self, zone: int, narrower: int, size: int) -> bool | None:
        """Would moving ``size`` bytes from ``zone`` to ``narrower`` (inside it) keep every
        tested set within capacity? None: only a trial move can tell (``narrower`` is not a
        zone in use, or the family needs the flow test).

        The move adds ``size`` to the sets that hold ``narrower`` but not ``zone``; when
        ``narrower`` is in use those sets are all among the current tests.
        """
        family = self._family()
        usage = self.usage
        for nodes, inside, cap in family.containing(narrower):
            if zone & ~nodes == 0:
                continue  # holds the old zone too: its demand does not change
            demand = size
            for z in inside:
                demand += usage[z]
            if demand > cap:
                return False
        return True if family.exact and narrower in usage else None

    def _family(self) -> _Family:
        if self._current is None:
            key = frozenset(self.usage)
            family = self._families.get(key)
            if family is None:
                if len(self._families) >= 256:
                    self._families.clear()
                family = _family(key, self._union_limit, self.capacity)
                self._families[key] = family
            self._current = family
        return self._current
