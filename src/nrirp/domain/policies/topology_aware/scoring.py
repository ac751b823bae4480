"""Pool scoring: which pool serves a request best, in the reference's order.

1. insufficient isolated, shared or reserved capacity loses;
2. higher affinity score (weights of the containers the request has affinity to, counted in
   their pool fully and x0.75 per hop up or down the tree);
3. with topology hints: higher product of hint scores, then higher product of the non-zero
   scores; then the deeper pool, then the lower id (nothing else counts);
4. memory: an offer that fits without widening; for Burstable memory, capacity covering the limit;
5. Burstable CPU: shared capacity covering the limit; unlimited Burstable: the preferred level;
6. tighter memory offer (fewer nodes);
7. having the requested memory types;
8. (CPU class: every pool can serve it, so this never decides);
9. having CPUs of the requested priority (high or low) for the request;
10. deeper pool;
11. by kind: reserved - more reserved capacity per container; isolated - more isolated CPUs;
    exclusive - more sliceable shared capacity; shared - fewer containers, more shared capacity;
12. lower id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from nrirp.domain.config import CPUPriority
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import CPUKind, CPURequest
from nrirp.domain.policies.topology_aware.supply import Supply
from nrirp.domain.topology.hints import TopologyHint, hint_score

AFFINITY_DECAY = 0.75


@attrs.frozen
class MemoryFit:
    """How a pool's memory would take the request (``None`` offer: not asked or no size)."""

    enough: bool
    """The pool's memory of the allowed types can hold the request at all."""
    fits: bool
    """The allocator's offer fits without widening anyone."""
    nodes: int
    headroom: int
    has_types: bool
    covers_limit: bool


@attrs.frozen
class Score:
    pool: Pool
    viable: bool
    use_isolated: bool
    key: tuple[float, ...]
    shared_left: int
    isolated_left: int
    reserved_left: int


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


def score_pool(
    pool: Pool,
    cpu: CPURequest,
    supply: Supply,
    *,
    weighted: Sequence[tuple[Pool, int]],
    hints: Sequence[TopologyHint],
    memory: Callable[[Pool], MemoryFit],
    priority_cpus: CPUSet | None,
) -> Score:
    """The pool's score for the request; smaller keys are better."""
    kind = cpu.kind
    isolated_left = len(supply.isolated[pool.id]) - cpu.full if cpu.isolate else 0
    use_isolated = cpu.isolate and isolated_left >= 0
    shared_left = supply.allocatable_shared(pool) - cpu.shared
    if cpu.full and not use_isolated:
        shared_left -= 1000 * cpu.full
    reserved_left = 0
    if kind is CPUKind.RESERVED:
        reserved_left = supply.allocatable_reserved(pool) - cpu.shared
        capacity: tuple[float, ...] = (0.0 if reserved_left >= 0 else 1.0,)
        viable = True
    elif kind is CPUKind.PRESERVE:
        capacity = (0.0,)
        viable = True
    else:
        iso_bad = 1.0 if cpu.isolate and not use_isolated else 0.0
        shared_bad = 0.0 if shared_left >= 0 else 1.0
        capacity = (iso_bad, shared_bad)
        viable = use_isolated or (shared_left >= 0 and not cpu.require_isolated)
    affinity = affinity_score(pool, weighted) if weighted else 0.0
    if hints:
        product, nonzero = hint_scores(pool, hints)
        key = (*capacity, -affinity, -product, -nonzero, -pool.depth, pool.id)
        return Score(pool, viable, use_isolated, key, shared_left, isolated_left, reserved_left)

    fit = memory(pool)
    mem_key = (0.0 if fit.fits else 1.0, 0.0 if fit.covers_limit else 1.0)
    burst_key = 0.0
    if cpu.burstable and cpu.limit is not None:
        burst_key = 0.0 if supply.allocatable_shared(pool) >= cpu.limit else 1.0
    level_key = 0.0
    if cpu.unlimited_level is not None:
        level_key = 0.0 if cpu.unlimited_level in pool.levels else 1.0
    prio_key = 0.0
    if priority_cpus is not None:
        want = max(cpu.full, 1)
        have = len(supply.sharable[pool.id] & priority_cpus)
        prio_key = 0.0 if have >= want else 1.0
    if kind is CPUKind.RESERVED:
        per_container = reserved_left / (supply.count[pool.id] + 1)
        kind_key: tuple[float, ...] = (-per_container, 0.0)
    elif use_isolated:
        kind_key = (-float(len(supply.isolated[pool.id])), 0.0)
    elif cpu.full:
        kind_key = (-float(shared_left), 0.0)
    else:
        kind_key = (float(len(supply.members[pool.id])), -float(shared_left))
    key = (
        *capacity,
        -affinity,
        *mem_key,
        burst_key,
        level_key,
        float(fit.nodes),
        0.0 if fit.has_types else 1.0,
        prio_key,
        -pool.depth,
        *kind_key,
        pool.id,
    )
    return Score(pool, viable, use_isolated, key, shared_left, isolated_left, reserved_left)


def want_priority(cpu: CPURequest) -> CPUPriority | None:
    """The priority scoring item 9 looks at: high or low when the request asks for it."""
    if cpu.priority in (CPUPriority.HIGH, CPUPriority.LOW) and cpu.kind in (
        CPUKind.EXCLUSIVE,
        CPUKind.MIXED,
        CPUKind.SHARED,
    ):
        return cpu.priority
    return None
