"""The allocations that widening may move, grouped by zone and allowed nodes, sorted by size.

Allocations of one group share where they can widen to, so choosing what to move out of an
overcommitted node set takes one binary search per group instead of a scan of every owner.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

Entry = tuple[int, int, str]  # (size, minus sequence number: newer first, owner)


class MovableIndex:
    """Non-strict allocations of non-zero size, per (zone, allowed nodes), ascending by
    (size, newest first, owner)."""

    def __init__(self) -> None:
        self._groups: dict[tuple[int, int], list[Entry]] = {}

    def add(self, zone: int, allowed: int, entry: Entry) -> None:
        group = self._groups.setdefault((zone, allowed), [])
        bisect.insort(group, entry)

    def remove(self, zone: int, allowed: int, entry: Entry) -> None:
        group = self._groups[(zone, allowed)]
        del group[bisect.bisect_left(group, entry)]
        if not group:
            del self._groups[(zone, allowed)]

    def within(self, nodes: int) -> Iterator[tuple[int, int, list[Entry]]]:
        """(zone, allowed, entries) of every group whose zone lies inside ``nodes``."""
        for (zone, allowed), group in self._groups.items():
            if zone & ~nodes == 0:
                yield zone, allowed, group

    def __bool__(self) -> bool:
        return bool(self._groups)


def smallest_at_least(group: list[Entry], size: int) -> Entry | None:
    """The first entry of ``group`` whose size is at least ``size``."""
    at = bisect.bisect_left(group, (size,))
    return group[at] if at < len(group) else None
