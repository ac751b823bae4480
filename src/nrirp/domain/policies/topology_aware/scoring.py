"""Pool scoring: which pool serves a request best, in the reference's order.

1. insufficient isolated, shared or reserved capacity loses; for a request that runs on shared
   CPUs, so does a pool whose CPUs can never be shared (all reserved or isolated);
2. higher affinity score (weights of the containers the request has affinity to, counted in
   their pool fully and x0.75 per hop up or down the tree);
3. with topology hints: higher product of hint scores, then higher product of the non-zero
   scores; then the deeper pool, then the lower id (nothing else counts);
4. memory: an offer that fits without widening; for Burstable memory, capacity covering the limit;
5. Burstable CPU: shared capacity covering the limit; unlimited Burstable: the preferred level;
6. tighter memory offer (fewer nodes);
7. having the requested memory types;
8. (CPU class: every pool can serve it, so this never decides);
9. having enough CPUs of the requested priority (high or low) for the request, among the CPUs
   it would take (isolated ones when it uses isolated CPUs);
10. deeper pool;
11. by kind: reserved - more reserved capacity per container; isolated - more isolated CPUs;
    then, for normal or unset priority, having enough normal-priority CPUs; exclusive - more
    sliceable shared capacity; shared - fewer containers, more shared capacity;
12. lower id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

from nrirp.domain.config import CPUPriority
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import CPUKind, CPURequest
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
    covers_limit: bool


class Score(NamedTuple):
    key: tuple[float, ...]
    pool: Pool
    viable: bool
    use_isolated: bool


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


_UNFIT = MemoryFit(False, 1 << 30, False, False)


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
    threads: int | None = None,
) -> list[Score]:
    """``pools`` best first (smaller keys are better). ``threads``: the CPUs the exclusive
    part takes (``cpu.full`` unless whole cores are wanted). Memory is looked at only for
    pools that can take the request's CPUs."""
    kind = cpu.kind
    full = cpu.full if threads is None else threads
    shared, isolate = cpu.shared, cpu.isolate
    allocatable = supply.allocatable_shared_all()
    reserved_kind = kind is CPUKind.RESERVED
    preserve_kind = kind is CPUKind.PRESERVE
    on_shared = kind in (CPUKind.SHARED, CPUKind.MIXED)
    burst_limit = cpu.limit if cpu.burstable else None
    level = cpu.unlimited_level
    want = max(full, 1)
    isolated, sharable, members, count = (
        supply.isolated,
        supply.sharable,
        supply.members,
        supply.count,
    )
    initial = supply.initial_sharable
    out: list[Score] = []
    for pool in pools:
        pid = pool.id
        use_isolated = isolate and full > 0 and len(isolated[pid]) >= full
        shared_left = allocatable[pid] - shared
        if full and not use_isolated:
            shared_left -= 1000 * full
        reserved_left = 0
        if reserved_kind:
            reserved_left = supply.allocatable_reserved(pool) - shared
            capacity: tuple[float, ...] = (0.0 if reserved_left >= 0 else 1.0,)
            viable = True
        elif preserve_kind:
            capacity = (0.0,)
            viable = True
        else:
            capacity = (
                1.0 if isolate and not use_isolated else 0.0,
                0.0 if shared_left >= 0 else 1.0,
                1.0 if on_shared and not initial[pid] else 0.0,
            )
            viable = (use_isolated or not cpu.require_isolated) and (
                shared_left >= 0 or (use_isolated and not shared)
            )
        affinity = affinity_score(pool, weighted) if weighted else 0.0
        if hints:
            product, nonzero = hint_scores(pool, hints)
            key = (*capacity, -affinity, -product, -nonzero, -pool.depth, pid)
            out.append(Score(key, pool, viable, use_isolated))
            continue
        fit = memory(pool) if viable else _UNFIT
        burst_key = 0.0
        if burst_limit is not None:
            burst_key = 0.0 if allocatable[pid] >= burst_limit else 1.0
        level_key = 0.0
        if level is not None:
            level_key = 0.0 if level in pool.levels else 1.0
        source = isolated[pid] if use_isolated else sharable[pid]
        prio_key = 0.0
        if priority_cpus is not None:
            prio_key = 0.0 if len(source & priority_cpus) >= want else 1.0
        normal_key = 0.0
        if normal_cpus is not None:
            normal_key = 0.0 if len(source & normal_cpus) >= want else 1.0
        if reserved_kind:
            kind_key: tuple[float, ...] = (-reserved_left / (count[pid] + 1), 0.0, 0.0)
        elif use_isolated:
            kind_key = (-float(len(isolated[pid])), normal_key, 0.0)
        elif full:
            kind_key = (normal_key, -float(shared_left), 0.0)
        else:
            kind_key = (normal_key, float(len(members[pid])), -float(shared_left))
        key = (
            *capacity,
            -affinity,
            0.0 if fit.fits else 1.0,
            0.0 if fit.covers_limit else 1.0,
            burst_key,
            level_key,
            float(fit.nodes),
            0.0 if fit.has_types else 1.0,
            prio_key,
            -pool.depth,
            *kind_key,
            pid,
        )
        out.append(Score(key, pool, viable, use_isolated))
    out.sort(key=_key)
    return out


def _key(score: Score) -> tuple[float, ...]:
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
