"""The allocation engine: pools, supply, memory zones and grants, without the cache.

The engine plans a request (nothing changes), commits a plan, releases and restores grants,
and reports at :meth:`Allocations.flush` the cpus and mems of exactly the containers whose
values may have changed since the last flush, with the reason for the ones that moved as a side
effect. A plan or commit that raises leaves the engine as it was; so does a resize that fails
(:meth:`Allocations.detach` then :meth:`Allocations.reattach`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import attrs

from nrirp.domain.config import CPUPriority
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryAllocator, MemoryRequest
from nrirp.domain.memalloc import human_bytes as _human_bytes
from nrirp.domain.model import QOSClass
from nrirp.domain.policies.topology_aware.grants import Grant, SavedGrant, types_text
from nrirp.domain.policies.topology_aware.pools import Pool, PoolTree, build_pool_tree
from nrirp.domain.policies.topology_aware.preferences import CPUKind, CPURequest, Request
from nrirp.domain.policies.topology_aware.resources import ManagedResources, resolve_resources
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
from nrirp.domain.topology import Machine, MemoryType
from nrirp.domain.topology.hints import TopologyHint, hint_score


class RestoreError(ValueError):
    """A saved grant cannot be restored as it was (the caller allocates anew)."""


def human_bytes(size: int) -> str:
    return _human_bytes(size)


@attrs.frozen
class _PoolMemory:
    nodes: CPUSet
    """The nodes the pool's requests of these types are placed in."""
    count: int
    capacity: int
    typed_capacity: int
    has_types: bool
    """The pool has memory of one of the types."""
    has_all_types: bool
    """The pool has memory of every one of the types."""
    bound: int
    """The pool whose ``pool_touch`` counter bounds the usage of zones meeting ``nodes``."""


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


_EXCLUSIVE_KINDS = (CPUKind.EXCLUSIVE, CPUKind.ISOLATED)


def compatible_kinds(kind: CPUKind) -> tuple[CPUKind, ...]:
    """Kinds a grant may have and still serve a request of ``kind``."""
    if kind is CPUKind.EXCLUSIVE:
        return _EXCLUSIVE_KINDS
    if kind is CPUKind.MIXED:
        return (CPUKind.MIXED, *_EXCLUSIVE_KINDS)
    return (kind,)


class Allocations:
    """Pools and grants for one configuration of the policy."""

    def __init__(
        self, machine: Machine, spec: TopologyAwarePolicySpec, cpu_allocator: CPUAllocator
    ) -> None:
        self.machine = machine
        self.spec = spec
        self.cpu_allocator = cpu_allocator
        self.resources: ManagedResources = resolve_resources(machine, spec, cpu_allocator)
        try:
            self.tree: PoolTree = build_pool_tree(machine, self.resources.available)
        except ValueError as exc:
            raise PolicyError(str(exc)) from None
        self.supply = Supply(self.tree, self.resources.reserved, self.resources.isolated)
        self.memory = MemoryAllocator(machine, nodes=self.tree.top.mems)
        self.priorities: Mapping[CPUPriority, CPUSet] = cpu_allocator.priorities()
        present = {n.memory_type for n in machine.nodes.values() if n.memory_bytes > 0}
        default = frozenset(present - {MemoryType.HBM}) or frozenset(present)
        self.default_types: frozenset[MemoryType] = default
        self._typed_nodes: dict[frozenset[MemoryType], CPUSet] = {}
        self._capacity: dict[tuple[int, frozenset[MemoryType]], int] = {}
        self.threads_per_core = max((len(c.cpus) for c in machine.cores.values()), default=1)
        self.grants: dict[str, Grant] = {}
        self.cold_starts: dict[str, float] = {}
        """Container id -> end of its cold start, for the grants in one (kept with ``grants``)."""
        self.memory_granted = 0
        self._cpu_dirty: dict[str, None] = {}
        self._mem_dirty: dict[str, None] = {}
        self._mem_causes: dict[str, str] = {}
        self._detached: dict[str, Grant] = {}
        self._hide_cache: dict[CPUSet, CPUSet] = {}
        self._pool_memory_cache: dict[frozenset[MemoryType], list[_PoolMemory]] = {}
        self._zone_pools: dict[int, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        self._roomy_cache: dict[tuple[frozenset[MemoryType], int], list[Pool]] = {}
        self._score_cache: dict[
            tuple[object, ...],
            tuple[list[int], list[tuple[float, ...]], list[tuple[int, int, int, Score] | None]],
        ] = {}
        self.pool_usage: list[int] = [0] * len(self.tree.pools)
        """Bytes of grants whose memory zone lies within each pool's memory, by pool id."""
        self.pool_touch: list[int] = [0] * len(self.tree.pools)
        """Bytes of grants whose memory zone meets each pool's memory, by pool id."""
        self.colocated: dict[tuple[str, str], dict[int, int]] = {}
        """Grants per pool id of each ``("pod", pod id)`` and ``("namespace", name)``."""

    # ================================================================== memory facts
    def typed_nodes(self, types: frozenset[MemoryType]) -> CPUSet:
        nodes = self._typed_nodes.get(types)
        if nodes is None:
            nodes = CPUSet.from_ids(
                n.id for n in self.machine.nodes.values() if n.memory_type in types
            )
            self._typed_nodes[types] = nodes
        return nodes

    def pool_nodes(self, pool: Pool, types: frozenset[MemoryType]) -> CPUSet:
        """The pool's memory nodes of ``types`` (the whole machine's when it has none)."""
        typed = self.typed_nodes(types)
        return (pool.mems & typed) or (self.tree.top.mems & typed)

    def pool_capacity(self, pool: Pool, types: frozenset[MemoryType]) -> int:
        key = (pool.id, types)
        value = self._capacity.get(key)
        if value is None:
            value = self.memory.capacity(pool.mems & self.typed_nodes(types))
            self._capacity[key] = value
        return value

    def _roomy(self, types: frozenset[MemoryType], size: int) -> list[Pool]:
        """The pools whose memory of ``types`` can hold ``size`` bytes at all."""
        key = (types, size)
        found = self._roomy_cache.get(key)
        if found is None:
            if len(self._roomy_cache) >= 1024:
                self._roomy_cache.clear()
            found = [p for p in self.tree.pools if self.pool_capacity(p, types) >= size]
            self._roomy_cache[key] = found
        return found

    def colocated_pools(self, key: tuple[str, str], weight: int) -> list[tuple[Pool, int]]:
        """``(pool, weight * grants there)`` for the grants of a pod or namespace (``key``)."""
        counts = self.colocated.get(key)
        if not counts:
            return []
        pools = self.tree.pools
        return [(pools[pid], weight * n) for pid, n in counts.items()]

    # ================================================================== planning
    def plan(
        self,
        request: Request,
        *,
        hints: Sequence[TopologyHint] = (),
        weighted: Sequence[tuple[Pool, int]] = (),
        prefer: Pool | None = None,
    ) -> Plan:
        """The best placement for ``request``; raises :class:`PolicyError` naming the shortage."""
        types = request.memory.types or self.default_types
        if not self.typed_nodes(types) & self.tree.top.mems:
            raise PolicyError(
                f"{request.label}: this node has no {types_text(types)} memory for the policy "
                f"(memory-type annotation)"
            )
        size = 0 if request.memory.preserve else request.memory.size
        pools: Sequence[Pool] = self.tree.pools
        if size:
            roomy = self._roomy(types, size)
            if not roomy:
                largest = max(pools, key=lambda p: (self.pool_capacity(p, types), -p.id))
                raise PolicyError(
                    f"{request.label}: no pool has {human_bytes(size)} of "
                    f"{types_text(types)} memory: the largest, {largest.name}, has "
                    f"{human_bytes(self.pool_capacity(largest, types))}"
                )
            pools = roomy
        if request.memory.cold_start > 0 and MemoryType.PMEM in types:
            # a cold start begins on PMEM: pools that have some
            pmem = self.typed_nodes(frozenset({MemoryType.PMEM}))
            pools = [p for p in pools if p.mems & pmem] or pools
        if request.cpu.kind is CPUKind.RESERVED:
            # reserved containers run on reserved CPUs: only pools that have some
            pools = [p for p in pools if self.supply.reserved[p.id]] or pools
        if hints and request.strict_hints:
            strict = [p for p in pools if all(_hint_fits(h, p) for h in hints)]
            if not strict:
                names = ", ".join(str(h) for h in hints)
                raise PolicyError(
                    f"{request.label}: no pool satisfies every topology hint "
                    f"(strict.topologyhints): {names}"
                )
            pools = strict
        wanted = want_priority(request.cpu)
        priority_cpus = self.priorities.get(wanted) if wanted is not None else None
        normal_cpus = (
            self.priorities.get(CPUPriority.NORMAL, CPUSet())
            if wants_normal_priority(request.cpu)
            else None
        )
        fits: dict[int, tuple[bool, int, bool]] = {}  # per node set, for this plan only

        def memory_fit(pool: Pool) -> MemoryFit:
            return self._memory_fit(request, pool, types, size, fits)

        scorer = PoolScorer(
            request.cpu,
            self.supply,
            weighted=weighted,
            hints=hints,
            memory=memory_fit,
            priority_cpus=priority_cpus,
            normal_cpus=normal_cpus,
            threads=self.exclusive_threads(request.cpu),
        )
        hinted = CPUSet().union(*(h.cpus for h in hints)) if request.pick_by_hints else CPUSet()
        signature: tuple[object, ...] | None = None
        if not (hints or weighted or prefer is not None):
            cold = request.memory.cold_start > 0
            signature = (
                request.cpu,
                size,
                types,
                request.memory.types is not None,
                request.qos,
                request.memory.limit,
                cold,
            )
        scores, complete = self._scores(signature, pools, scorer, request, types)
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
            scores, complete = self._scores(None, pools, scorer, request, types)

    def _scores(
        self,
        signature: tuple[object, ...] | None,
        pools: Sequence[Pool],
        scorer: PoolScorer,
        request: Request,
        types: frozenset[MemoryType],
    ) -> tuple[list[Score], bool]:
        """The pools' scores, and whether every pool was scored.

        Without a ``signature`` every pool is scored. With one, scores computed for an
        earlier request of the same signature are reused while their pool has not changed
        (same version, same allocatable shared and reserved capacity, memory usage still
        within what its fit allowed), and a changed pool is scored again only if its lower
        bounds (:meth:`PoolScorer.bound`, :meth:`PoolScorer.tighter_bound`) could beat the best
        viable score found: most decisions change a handful of pools, and pools of the wrong
        depth or level, or with more containers, need no full look.
        """
        if signature is None:
            return [scorer.score(p) for p in pools], True
        cached = self._score_cache.get(signature)
        if cached is None:
            if len(self._score_cache) >= 256:
                self._score_cache.clear()
            cached = self._score_cache[signature] = self._score_entry(pools, scorer, request, types)
        order, bounds, entries = cached
        version = self.supply.version
        allocatable = scorer.allocatable
        reserved = scorer.allocatable_reserved
        touch = self.pool_touch
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
            if (
                entry is not None
                and entry[0] == version[pid]
                and entry[1] == allocatable[pid]
                and (reserved is None or entry[2] == reserved[pid])
            ):
                score = entry[3]
                room = score.memory_room
                if room is None or touch[pid] <= room:
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
            score = scorer.score(pool)
            pid = pool.id
            entries[index] = (
                (version[pid], allocatable[pid], reserved[pid] if reserved else 0, score)
                if score.stable
                else None
            )
            out.append(score)
            if score.viable and (best is None or score.key < best):
                best = score.key
        return out, complete

    def _score_entry(
        self,
        pools: Sequence[Pool],
        scorer: PoolScorer,
        request: Request,
        types: frozenset[MemoryType],
    ) -> tuple[list[int], list[tuple[float, ...]], list[tuple[int, int, int, Score] | None]]:
        """A new cache entry: pool indexes by lower bound, the bounds, no scores yet."""
        facts = self._pool_memory(types)
        limit = request.memory.limit
        burstable = request.qos is QOSClass.BURSTABLE and limit is not None
        size = 0 if request.memory.preserve else request.memory.size
        explicit = request.memory.types is not None
        bounds = []
        for pool in pools:
            f = facts[pool.id]
            bounds.append(
                scorer.bound(
                    pool,
                    covers=not burstable or f.typed_capacity >= (limit or 0),
                    nodes=f.count if size else 0,
                    has_types=f.has_all_types if explicit else f.has_types,
                )
            )
        order = sorted(range(len(pools)), key=bounds.__getitem__)
        return order, bounds, [None] * len(pools)

    def plan_keeping(self, request: Request, old: Grant) -> Plan | None:
        """A plan that keeps ``old``'s pool and CPUs (a resize whose CPU part still fits
        them: exclusive CPUs stay where they are); ``None`` when the request needs another
        placement. ``old`` must be detached (:meth:`detach`)."""
        pool = old.pool
        types = request.memory.types or self.default_types
        size = 0 if request.memory.preserve else request.memory.size
        if size and self.pool_capacity(pool, types) < size:
            return None
        if self._cpu_problem(request, pool, old.kind, old.exclusive) is not None:
            return None
        kind = CPUKind.MIXED if request.cpu.kind is CPUKind.MIXED else old.kind
        cpu = request.cpu
        return Plan(
            request,
            pool,
            kind,
            old.exclusive,
            cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0,
            cpu.shared if kind is CPUKind.RESERVED else 0,
            self._memory_request(request, pool, types, size),
            types,
        )

    def exclusive_threads(self, cpu: CPURequest) -> int:
        """CPUs the exclusive part of ``cpu`` takes: whole cores with hide-hyperthreads."""
        return cpu.full * self.threads_per_core if cpu.hide_hyperthreads else cpu.full

    def _pool_memory(self, types: frozenset[MemoryType]) -> list[_PoolMemory]:
        """Memory facts of every pool for requests of ``types``, by pool id."""
        facts = self._pool_memory_cache.get(types)
        if facts is None:
            facts = []
            for pool in self.tree.pools:
                nodes = self.pool_nodes(pool, types)
                has_types = bool(pool.mems & self.typed_nodes(types))
                has_all_types = all(pool.mems & self.typed_nodes(frozenset({t})) for t in types)
                facts.append(
                    _PoolMemory(
                        nodes=nodes,
                        count=len(nodes),
                        capacity=self.memory.capacity(nodes),
                        typed_capacity=self.pool_capacity(pool, types),
                        has_types=has_types,
                        has_all_types=has_all_types,
                        bound=pool.id if has_types else self.tree.top.id,
                    )
                )
            self._pool_memory_cache[types] = facts
        return facts

    def _memory_fit(
        self,
        request: Request,
        pool: Pool,
        types: frozenset[MemoryType],
        size: int,
        known: dict[int, tuple[bool, int, bool]],
    ) -> MemoryFit:
        facts = self._pool_memory(types)[pool.id]
        limit = request.memory.limit
        covers = True
        if request.qos is QOSClass.BURSTABLE and limit is not None:
            covers = facts.typed_capacity >= limit
        has_types = facts.has_all_types if request.memory.types is not None else facts.has_types
        if not size:
            return MemoryFit(True, 0, has_types, covers)
        key = facts.nodes.bits
        fit = known.get(key)
        if fit is None:
            # Sufficient for a fit without widening anyone: every zone meeting the nodes plus
            # the request fits in them (a set S holding the nodes N then has demand at most
            # that plus the demand of S - N, which fitted before).
            if self.pool_touch[facts.bound] + size <= facts.capacity:
                fit = (True, facts.count, True)
            else:
                try:
                    offer = self.memory.offer(
                        MemoryRequest(
                            owner=request.container_id, size=size, nodes=facts.nodes, types=types
                        )
                    )
                    fit = (offer.fits, len(offer.nodes), False)
                except MemoryAllocationError:
                    fit = (False, 1 << 30, False)
            known[key] = fit
        # a fast-path fit stays true while the usage meeting the pool's memory stays within
        # what the test allowed (when the nodes are the pool's own)
        stable = fit[2] and facts.bound == pool.id
        room = facts.capacity - size if stable else None
        return MemoryFit(fit[0], fit[1], has_types, covers, stable, room)

    def _zone_pools_of(self, zone: CPUSet) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(pools whose memory holds ``zone``, pools whose memory meets it), by id."""
        bits = zone.bits
        found = self._zone_pools.get(bits)
        if found is None:
            pools = self.tree.pools
            found = (
                tuple(p.id for p in pools if bits & ~p.mems.bits == 0),
                tuple(p.id for p in pools if bits & p.mems.bits),
            )
            self._zone_pools[bits] = found
        return found

    def _usage(self, zone: CPUSet | None, size: int) -> None:
        """Count ``size`` bytes (negative: uncount) in the pools whose memory holds or meets
        ``zone``."""
        if zone is None or not size:
            return
        within, meeting = self._zone_pools_of(zone)
        usage, touch = self.pool_usage, self.pool_touch
        for pid in within:
            usage[pid] += size
        for pid in meeting:
            touch[pid] += size

    def _memory_request(
        self, request: Request, pool: Pool, types: frozenset[MemoryType], size: int
    ) -> MemoryRequest | None:
        if request.memory.preserve:
            return None
        return MemoryRequest(
            owner=request.container_id,
            size=size,
            nodes=self.pool_nodes(pool, types),
            types=types,
        )

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
        exclusive = CPUSet()
        if cpu.full:
            if score.use_isolated:
                exclusive = self._pick(self.supply.isolated[pool.id], cpu, hinted)
                if kind is CPUKind.EXCLUSIVE:
                    kind = CPUKind.ISOLATED
            elif not cpu.require_isolated:
                exclusive = self._pick_sharable(pool, cpu, hinted)
            if not exclusive:
                return None
        shared = cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0
        reserved = cpu.shared if kind is CPUKind.RESERVED else 0
        memory = self._memory_request(request, pool, types, size)
        return Plan(request, pool, kind, exclusive, shared, reserved, memory, types)

    def _pick(self, available: CPUSet, cpu: CPURequest, hinted: CPUSet) -> CPUSet:
        """The exclusive CPUs of ``cpu`` out of ``available`` (empty when they are not
        there): ``cpu.full`` CPUs, or that many whole cores with hide-hyperthreads."""
        if not cpu.hide_hyperthreads:
            return self._pick_threads(available, cpu.full, cpu.priority, hinted)
        leads = self._core_leads(available)
        near = CPUSet()
        if hinted:
            near = CPUSet.from_ids(i for i in leads if self.machine.thread_siblings(i) & hinted)
        picked = self._pick_threads(leads, cpu.full, cpu.priority, near)
        return CPUSet().union(*(self.machine.thread_siblings(i) for i in picked))

    def _core_leads(self, cpus: CPUSet) -> CPUSet:
        """The first thread of every core whose threads are all in ``cpus``."""
        siblings = self.machine.thread_siblings
        return CPUSet.from_ids(
            i for i in cpus if siblings(i).min() == i and siblings(i).issubset(cpus)
        )

    def exclusive_shape_ok(self, cpu: CPURequest, cpus: CPUSet) -> bool:
        """Do ``cpus`` hold what ``cpu``'s exclusive part asks: ``full`` CPUs, or ``full``
        whole cores with hide-hyperthreads?"""
        if not cpu.hide_hyperthreads:
            return len(cpus) == cpu.full
        leads = self._core_leads(cpus)
        whole = sum(len(self.machine.thread_siblings(i)) for i in leads)
        return len(leads) == cpu.full and whole == len(cpus)

    def _pick_threads(
        self, available: CPUSet, count: int, priority: CPUPriority, hinted: CPUSet
    ) -> CPUSet:
        if len(available) < count:
            return CPUSet()
        try:
            near = available & hinted
            if near:
                if len(near) >= count:
                    return self.cpu_allocator.allocate(near, count, priority=priority)
                rest = self.cpu_allocator.allocate(
                    available - near, count - len(near), priority=priority
                )
                return near | rest
            return self.cpu_allocator.allocate(available, count, priority=priority)
        except CPUAllocationError:
            return CPUSet()

    def _pick_sharable(self, pool: Pool, cpu: CPURequest, hinted: CPUSet) -> CPUSet:
        """Exclusive CPUs from the pool's sharable set that leave every pool they come from
        enough CPUs for its shared grants (steering around full descendants)."""
        supply = self.supply
        excluded = CPUSet()
        for _ in range(len(pool.descendants) + 1):
            picked = self._pick(supply.sharable[pool.id] - excluded, cpu, hinted)
            if not picked:
                return CPUSet()
            over = supply.overcommitted_by(pool, picked)
            if not over:
                if cpu.kind is CPUKind.MIXED and not supply.fits(pool, picked, cpu.shared):
                    return CPUSet()
                return picked
            below = [p for p in over if p.id != pool.id and p not in pool.ancestors]
            if len(below) != len(over):
                return CPUSet()
            for p in below:
                excluded = excluded | supply.sharable[p.id]
        return CPUSet()

    def _shortage(self, request: Request, scores: Sequence[Score]) -> str:
        cpu = request.cpu
        label = request.label
        if not scores:
            return f"{label}: no pool can take it"
        pool = min(scores, key=score_key).pool
        supply = self.supply
        sharable = len(supply.sharable[pool.id])
        used = supply.shared_granted[pool.id]
        allocatable = supply.allocatable_shared(pool)
        cores = " (whole cores: hide-hyperthreads)" if cpu.hide_hyperthreads else ""
        isolated = ""
        if cpu.full and (cpu.require_isolated or (cpu.isolate and supply.isolated_cpus)):
            roomy = max(scores, key=lambda s: (len(supply.isolated[s.pool.id]), -s.pool.id)).pool
            free, total = len(supply.isolated[roomy.id]), len(supply.isolated_all[roomy.id])
            isolated = (
                f"no pool has {plural(cpu.full, 'free isolated CPU')}{cores}: best "
                f"{roomy.name} has {free} free of its {plural(total, 'isolated CPU')}"
            )
        if cpu.require_isolated:
            return f"{label}: {isolated} (require-isolated-cpus)"
        if cpu.full:
            text = f"{label}: no pool has {plural(cpu.full, 'exclusive CPU')}{cores}"
            if cpu.shared:
                text += f" and {cpu.shared}m shared CPU"
            text += (
                f": best {pool.name} has {plural(sharable, 'sharable CPU')} of which {used}m "
                "are used by shared containers"
            )
            if allocatable < 1000 * sharable - used:
                text += f" ({max(allocatable, 0)}m allocatable along its path)"
            if isolated:
                text += f"; and {isolated} (prefer-isolated-cpus)"
            return text
        return (
            f"{label}: no pool has {cpu.shared}m shared CPU: best {pool.name} has "
            f"{max(allocatable, 0)}m free ({plural(sharable, 'sharable CPU')}, {used}m used "
            "by shared containers)"
        )

    # ================================================================== changes
    def commit(self, plan: Plan, *, cold_start_until: float | None = None) -> Grant:
        """Carry out ``plan``; raises :class:`PolicyError` (nothing changed) when memory fails.

        A detached grant of the same container (a resize) is replaced: its memory is re-placed
        by the allocator, which keeps the old placement if the new one fails."""
        request = plan.request
        cid = request.container_id
        size = plan.memory.size if plan.memory is not None else 0
        limit = self.resources.memory_limit
        if limit is not None and size and self.memory_granted + size > limit:
            raise PolicyError(
                f"{request.label}: {human_bytes(size)} of memory would exceed the policy's "
                f"memory ({human_bytes(limit)}, {human_bytes(self.memory_granted)} granted; "
                "availableResources/reservedResources memory)"
            )
        zone: CPUSet | None = None
        moved: dict[str, CPUSet] = {}
        detached = self._detached.get(cid)
        if plan.memory is not None:
            try:
                zone, moved = self.memory.allocate(plan.memory)
            except MemoryAllocationError as exc:
                raise PolicyError(_memory_refusal(request, plan, exc)) from None
        elif detached is not None and detached.memory is not None:
            moved = self.memory.release(cid)
        self._detached.pop(cid, None)
        grant = self._grant(
            request,
            plan.pool,
            plan.kind,
            exclusive=plan.exclusive,
            shared=plan.shared,
            reserved=plan.reserved,
            zone=zone,
            types=plan.types,
            size=size,
            cold_start_until=cold_start_until,
        )
        self._account(grant)
        nodes = plan.memory.nodes if plan.memory is not None else None
        self._moved(moved, f"{request.label} needs memory in NUMA nodes {nodes}")
        return grant

    def _cpu_problem(
        self, request: Request, pool: Pool, kind: CPUKind, exclusive: CPUSet
    ) -> str | None:
        """Why ``request`` cannot be served in ``pool`` with a grant of ``kind`` holding
        ``exclusive`` (free, not accounted) now; ``None`` when it can."""
        cpu = request.cpu
        supply = self.supply
        if kind not in compatible_kinds(cpu.kind):
            return f"kind {kind.value} does not suit the request now"
        if not self.exclusive_shape_ok(cpu, exclusive):
            what = "whole cores" if cpu.hide_hyperthreads else "exclusive CPUs"
            return f"{plural(len(exclusive), 'exclusive CPU')}, {cpu.full} {what} wanted"
        sliced = CPUSet()
        if exclusive:
            from_isolated = exclusive.issubset(supply.isolated[pool.id])
            from_sharable = exclusive.issubset(supply.sharable[pool.id])
            if (kind is CPUKind.ISOLATED or cpu.require_isolated) and not from_isolated:
                return f"isolated {cpu_text(exclusive)} not free"
            if kind is CPUKind.EXCLUSIVE and not from_sharable:
                return f"sharable {cpu_text(exclusive)} not free"
            if not (from_sharable or from_isolated):
                return f"{cpu_text(exclusive)} not free"
            if from_sharable:
                sliced = exclusive
        if kind is CPUKind.RESERVED:
            if not supply.reserved[pool.id]:
                return f"{pool.name} has no reserved CPUs"
            return None
        final = CPUKind.MIXED if cpu.kind is CPUKind.MIXED else kind
        shared = cpu.shared if final in (CPUKind.SHARED, CPUKind.MIXED) else 0
        if not supply.fits(pool, sliced, shared):
            return (
                f"the shared CPUs of {pool.name} and the pools around it cannot hold "
                f"{shared}m more" + (f" once {cpu_text(sliced)} go exclusive" if sliced else "")
            )
        return None

    def restore(
        self, request: Request, saved: SavedGrant, *, cold_start_until: float | None = None
    ) -> Grant:
        """Account a grant exactly as ``saved`` describes it; raises :class:`RestoreError`
        (nothing changed) when that is no longer possible: the pool is gone, the CPUs are not
        free or no longer of the right kind, or the shared CPUs cannot hold it."""
        pool = self.tree.by_name(saved.pool)
        if pool is None:
            raise RestoreError(f"pool {saved.pool!r} no longer exists")
        problem = self._cpu_problem(request, pool, saved.kind, saved.exclusive)
        if problem is not None:
            raise RestoreError(problem)
        cpu = request.cpu
        types = saved.memory_types or request.memory.types or self.default_types
        size = 0 if request.memory.preserve else request.memory.size
        zone: CPUSet | None = None
        if not request.memory.preserve:
            if saved.memory is None:
                raise RestoreError("no memory zone was saved")
            memory_request = self._memory_request(request, pool, types, size)
            assert memory_request is not None
            try:
                self.memory.restore(memory_request, saved.memory)
            except MemoryAllocationError as exc:
                raise RestoreError(str(exc)) from None
            zone = saved.memory
        kind = CPUKind.MIXED if cpu.kind is CPUKind.MIXED else saved.kind
        grant = self._grant(
            request,
            pool,
            kind,
            exclusive=saved.exclusive,
            shared=cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0,
            reserved=cpu.shared if kind is CPUKind.RESERVED else 0,
            zone=zone,
            types=types,
            size=size,
            cold_start_until=cold_start_until,
        )
        self._account(grant)
        return grant

    def _grant(
        self,
        request: Request,
        pool: Pool,
        kind: CPUKind,
        *,
        exclusive: CPUSet,
        shared: int,
        reserved: int,
        zone: CPUSet | None,
        types: frozenset[MemoryType],
        size: int,
        cold_start_until: float | None,
    ) -> Grant:
        """A grant of ``request`` in ``pool`` (a cold start only holds with a memory zone)."""
        return Grant(
            container_id=request.container_id,
            label=request.label,
            pool=pool,
            kind=kind,
            exclusive=exclusive,
            shared=shared,
            reserved=reserved,
            memory=zone,
            memory_types=types,
            memory_size=size,
            pin_cpu=request.pin_cpu,
            pin_memory=request.pin_memory,
            hide_hyperthreads=request.cpu.hide_hyperthreads,
            cold_start_until=cold_start_until if zone is not None else None,
            pool_isolated=self.resources.isolated,
            namespace=request.namespace,
            pod_id=request.pod_id,
        )

    def release(self, container_id: str) -> Grant | None:
        grant = self.grants.get(container_id)
        if grant is None:
            return None
        self._unaccount(grant)
        if grant.memory is not None:
            self._moved(self.memory.release(container_id), f"{grant.label} left")
        return grant

    def detach(self, container_id: str) -> Grant | None:
        """Take a grant out of the accounting for a resize, leaving its memory placed in the
        allocator: :meth:`commit` of the new plan replaces it, :meth:`reattach` puts it back
        exactly as it was."""
        grant = self.grants.get(container_id)
        if grant is None:
            return None
        self._unaccount(grant)
        if grant.memory is not None:
            self._detached[container_id] = grant
        return grant

    def reattach(self, grant: Grant) -> None:
        """Undo :meth:`detach` (the resize failed)."""
        self._detached.pop(grant.container_id, None)
        self._account(grant)

    def _account(self, grant: Grant) -> None:
        supply = self.supply
        pool = grant.pool
        cid = grant.container_id
        if grant.exclusive:
            if grant.exclusive.issubset(supply.isolated_cpus):
                supply.take_isolated(pool, grant.exclusive)
            else:
                supply.take_exclusive(pool, grant.exclusive, grant.label)
        if grant.kind in (CPUKind.SHARED, CPUKind.MIXED):
            supply.grant_shared(pool, cid, grant.shared, member=True)
        elif grant.kind is CPUKind.RESERVED:
            supply.grant_reserved(pool, cid, grant.reserved)
        supply.add_count(pool, 1)
        self.memory_granted += grant.memory_size if grant.memory is not None else 0
        self._usage(grant.memory, grant.memory_size)
        for key in _colocation_keys(grant):
            counts = self.colocated.setdefault(key, {})
            counts[pool.id] = counts.get(pool.id, 0) + 1
        self.grants[cid] = grant
        if grant.cold_start_until is not None:
            self.cold_starts[cid] = grant.cold_start_until
        self._cpu_dirty[cid] = None
        self._mem_dirty[cid] = None

    def _unaccount(self, grant: Grant) -> None:
        supply = self.supply
        pool = grant.pool
        cid = grant.container_id
        if grant.exclusive:
            if grant.exclusive.issubset(supply.isolated_cpus):
                supply.return_isolated(pool, grant.exclusive)
            else:
                supply.return_exclusive(pool, grant.exclusive, grant.label)
        if grant.kind in (CPUKind.SHARED, CPUKind.MIXED):
            supply.ungrant_shared(pool, cid, grant.shared)
        elif grant.kind is CPUKind.RESERVED:
            supply.ungrant_reserved(pool, cid, grant.reserved)
        supply.add_count(pool, -1)
        self.memory_granted -= grant.memory_size if grant.memory is not None else 0
        self._usage(grant.memory, -grant.memory_size)
        for key in _colocation_keys(grant):
            counts = self.colocated[key]
            if counts[pool.id] > 1:
                counts[pool.id] -= 1
            else:
                del counts[pool.id]
                if not counts:
                    del self.colocated[key]
        del self.grants[cid]
        self.cold_starts.pop(cid, None)
        self._cpu_dirty.pop(cid, None)
        self._mem_dirty.pop(cid, None)

    def _moved(self, moved: Mapping[str, CPUSet], cause: str) -> None:
        for owner, zone in moved.items():
            other = self.grants.get(owner)
            if other is not None:
                before = other.memory
                self._usage(before, -other.memory_size)
                other.memory = zone
                self._usage(zone, other.memory_size)
                self._mem_dirty[owner] = None
                how = "widened" if before is None or before.issubset(zone) else "narrowed"
                self._mem_causes[owner] = f"memory {how} to NUMA nodes {zone}: {cause}"

    def end_cold_start(self, container_id: str) -> bool:
        grant = self.grants.get(container_id)
        if grant is None or grant.cold_start_until is None:
            return False
        grant.cold_start_until = None
        self.cold_starts.pop(container_id, None)
        self._mem_dirty[container_id] = None
        self._mem_causes[container_id] = f"cold start ended: memory {grant.memory}"
        return True

    # ================================================================== results
    def cpus_of(self, grant: Grant) -> CPUSet | None:
        """The cpuset the container should have (``None``: leave it alone)."""
        kind = grant.kind
        if kind is CPUKind.PRESERVE:
            return None
        if kind in _EXCLUSIVE_KINDS:
            cpus = grant.exclusive
        elif kind is CPUKind.SHARED:
            cpus = self.supply.shared_cpus(grant.pool)
        elif kind is CPUKind.MIXED:
            cpus = grant.exclusive | self.supply.shared_cpus(grant.pool)
        else:
            cpus = self.supply.reserved_of(grant.pool)
        if grant.hide_hyperthreads:
            cpus = self._one_thread_per_core(cpus)
        return cpus

    def mems_of(self, grant: Grant) -> CPUSet | None:
        zone = grant.memory
        if zone is None:
            return None
        if grant.cold_start_until is not None:
            slow = zone & self.typed_nodes(frozenset({MemoryType.PMEM}))
            if slow:
                return slow
        return zone

    def _one_thread_per_core(self, cpus: CPUSet) -> CPUSet:
        cached = self._hide_cache.get(cpus)
        if cached is not None:
            return cached
        seen: set[tuple[int, int]] = set()
        keep: list[int] = []
        for cpu_id in cpus:
            cpu = self.machine.cpus[cpu_id]
            key = (cpu.package_id, cpu.core_id)
            if key not in seen:
                seen.add(key)
                keep.append(cpu_id)
        result = CPUSet.from_ids(keep)
        if len(self._hide_cache) > 256:
            self._hide_cache.clear()
        self._hide_cache[cpus] = result
        return result

    def flush(self) -> Flush:
        """What to set: cpus and mems of grants that are new, changed, or whose pool's shared
        set changed, the grants whose tags may be stale, and why the containers touched as a
        side effect (shared set or memory zone changed) were touched."""
        supply = self.supply
        pools = self.tree.pools
        reasons: dict[str, str] = {}
        for pool_id in supply.take_dirty():
            members = supply.members[pool_id]
            if not members:
                continue
            why = supply.why_changed(pools[pool_id])
            for cid in members:
                self._cpu_dirty[cid] = None
                reasons.setdefault(cid, why)
        supply.clear_causes()
        for cid, why in self._mem_causes.items():
            reasons[cid] = f"{reasons[cid]}; {why}" if cid in reasons else why
        self._mem_causes.clear()
        cpus: dict[str, CPUSet] = {}
        for cid in self._cpu_dirty:
            grant = self.grants.get(cid)
            if grant is not None and grant.pin_cpu:
                value = self.cpus_of(grant)
                if value is not None:
                    cpus[cid] = value
        mems: dict[str, CPUSet] = {}
        tagged: list[Grant] = []
        for cid in self._mem_dirty:
            grant = self.grants.get(cid)
            if grant is None:
                continue
            tagged.append(grant)
            if grant.pin_memory:
                value = self.mems_of(grant)
                if value is not None:
                    mems[cid] = value
        self._cpu_dirty.clear()
        self._mem_dirty.clear()
        return Flush(cpus, mems, tagged, reasons)

    def mark_all_dirty(self) -> None:
        for cid in self.grants:
            self._cpu_dirty[cid] = None
            self._mem_dirty[cid] = None


@attrs.frozen
class Flush:
    cpus: dict[str, CPUSet]
    mems: dict[str, CPUSet]
    tagged: list[Grant]
    reasons: dict[str, str] = attrs.field(factory=dict)
    """Why containers were touched as a side effect of other containers' changes."""


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


def cpu_text(cpus: CPUSet) -> str:
    """``CPU 3 is`` / ``CPUs 3-5 are``."""
    return f"CPU {cpus} is" if len(cpus) == 1 else f"CPUs {cpus} are"


def _colocation_keys(grant: Grant) -> tuple[tuple[str, str], ...]:
    keys = [("pod", grant.pod_id)] if grant.pod_id else []
    if grant.namespace:
        keys.append(("namespace", grant.namespace))
    return tuple(keys)


def _memory_refusal(request: Request, plan: Plan, exc: MemoryAllocationError) -> str:
    memory = plan.memory
    assert memory is not None
    text = (
        f"{request.label}: cannot get {human_bytes(memory.size)} of "
        f"{types_text(memory.types)} memory in {plan.pool.name} (NUMA nodes {memory.nodes}), "
        f"not even by widening: {exc.reason}"
    )
    if exc.nodes:
        text += f"; nodes {exc.nodes} hold {human_bytes(exc.capacity)}"
        if exc.demand is not None:
            text += f" and would have {human_bytes(exc.demand)} demanded"
    return text


def _hint_fits(hint: TopologyHint, pool: Pool) -> bool:
    return hint_score(hint, cpus=pool.cpus, nodes=pool.mems, sockets=pool.packages) >= 1.0
