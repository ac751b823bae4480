"""Pool scoring: which pool serves a request best, in the reference's order.

1. insufficient isolated or shared capacity loses; for a request that runs on shared
   CPUs, so does a pool whose CPUs can never be shared (all reserved or isolated);
2. higher affinity score (weights of the containers the request has affinity to, counted in
   their pool fully and x0.75 per hop up or down the tree);
3. with topology hints: higher product of hint scores, then higher product of the non-zero
   scores; then the deeper pool, then the lower id (nothing else counts);
4. memory: an offer of the matching type (every type a ``memory-type`` annotation names, any
   allowed type otherwise), then an offer that fits without widening; for Burstable memory,
   capacity covering the limit, and without a limit more capacity;
5. Burstable CPU: shared capacity covering the limit; unlimited Burstable: the preferred level,
   and among pools off that level the lowest id (the reference's tie break);
6. tighter memory offer (fewer nodes);
7. (having the requested memory types: decided with item 4);
8. with a CPU class the host cannot apply on every CPU (``class_cpus``: where it can), having
   enough such CPUs for the request among those it would take; the key has this element only
   then (otherwise every pool can serve the class and it never decides);
9. having enough CPUs of the requested priority (high or low) for the request, among the CPUs
   it would take (isolated ones when it uses isolated CPUs);
10. deeper pool;
11. by kind (reserved and preserved requests only ever score the root pool): isolated - more
    isolated CPUs;
    then, for normal or unset priority, having enough normal-priority CPUs; exclusive - more
    sliceable shared capacity; shared - fewer colocated grants (every grant of a normal
    kind in the pool itself, exclusive ones included, as the reference counts), then more
    shared capacity;
12. lower id.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import NamedTuple

from nrirp.domain.config import CPUPriority
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import ROOTED_KINDS, CPUKind, CPURequest
from nrirp.domain.policies.topology_aware.supply import Supply
from nrirp.domain.topology.hints import TopologyHint, hint_score

AFFINITY_DECAY = 0.75


class MemoryFit(NamedTuple):
    """How a pool's memory would take the request."""

    fits: bool
    """The allocator would place it in the pool's nodes without widening anyone."""
    nodes: int
    """Nodes of the zone it would get."""
    has_types: bool
    limit_key: int
    """Burstable memory: 0 when the pool's memory covers the limit, else 1; without a limit
    minus the pool's memory (more memory wins); 0 for other requests."""
    stable: bool = True
    """Depends only on the pool's own memory usage (``pool_touch``), not on the rest of the
    machine."""
    room: int | None = None
    """With ``stable``: the usage (``pool_touch`` of ``bound``) up to which the fit holds
    (``None``: any)."""
    bound: int | None = None
    """The pool whose ``pool_touch`` ``room`` is about (the scored pool or an ancestor)."""


class Score(NamedTuple):
    key: tuple[float, ...]
    """Smaller is better (compared as a whole, element by element)."""
    pool: Pool
    viable: bool
    use_isolated: bool
    stable: bool = True
    """The key depends only on the pool's version, its allocatable shared capacity and its
    memory usage up to ``memory_room`` (no affinity, hints or machine-wide
    memory offer went into it)."""
    memory_room: int | None = None
    memory_bound: int | None = None
    """The pool whose memory usage ``memory_room`` is about (``None``: the scored pool)."""


def limit_key(burstable: bool, limit: int | None, capacity: int) -> int:
    """Scoring item 4's Burstable memory part for a pool with ``capacity`` bytes of the
    request's types: a limit covered (0) or not (1); no limit: more capacity is better."""
    if not burstable:
        return 0
    if limit is None:
        return -capacity
    return 0 if capacity >= limit else 1


def affinity_score(pool: Pool, weighted: Sequence[tuple[Pool, int]]) -> float:
    total = 0.0
    for other, weight in weighted:
        hops = pool.hops_to(other)
        if hops is not None:
            total += weight * AFFINITY_DECAY**hops
    return total


def hint_scores(pool: Pool, hints: Sequence[TopologyHint]) -> tuple[float, float]:
    """(product of scores, product of the non-zero scores)."""
    product = 1.0
    nonzero = 1.0
    for hint in hints:
        s = hint_score(hint, cpus=pool.cpus, nodes=pool.mems, sockets=pool.packages)
        product *= s
        if s > 0:
            nonzero *= s
    return product, nonzero


_UNFIT = MemoryFit(False, 1 << 30, False, 1)


class PoolScorer:
    """Scores pools for one request: what does not depend on the pool is prepared once.

    Memory is looked at only for pools that can take the request's CPUs.
    """

    def __init__(
        self,
        cpu: CPURequest,
        supply: Supply,
        *,
        weighted: Sequence[tuple[Pool, int]],
        hints: Sequence[TopologyHint],
        memory: Callable[[Pool], MemoryFit],
        priority_cpus: CPUSet | None,
        normal_cpus: CPUSet | None = None,
        class_cpus: CPUSet | None = None,
    ) -> None:
        self.cpu = cpu
        self.supply = supply
        self.weighted = weighted
        self.hints = hints
        self.memory = memory
        self.full = cpu.full
        self.want = max(self.full, 1)
        self.allocatable = supply.allocatable_shared_all()
        self.rooted = cpu.kind in ROOTED_KINDS
        self.on_shared = cpu.kind in (CPUKind.SHARED, CPUKind.MIXED)
        self.burst_limit = cpu.limit if cpu.burstable else None
        self.priority_bits = priority_cpus.bits if priority_cpus is not None else None
        self.normal_bits = normal_cpus.bits if normal_cpus is not None else None
        self.class_bits = class_cpus.bits if class_cpus is not None else None
        self._class_item: tuple[int, ...] = () if class_cpus is None else (0,)

    def score(self, pool: Pool) -> Score:
        cpu, supply = self.cpu, self.supply
        pid = pool.id
        full, shared = self.full, cpu.shared
        isolated = supply.isolated[pid].bits.bit_count()
        use_isolated = cpu.isolate and full > 0 and isolated >= full
        allocatable = self.allocatable[pid]
        shared_left = allocatable - shared
        if full and not use_isolated:
            shared_left -= 1000 * full
        capacity: tuple[int, ...]
        if self.rooted:  # only the root pool is scored: the planner checks reserved capacity
            capacity = (0,)
            viable = True
        else:
            capacity = (
                1 if cpu.isolate and not use_isolated else 0,
                0 if shared_left >= 0 else 1,
                1 if self.on_shared and not supply.initial_sharable[pid] else 0,
            )
            viable = (use_isolated or not cpu.require_isolated) and (
                shared_left >= 0 or (use_isolated and not shared)
            )
        affinity = affinity_score(pool, self.weighted) if self.weighted else 0.0
        if self.hints:
            product, nonzero = hint_scores(pool, self.hints)
            key = (*capacity, -affinity, -product, -nonzero, -pool.depth, pid)
            return Score(key, pool, viable, use_isolated, False)
        fit = self.memory(pool) if viable else _UNFIT
        burst_key = 0
        if self.burst_limit is not None and allocatable < self.burst_limit:
            burst_key = 1
        level_key = 0
        if cpu.unlimited_level is not None and cpu.unlimited_level not in pool.levels:
            level_key = 1
        source = supply.isolated[pid].bits if use_isolated else supply.sharable[pid].bits
        want = self.want
        prio_key = 0
        if self.priority_bits is not None and (source & self.priority_bits).bit_count() < want:
            prio_key = 1
        class_item = self._class_item
        if self.class_bits is not None and (source & self.class_bits).bit_count() < want:
            class_item = (1,)
        normal_key = 0
        if self.normal_bits is not None and (source & self.normal_bits).bit_count() < want:
            normal_key = 1
        kind_key: tuple[float, ...]
        if self.rooted:
            kind_key = (0, 0, 0)
        elif use_isolated:
            kind_key = (-isolated, normal_key, 0)
        elif full:
            kind_key = (normal_key, -shared_left, 0)
        else:
            kind_key = (normal_key, supply.colocated[pid], -shared_left)
        key = (
            *capacity,
            -affinity,
            0 if fit.has_types else 1,
            0 if fit.fits else 1,
            fit.limit_key,
            burst_key,
            level_key,
            pid if level_key else 0,  # off the unlimitedBurstable level: the lowest id
            fit.nodes,
            *class_item,
            prio_key,
            -pool.depth,
            *kind_key,
            pid,
        )
        stable = fit.stable and not self.weighted
        return Score(key, pool, viable, use_isolated, stable, fit.room, fit.bound)

    def rescored(self, pool: Pool, old: Score) -> Score | None:
        """What :meth:`score` gives for ``pool`` now, from ``old``, a stable score of it for
        this request, when since then only grants came and went in the pool (its sharable
        and isolated sets are the same, its memory usage within ``old.memory_room``): the
        items that read the pool's allocatable shared capacity and colocation count are
        worked out again, the others kept. ``None`` when that is not enough: a rooted
        request, or a viability that changed (the memory fit is only looked at for a viable
        pool)."""
        if self.rooted:
            return None
        cpu = self.cpu
        pid = pool.id
        full, shared = self.full, cpu.shared
        use_isolated = old.use_isolated
        allocatable = self.allocatable[pid]
        shared_left = allocatable - shared
        if full and not use_isolated:
            shared_left -= 1000 * full
        viable = (use_isolated or not cpu.require_isolated) and (
            shared_left >= 0 or (use_isolated and not shared)
        )
        if viable != old.viable:
            return None
        key = old.key
        burst_key = 1 if self.burst_limit is not None and allocatable < self.burst_limit else 0
        tail: tuple[float, ...]
        if use_isolated:
            tail = key[-4:]  # (-isolated, normal, 0, id): from the sets alone
        elif full:
            tail = (key[-4], -shared_left, 0, pid)
        else:
            tail = (key[-4], self.supply.colocated[pid], -shared_left, pid)
        # see score(): capacity (3), affinity, types, fits, limit, burst, level, id, nodes,
        # class (0-1), priority, depth, kind (3), id
        key = (key[0], 0 if shared_left >= 0 else 1, *key[2:7], burst_key, *key[8:-4], *tail)
        return Score(key, pool, viable, use_isolated, True, old.memory_room, old.memory_bound)

    def bound(
        self, pool: Pool, *, limit_key: int, nodes: int, has_types: bool
    ) -> tuple[float, ...]:
        """A key no score of ``pool`` for this request can be below, from what does not
        change (without hints or affinity): the best possible capacity, memory fit, burst,
        priority and kind items with the pool's own depth, level, node count and types.
        ``nodes``: the pool's node count (an offer never gives fewer); ``limit_key``: the
        Burstable memory item (:attr:`MemoryFit.limit_key`)."""
        cpu = self.cpu
        capacity: tuple[int, ...]
        if self.rooted:
            capacity = (0,)
        else:
            capacity = (
                0,
                0,
                1 if self.on_shared and not self.supply.initial_sharable[pool.id] else 0,
            )
        level_key = 0
        if cpu.unlimited_level is not None and cpu.unlimited_level not in pool.levels:
            level_key = 1
        return (
            *capacity,
            0.0,
            0 if has_types else 1,
            0,
            limit_key,
            0,
            level_key,
            pool.id if level_key else 0,
            nodes,
            *self._class_item,
            0,
            -pool.depth,
            -math.inf,
        )

    def tighter_bound(self, pool: Pool, bound: tuple[float, ...]) -> tuple[float, ...]:
        """``bound`` (:meth:`bound`) with the kind items as they are now (cheap to get; the
        normal-priority item at its best): still no more than the pool's score."""
        cpu, supply = self.cpu, self.supply
        pid = pool.id
        kind: tuple[float, ...]
        if self.rooted:
            kind = (0, 0, 0)
        else:
            full = self.full
            isolated = supply.isolated[pid].bits.bit_count()
            use_isolated = cpu.isolate and full > 0 and isolated >= full
            shared_left = self.allocatable[pid] - cpu.shared
            if full and not use_isolated:
                shared_left -= 1000 * full
            if use_isolated:
                kind = (-isolated, 0)
            elif full:
                kind = (0, -shared_left)
            else:
                kind = (0, supply.colocated[pid], -shared_left)
        return bound[:-1] + kind


def rank_pools(
    pools: Sequence[Pool],
    cpu: CPURequest,
    supply: Supply,
    *,
    weighted: Sequence[tuple[Pool, int]],
    hints: Sequence[TopologyHint],
    memory: Callable[[Pool], MemoryFit],
    priority_cpus: CPUSet | None,
    normal_cpus: CPUSet | None = None,
    class_cpus: CPUSet | None = None,
) -> list[Score]:
    """``pools`` best first (smaller keys are better)."""
    scorer = PoolScorer(
        cpu,
        supply,
        weighted=weighted,
        hints=hints,
        memory=memory,
        priority_cpus=priority_cpus,
        normal_cpus=normal_cpus,
        class_cpus=class_cpus,
    )
    out = [scorer.score(pool) for pool in pools]
    out.sort(key=score_key)
    return out


def score_key(score: Score) -> tuple[float, ...]:
    return score.key


def want_priority(cpu: CPURequest) -> CPUPriority | None:
    """The priority scoring item 9 looks at: high or low when the request asks for it."""
    if cpu.priority in (CPUPriority.HIGH, CPUPriority.LOW) and cpu.kind in (
        CPUKind.EXCLUSIVE,
        CPUKind.MIXED,
        CPUKind.SHARED,
    ):
        return cpu.priority
    return None


def wants_normal_priority(cpu: CPURequest) -> bool:
    """Whether scoring item 11 counts normal-priority CPUs for the request."""
    return cpu.priority in (CPUPriority.NORMAL, CPUPriority.NONE) and cpu.kind in (
        CPUKind.EXCLUSIVE,
        CPUKind.MIXED,
        CPUKind.SHARED,
    )
