"""Planning: the pool, CPUs and memory request for a container, decided without changing
anything (:class:`Plan`).

A new request scores the pools (``scoring.py``) and takes the best one whose CPUs can be
carved; a resize keeps the old grant's pool and CPUs when they still serve it; a restart or
reconfiguration keeps the saved grant when it still can be held. Scores are kept per request
signature and reused while their pool has not changed (``score_cache.py``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import NamedTuple

import attrs

from nrirp.domain.config import CPUPriority
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryRequest, human_bytes
from nrirp.domain.model import QOSClass
from nrirp.domain.policies.topology_aware.cpu_picker import CPUPicker
from nrirp.domain.policies.topology_aware.grants import Grant, RestoreError, SavedGrant, types_text
from nrirp.domain.policies.topology_aware.hint_limits import HintLimits
from nrirp.domain.policies.topology_aware.memory_view import PMEM, MemoryView, accounted_size
from nrirp.domain.policies.topology_aware.pools import Pool, PoolTree
from nrirp.domain.policies.topology_aware.preferences import (
    ROOTED_KINDS,
    CPUKind,
    CPURequest,
    MemoryPrefs,
    Request,
)
from nrirp.domain.policies.topology_aware.score_cache import (
    ScoreCache,
    Signature,
    request_signature,
)
from nrirp.domain.policies.topology_aware.scoring import (
    MemoryFit,
    PoolScorer,
    Score,
    score_key,
    want_priority,
    wants_normal_priority,
)
from nrirp.domain.policies.topology_aware.supply import Supply, plural
from nrirp.domain.policy import PolicyError
from nrirp.domain.topology import MemoryType
from nrirp.domain.topology.hints import TopologyHint


@attrs.frozen
class Plan:
    """A decision not yet committed."""

    request: Request
    pool: Pool
    kind: CPUKind
    exclusive: CPUSet
    shared: int
    reserved: int
    memory: MemoryRequest | None
    types: frozenset[MemoryType]


class _Setup(NamedTuple):
    """What :meth:`Planner.plan` works out before scoring (:meth:`Planner._setup`)."""

    cpu: CPURequest
    memory: MemoryPrefs
    types: frozenset[MemoryType]
    size: int
    pools: Sequence[Pool]
    scorer: PoolScorer
    """Its ``memory`` and ``allocatable`` are set for each plan."""
    hinted: CPUSet
    signature: Signature | None
    prefer: Pool | None


def _no_memory(pool: Pool) -> MemoryFit:
    raise AssertionError("a plan sets the scorer's memory fit")


class Planner:
    """Plans for requests against the current supply and memory usage."""

    def __init__(
        self,
        tree: PoolTree,
        supply: Supply,
        memory: MemoryView,
        cpus: CPUPicker,
        priorities: Mapping[CPUPriority, CPUSet],
    ) -> None:
        self.tree = tree
        self.supply = supply
        self.memory = memory
        self.cpus = cpus
        self.priorities = priorities
        self.score_cache = ScoreCache(supply, memory)
        self.setups: dict[tuple[int, int, QOSClass], _Setup] = {}
        """What plans of requests without hints, affinity, a preferred pool or a CPU class
        work out before scoring, by their CPU and memory preferences (identity) and QoS."""

    # ------------------------------------------------------------------ new placements
    def plan(
        self,
        request: Request,
        *,
        hints: Sequence[TopologyHint] = (),
        weighted: Sequence[tuple[Pool, int]] = (),
        prefer: Pool | None = None,
        class_cpus: CPUSet | None = None,
    ) -> Plan:
        """The best placement for ``request``; raises :class:`PolicyError` naming the shortage.
        ``class_cpus``: where the request's CPU class takes effect, when not on every CPU
        (scoring item 8).

        Reserved and preserved containers live in the root pool (all memory nodes), as in the
        reference; a reserved one the reserved CPUs cannot hold any more (or that finds no
        reserved CPUs) runs on the shared CPUs of a pool chosen as for any shared request."""
        cpu = request.cpu
        if cpu.kind is CPUKind.RESERVED and self.reserved_short(cpu.shared):
            request = attrs.evolve(request, cpu=attrs.evolve(cpu, kind=CPUKind.SHARED))
        plain = not (hints or weighted or prefer is not None or class_cpus is not None)
        setup = None
        if plain and request.hint_limits is None:
            # the same for every request of these preferences: worked out once
            setup = self.setups.get((id(request.cpu), id(request.memory), request.qos))
            if setup is None or setup.cpu is not request.cpu or setup.memory is not request.memory:
                setup = self._setup(request, (), (), None, None)
                if len(self.setups) >= 256:
                    self.setups.clear()
                self.setups[id(request.cpu), id(request.memory), request.qos] = setup
        else:
            setup = self._setup(request, hints, weighted, prefer, class_cpus)
        types, size, pools = setup.types, setup.size, setup.pools
        memory = self.memory
        fits: dict[int, tuple[bool, int, bool]] = {}  # per node set, for this plan only

        def memory_fit(pool: Pool) -> MemoryFit:
            return memory.fit(request, pool, types, size, fits)

        scorer = setup.scorer
        scorer.memory = memory_fit
        scorer.allocatable = self.supply.allocatable_shared_all()
        hinted = setup.hinted
        prefer = setup.prefer
        scores, complete = self.score_cache.scores(setup.signature, pools, scorer, request, types)
        tried: set[int] = set()
        while True:
            for score in _best_first(scores, prefer):
                if score.pool.id in tried:
                    continue
                tried.add(score.pool.id)
                plan = self._realize(request, score, types, size, hinted)
                if plan is not None:
                    return plan
                if not complete:
                    break
            if complete:
                raise PolicyError(self._shortage(request, scores))
            scores, complete = self.score_cache.scores(None, pools, scorer, request, types)

    def _setup(
        self,
        request: Request,
        hints: Sequence[TopologyHint],
        weighted: Sequence[tuple[Pool, int]],
        prefer: Pool | None,
        class_cpus: CPUSet | None,
    ) -> _Setup:
        """What a plan for ``request`` works out before scoring: the same for every request
        of the same CPU and memory preferences and QoS class (without hints, affinity, a
        preferred pool or a CPU class). Raises :class:`PolicyError` when no pool can take it.
        """
        memory = self.memory
        types = memory.types_of(request)
        if not memory.typed_nodes(types) & self.tree.top.mems:
            raise PolicyError(
                f"this node has no {types_text(types)} memory for the policy "
                f"(memory-type annotation)"
            )
        size = accounted_size(request)
        pools: Sequence[Pool] = self.tree.pools
        if size:
            roomy = memory.roomy(types, size)
            if not roomy:
                largest = max(pools, key=lambda p: (memory.pool_capacity(p, types), -p.id))
                raise PolicyError(
                    f"no pool has {human_bytes(size)} of "
                    f"{types_text(types)} memory: the largest, {largest.name}, has "
                    f"{human_bytes(memory.pool_capacity(largest, types))}"
                )
            pools = roomy
        if request.memory.cold_start > 0 and MemoryType.PMEM in types:
            # a cold start begins on PMEM: pools that offer some
            pmem = memory.typed_nodes(PMEM)
            pools = [p for p in pools if memory.pool_nodes(p, types) & pmem] or pools
        rooted = request.cpu.kind in ROOTED_KINDS
        if rooted:
            # the roomiest pool: the memory check above keeps it whenever any pool is kept
            pools = [self.tree.top]
            hints, weighted, prefer = (), (), None
        limits = None if rooted else request.hint_limits
        if limits is not None:
            strict = [p for p in pools if self._within(p, request, limits, types)]
            if not strict:
                raise PolicyError(
                    f"no pool can grant CPUs and memory inside every topology "
                    f"hint (strict.topologyhints): {limits.text}"
                )
            pools = strict
        wanted = want_priority(request.cpu)
        priority_cpus = self.priorities.get(wanted) if wanted is not None else None
        normal_cpus = (
            self.priorities.get(CPUPriority.NORMAL, CPUSet())
            if wants_normal_priority(request.cpu)
            else None
        )
        scorer = PoolScorer(
            request.cpu,
            self.supply,
            weighted=weighted,
            hints=hints,
            memory=_no_memory,
            priority_cpus=priority_cpus,
            normal_cpus=normal_cpus,
            class_cpus=class_cpus,
        )
        hinted = CPUSet().union(*(h.cpus for h in hints)) if request.pick_by_hints else CPUSet()
        signature = None
        if not (hints or weighted or prefer is not None or class_cpus is not None):
            signature = request_signature(request, size, types)
        return _Setup(
            request.cpu, request.memory, types, size, pools, scorer, hinted, signature, prefer
        )

    def reserved_short(self, mcpu: int) -> str | None:
        """Why the reserved CPUs cannot take a reserved grant of ``mcpu`` more (``None``:
        they can)."""
        top = self.tree.top
        if not self.supply.reserved[top.id]:
            return "there are no reserved CPUs"
        left = self.supply.allocatable_reserved(top)
        if left < mcpu:
            return f"the reserved CPUs have {max(left, 0)}m left, {mcpu}m asked"
        return None

    def _within(
        self, pool: Pool, request: Request, limits: HintLimits, types: frozenset[MemoryType]
    ) -> bool:
        """Can ``pool`` grant ``request`` CPUs and memory inside strict hints' ``limits``?"""
        cpu = request.cpu
        if limits.cpus is not None:
            if cpu.kind in (CPUKind.SHARED, CPUKind.MIXED) and not pool.cpus.issubset(limits.cpus):
                return False  # the shared CPUs are the pool's
            supply = self.supply
            free = (supply.sharable[pool.id] | supply.isolated[pool.id]) & limits.cpus
            if len(free) < cpu.full:
                return False
        if limits.nodes is not None and not request.memory.preserve:
            return bool(self.memory.pool_nodes(pool, types) & limits.nodes)
        return True

    def _realize(
        self,
        request: Request,
        score: Score,
        types: frozenset[MemoryType],
        size: int,
        hinted: CPUSet,
    ) -> Plan | None:
        cpu = request.cpu
        pool = score.pool
        kind = cpu.kind
        limits = request.hint_limits if kind not in ROOTED_KINDS else None
        within = limits.cpus if limits is not None else None
        exclusive = CPUSet()
        if cpu.full:
            if score.use_isolated:
                isolated = self.supply.isolated[pool.id]
                exclusive = self.cpus.pick(
                    isolated if within is None else isolated & within, cpu, hinted
                )
                if kind is CPUKind.EXCLUSIVE:
                    kind = CPUKind.ISOLATED
            elif not cpu.require_isolated:
                exclusive = self.cpus.pick_sharable(pool, cpu, hinted, within=within)
            if not exclusive:
                return None
        shared = cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0
        reserved = cpu.shared if kind is CPUKind.RESERVED else 0
        memory = self.memory.request_for(request, pool, types, size)
        if limits is not None:
            # the reference's verifyStrictTopologyHints: the grant lies inside every hint
            cpus = exclusive | pool.cpus if shared else exclusive
            if not limits.holds(cpus, memory.nodes if memory is not None else None):
                return None
        return Plan(request, pool, kind, exclusive, shared, reserved, memory, types)

    def _shortage(self, request: Request, scores: Sequence[Score]) -> str:
        cpu = request.cpu
        if not scores:
            return "no pool can take it"
        pool = min(scores, key=score_key).pool
        supply = self.supply
        sharable = len(supply.sharable[pool.id])
        used = supply.shared_granted[pool.id]
        allocatable = supply.allocatable_shared(pool)
        isolated = ""
        if cpu.full and (cpu.require_isolated or (cpu.isolate and supply.isolated_cpus)):
            roomy = max(scores, key=lambda s: (len(supply.isolated[s.pool.id]), -s.pool.id)).pool
            free, total = len(supply.isolated[roomy.id]), len(supply.isolated_all[roomy.id])
            isolated = (
                f"no pool has {plural(cpu.full, 'free isolated CPU')}: best "
                f"{roomy.name} has {free} free of its {plural(total, 'isolated CPU')}"
            )
        if cpu.require_isolated:
            return f"{isolated} (require-isolated-cpus)"
        if cpu.full:
            text = f"no pool has {plural(cpu.full, 'exclusive CPU')}"
            if cpu.shared:
                text += f" and {cpu.shared}m shared CPU"
            text += (
                f": best {pool.name} has {plural(sharable, 'sharable CPU')} of which {used}m "
                "are used by shared containers"
            )
            if allocatable < 1000 * sharable - used:
                text += f" ({max(allocatable, 0)}m allocatable along its path)"
            kept = sum(-(-supply.shared_granted[c.id] // 1000) for c in pool.children)
            if kept:
                text += (
                    f"; its child pools keep at least {plural(kept, 'CPU')} of them for their "
                    "shared containers"
                )
            if isolated:
                text += f"; and {isolated} (prefer-isolated-cpus)"
            return text
        return (
            f"no pool has {cpu.shared}m shared CPU: best {pool.name} has "
            f"{max(allocatable, 0)}m free ({plural(sharable, 'sharable CPU')}, {used}m used "
            "by shared containers)"
        )

    # ------------------------------------------------------------------ kept placements
    def plan_keeping(self, request: Request, old: Grant) -> Plan | None:
        """A plan that keeps ``old``'s pool and CPUs (a resize whose CPU part still fits
        them: exclusive CPUs stay where they are); ``None`` when the request needs another
        placement. ``old`` must be out of the accounting (detached)."""
        pool = old.pool
        types = self.memory.types_of(request)
        size = accounted_size(request)
        if size and self.memory.pool_capacity(pool, types) < size:
            return None
        if self.cpus.problem(request, pool, old.kind, old.exclusive) is not None:
            return None
        return self._kept(request, pool, old.kind, old.exclusive, types, size)

    def plan_saved(self, request: Request, saved: SavedGrant) -> Plan:
        """A plan that holds what ``saved`` describes (its memory zone aside: the caller
        restores it); raises :class:`RestoreError` when that is no longer possible: the pool
        is gone, or the CPUs are not free, no longer of the right kind, or the shared CPUs
        cannot hold it."""
        pool = self.tree.by_name(saved.pool)
        if pool is None:
            raise RestoreError(f"pool {saved.pool!r} no longer exists")
        problem = self.cpus.problem(request, pool, saved.kind, saved.exclusive)
        if problem is not None:
            raise RestoreError(problem)
        types = saved.memory_types or self.memory.types_of(request)
        size = accounted_size(request)
        return self._kept(request, pool, saved.kind, saved.exclusive, types, size)

    def _kept(
        self,
        request: Request,
        pool: Pool,
        kind: CPUKind,
        exclusive: CPUSet,
        types: frozenset[MemoryType],
        size: int,
    ) -> Plan:
        """A plan keeping ``kind`` and ``exclusive`` in ``pool`` (mixed if the request is)."""
        cpu = request.cpu
        kind = CPUKind.MIXED if cpu.kind is CPUKind.MIXED else kind
        if cpu.kind in ROOTED_KINDS and kind not in ROOTED_KINDS:
            # a reserved request kept on the shared CPUs it fell back to: a shared request,
            # as plan() made it (strict topology hints bound its memory again)
            request = attrs.evolve(request, cpu=attrs.evolve(cpu, kind=kind))
            cpu = request.cpu
        return Plan(
            request,
            pool,
            kind,
            exclusive,
            cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0,
            cpu.shared if kind is CPUKind.RESERVED else 0,
            self.memory.request_for(request, pool, types, size),
            types,
        )


def _best_first(scores: Sequence[Score], prefer: Pool | None) -> Iterator[Score]:
    """The viable scores to try, best first: the preferred pool, then by key (sorted only if
    the best cannot be carved)."""
    viable = [s for s in scores if s.viable]
    if not viable:
        return
    first = None
    if prefer is not None:
        first = next((s for s in viable if s.pool is prefer), None)
    if first is None:
        first = min(viable, key=score_key)
    yield first
    viable.remove(first)
    viable.sort(key=score_key)
    yield from viable
