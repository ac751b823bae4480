"""Exact overcommit test by bipartite flow, for zone families too tangled to enumerate.

Memory demanded in zone Z can be placed on any node of Z. Every demand fits iff a flow from
zones to nodes covers every zone's demand without exceeding any node's capacity (Hall's
condition: no node set S holds less than the demand of the zones inside S). When the flow
cannot be completed, the nodes reachable from a short zone in the residual graph form such a
set S: all of them are full, and only zones inside S send memory to them.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Mapping

from nrirp.domain.memalloc.nodes import bit_ids


def overcommitted_set(demand: Mapping[int, int], capacity: Mapping[int, int]) -> int | None:
    """A node set (bits) whose demand exceeds its capacity, or None when everything fits.

    ``demand``: zone bits -> bytes wanted in that zone; ``capacity``: node id -> bytes. Zones
    must only hold nodes that ``capacity`` knows.
    """
    zones = [(bit_ids(z), d) for z, d in sorted(demand.items()) if d > 0]
    free = dict(capacity)
    flow: list[dict[int, int]] = [{} for _ in zones]
    users: dict[int, set[int]] = {n: set() for n in free}  # node -> zones with flow on it
    short: list[int] = []
    for g, (nodes, want) in enumerate(zones):
        for n in nodes:  # greedy start: fill each zone's nodes in id order
            take = min(want, free[n])
            if take:
                flow[g][n] = take
                users[n].add(g)
                free[n] -= take
                want -= take
            if not want:
                break
        short.append(want)
    for g in range(len(zones)):
        while short[g]:
            path = _augmenting_path(g, zones, free, flow, users)
            if isinstance(path, int):
                return path
            _augment(g, path, short, free, flow, users)
    return None


def _augmenting_path(
    start: int,
    zones: list[tuple[list[int], int]],
    free: dict[int, int],
    flow: list[dict[int, int]],
    users: dict[int, set[int]],
) -> list[tuple[int, int]] | int:
    """Steps (zone, node) from ``start`` to a node with free capacity, or the reachable nodes."""
    came_from: dict[int, tuple[int, int]] = {}  # node -> (zone that reached it, via node)
    zone_seen = {start}
    queue: deque[tuple[int, int]] = deque([(start, -1)])  # (zone, node it was reached by)
    while queue:
        g, via = queue.popleft()
        for n in zones[g][0]:
            if n in came_from:
                continue
            came_from[n] = (g, via)
            if free[n] > 0:
                steps: list[tuple[int, int]] = []
                node = n
                while node != -1:
                    zone, prev = came_from[node]
                    steps.append((zone, node))
                    node = prev
                steps.reverse()
                return steps
            for h in sorted(users[n]):
                if h not in zone_seen:
                    zone_seen.add(h)
                    queue.append((h, n))
    reachable = 0
    for n in came_from:
        reachable |= 1 << n
    return reachable


def _augment(
    start: int,
    steps: list[tuple[int, int]],
    short: list[int],
    free: dict[int, int],
    flow: list[dict[int, int]],
    users: dict[int, set[int]],
) -> None:
    """Push as much as the path allows: ``start`` gains, each intermediate zone shifts nodes."""
    amount = min(short[start], free[steps[-1][1]])
    for (_, node), (next_zone, _) in itertools.pairwise(steps):
        amount = min(amount, flow[next_zone][node])
    for i, (zone, node) in enumerate(steps):
        flow[zone][node] = flow[zone].get(node, 0) + amount
        users[node].add(zone)
        if i + 1 < len(steps):  # the next zone moves `amount` off this node onto its own next
            nxt = steps[i + 1][0]
            flow[nxt][node] -= amount
            if not flow[nxt][node]:
                del flow[nxt][node]
                users[node].discard(nxt)
    free[steps[-1][1]] -= amount
    short[start] -= amount
