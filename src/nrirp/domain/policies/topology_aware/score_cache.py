"""Pool scores kept per request signature and reused while their pool has not changed.

Most decisions change a handful of pools: a request like an earlier one (same CPU request,
memory size, types, QoS, limit and cold start) reuses that one's scores of the unchanged pools,
and a changed pool is scored again only if a lower bound of its score could beat the best
viable score found.
"""

from __future__ import annotations

from collections.abc import Sequence

from nrirp.domain.model import QOSClass
from nrirp.domain.policies.topology_aware.memory_view import MemoryView, accounted_size
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import Request
from nrirp.domain.policies.topology_aware.scoring import PoolScorer, Score, limit_key
from nrirp.domain.policies.topology_aware.supply import Supply
from nrirp.domain.topology import MemoryType

Signature = tuple[object, ...]
"""What a request's pool scores depend on besides the pools (:func:`request_signature`)."""

_Entry = tuple[list[int], list[tuple[float, ...]], list[tuple[int, int, int, Score] | None]]
"""Pool indexes by lower bound, the bounds, and per pool the last score with what it read:
``(supply version, allocatable shared, version of the CPU sets, score)``."""


def request_signature(request: Request, size: int, types: frozenset[MemoryType]) -> Signature:
    """The request's signature: requests with equal ones score every pool alike."""
    return (
        request.cpu,
        size,
        types,
        request.memory.types is not None,
        request.qos,
        request.memory.limit,
        request.memory.cold_start > 0,
    )


class ScoreCache:
    """The last scores of each request signature (at most 256 signatures)."""

    def __init__(self, supply: Supply, memory: MemoryView) -> None:
        self.supply = supply
        self.memory = memory
        self._entries: dict[Signature, _Entry] = {}

    def scores(
        self,
        signature: Signature | None,
        pools: Sequence[Pool],
        scorer: PoolScorer,
        request: Request,
        types: frozenset[MemoryType],
    ) -> tuple[list[Score], bool]:
        """The pools' scores, and whether every pool was scored.

        Without a ``signature`` every pool is scored. With one, scores computed for an
        earlier request of the same signature are reused while their pool has not changed
        (same version, same allocatable shared capacity, memory usage still
        within what its fit allowed), and a changed pool is scored again only if its lower
        bounds (:meth:`PoolScorer.bound`, :meth:`PoolScorer.tighter_bound`) could beat the best
        viable score found: most decisions change a handful of pools, and pools of the wrong
        depth or level, or with more containers, need no full look. A pool that has only seen
        grants come and go since its last score (same CPU sets, memory usage within what the
        fit allowed) is scored again from that one (:meth:`PoolScorer.rescored`).
        """
        if signature is None:
            return [scorer.score(p) for p in pools], True
        cached = self._entries.get(signature)
        if cached is None:
            if len(self._entries) >= 256:
                self._entries.clear()
            cached = self._entries[signature] = self._entry(pools, scorer, request, types)
        order, bounds, entries = cached
        version = self.supply.version
        sets = self.supply.sets
        allocatable = scorer.allocatable
        touch = self.memory.pool_touch
        out: list[Score] = []
        stale: list[int] = []
        best: tuple[float, ...] | None = None
        complete = True
        for index in order:
            if best is not None and bounds[index] > best:
                complete = False  # neither this pool nor the rest (ordered by bound) can win
                break
            pid = pools[index].id
            entry = entries[index]
            if entry is not None and entry[0] == version[pid] and entry[1] == allocatable[pid]:
                score = entry[3]
                room = score.memory_room
                bound = score.memory_bound
                if room is None or touch[pid if bound is None else bound] <= room:
                    out.append(score)
                    if score.viable and (best is None or score.key < best):
                        best = score.key
                    continue
            stale.append(index)
        for index in stale:
            pool = pools[index]
            if best is not None and (
                bounds[index] > best or scorer.tighter_bound(pool, bounds[index]) > best
            ):
                complete = False
                continue
            pid = pool.id
            entry = entries[index]
            again: Score | None = None
            if entry is not None and entry[2] == sets[pid]:
                last = entry[3]
                room = last.memory_room
                bound = last.memory_bound
                if room is None or touch[pid if bound is None else bound] <= room:
                    again = scorer.rescored(pool, last)
            score = scorer.score(pool) if again is None else again
            entries[index] = (
                (version[pid], allocatable[pid], sets[pid], score) if score.stable else None
            )
            out.append(score)
            if score.viable and (best is None or score.key < best):
                best = score.key
        return out, complete

    def _entry(
        self,
        pools: Sequence[Pool],
        scorer: PoolScorer,
        request: Request,
        types: frozenset[MemoryType],
    ) -> _Entry:
        """A new cache entry: pool indexes by lower bound, the bounds, no scores yet."""
        facts = self.memory.facts(types)
        limit = request.memory.limit
        burstable = request.qos is QOSClass.BURSTABLE
        size = accounted_size(request)
        explicit = request.memory.types is not None
        bounds = []
        for pool in pools:
            f = facts[pool.id]
            bounds.append(
                scorer.bound(
                    pool,
                    limit_key=limit_key(burstable, limit, f.typed_capacity),
                    nodes=f.count if size else 0,
                    has_types=f.has_all_types if explicit else f.has_types,
                )
            )
        order = sorted(range(len(pools)), key=bounds.__getitem__)
        return order, bounds, [None] * len(pools)
