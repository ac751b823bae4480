"""The allocation engine: pools, supply, memory zones and grants, without the cache.

The engine plans a request (nothing changes), commits a plan, releases and restores grants,
and reports at :meth:`Allocations.flush` the cpus and mems of exactly the containers whose
values may have changed since the last flush. A plan or commit that raises leaves the engine
as it was.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from nrirp.domain.config import CPUPriority
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryAllocator, MemoryRequest
from nrirp.domain.memalloc import human_bytes as _human_bytes
from nrirp.domain.policies.topology_aware.grants import Grant, SavedGrant, types_text
from nrirp.domain.policies.topology_aware.pools import Pool, PoolTree, build_pool_tree
from nrirp.domain.policies.topology_aware.preferences import CPUKind, Request
from nrirp.domain.policies.topology_aware.resources import ManagedResources, resolve_resources
from nrirp.domain.policies.topology_aware.scoring import (
    MemoryFit,
    Score,
    rank_pools,
    want_priority,
)
from nrirp.domain.policies.topology_aware.supply import Supply
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
    size: int
    capacity: int
    typed_capacity: int
    has_types: bool


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
        self.grants: dict[str, Grant] = {}
        self.memory_granted = 0
        self._cpu_dirty: dict[str, None] = {}
        self._mem_dirty: dict[str, None] = {}
        self._hide_cache: dict[CPUSet, CPUSet] = {}
        self._all_free = 0
        self._pool_memory_cache: dict[tuple[int, frozenset[MemoryType]], _PoolMemory] = {}
        self.pool_usage: list[int] = [0] * len(self.tree.pools)
        """Bytes of grants whose memory zone lies within each pool's memory, by pool id."""

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
            roomy = [p for p in pools if self.pool_capacity(p, types) >= size]
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

        top = self.tree.top.mems
        self._all_free = self.memory.capacity(top) - self.memory.usage(top)

        def memory_fit(pool: Pool) -> MemoryFit:
            return self._memory_fit(request, pool, types, size)

        scores = rank_pools(
            pools,
            request.cpu,
            self.supply,
            weighted=weighted,
            hints=hints,
            memory=memory_fit,
            priority_cpus=priority_cpus,
        )
        if prefer is not None:
            preferred = [s for s in scores if s.pool is prefer and s.viable]
            scores = preferred + [s for s in scores if s not in preferred]
        hinted = CPUSet().union(*(h.cpus for h in hints)) if request.pick_by_hints else CPUSet()
        for score in scores:
            if not score.viable:
                continue
            plan = self._realize(request, score, types, size, hinted)
            if plan is not None:
                return plan
        raise PolicyError(self._shortage(request, scores))

    def _pool_memory(self, pool: Pool, types: frozenset[MemoryType]) -> _PoolMemory:
        key = (pool.id, types)
        facts = self._pool_memory_cache.get(key)
        if facts is None:
            nodes = self.pool_nodes(pool, types)
            facts = _PoolMemory(
                nodes=nodes,
                size=len(nodes),
                capacity=self.memory.capacity(nodes),
                typed_capacity=self.pool_capacity(pool, types),
                has_types=bool(pool.mems & self.typed_nodes(types)),
            )
            self._pool_memory_cache[key] = facts
        return facts

    def _memory_fit(
        self, request: Request, pool: Pool, types: frozenset[MemoryType], size: int
    ) -> MemoryFit:
        facts = self._pool_memory(pool, types)
        limit = request.memory.limit
        covers = True
        if request.cpu.burstable and limit is not None:
            covers = facts.typed_capacity >= limit
        if not size:
            return MemoryFit(True, True, 0, 0, facts.has_types, covers)
        free = facts.capacity - self.pool_usage[pool.id]
        if free >= size and self._all_free >= size:
            # room in the pool and on the machine: the allocator would not widen anyone
            return MemoryFit(True, True, facts.size, free - size, facts.has_types, covers)
        try:
            offer = self.memory.offer(
                MemoryRequest(owner=request.container_id, size=size, nodes=facts.nodes, types=types)
            )
        except MemoryAllocationError:
            return MemoryFit(True, False, 1 << 30, 0, facts.has_types, covers)
        return MemoryFit(
            True, offer.fits, len(offer.nodes), offer.headroom, facts.has_types, covers
        )

    def _usage(self, zone: CPUSet | None, size: int) -> None:
        """Count ``size`` bytes (negative: uncount) in every pool whose memory holds ``zone``."""
        if zone is None or not size:
            return
        bits = zone.bits
        usage = self.pool_usage
        for pool in self.tree.pools:
            if bits & ~pool.mems.bits == 0:
                usage[pool.id] += size

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
                exclusive = self._pick(
                    self.supply.isolated[pool.id], cpu.full, cpu.priority, hinted
                )
                if kind is CPUKind.EXCLUSIVE:
                    kind = CPUKind.ISOLATED
            elif not cpu.require_isolated:
                exclusive = self._pick_sharable(pool, cpu.full, cpu.priority, hinted)
            if len(exclusive) != cpu.full:
                return None
        shared = cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0
        reserved = cpu.shared if kind is CPUKind.RESERVED else 0
        memory = None
        if not request.memory.preserve:
            memory = MemoryRequest(
                owner=request.container_id,
                size=size,
                nodes=self.pool_nodes(pool, types),
                types=types,
            )
        return Plan(request, pool, kind, exclusive, shared, reserved, memory, types)

    def _pick(self, available: CPUSet, count: int, priority: CPUPriority, hinted: CPUSet) -> CPUSet:
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

    def _pick_sharable(
        self, pool: Pool, count: int, priority: CPUPriority, hinted: CPUSet
    ) -> CPUSet:
        """Exclusive CPUs from the pool's sharable set that leave every pool they come from
        enough CPUs for its shared grants (steering around full descendants)."""
        supply = self.supply
        excluded = CPUSet()
        for _ in range(len(pool.descendants) + 1):
            picked = self._pick(supply.sharable[pool.id] - excluded, count, priority, hinted)
            if not picked:
                return CPUSet()
            over = supply.overcommitted_by(pool, picked)
            if not over:
                return picked
            below = [p for p in over if p.id != pool.id and p not in pool.ancestors]
            if len(below) != len(over):
                return CPUSet()
            for p in below:
                excluded = excluded | supply.sharable[p.id]
        return CPUSet()

    def _shortage(self, request: Request, scores: Sequence[Score]) -> str:
        cpu = request.cpu
        best = scores[0] if scores else None
        if best is None:
            return f"{request.label}: no pool can take it"
        pool = best.pool
        supply = self.supply
        sharable = len(supply.sharable[pool.id])
        used = supply.shared_granted[pool.id]
        if cpu.require_isolated:
            return (
                f"{request.label}: no pool has {cpu.full} free isolated CPUs "
                f"(require-isolated-cpus): best {pool.name} has "
                f"{len(supply.isolated[pool.id])} of {len(supply.isolated_all[pool.id])}"
            )
        if cpu.full:
            return (
                f"{request.label}: no pool has {cpu.full} exclusive CPUs"
                + (f" and {cpu.shared}m shared CPU" if cpu.shared else "")
                + f": best {pool.name} has {sharable} sharable CPUs of which {used}m are used "
                f"by shared containers"
                + (
                    f" ({supply.allocatable_shared(pool)}m allocatable along its path)"
                    if supply.allocatable_shared(pool) < 1000 * sharable - used
                    else ""
                )
            )
        return (
            f"{request.label}: no pool has {cpu.shared}m shared CPU: best {pool.name} has "
            f"{max(supply.allocatable_shared(pool), 0)}m free ({sharable} sharable CPUs, "
            f"{used}m used by shared containers)"
        )

    # ================================================================== changes
    def commit(self, plan: Plan, *, cold_start_until: float | None = None) -> Grant:
        """Carry out ``plan``; raises :class:`PolicyError` (nothing changed) when memory fails."""
        request = plan.request
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
        if plan.memory is not None:
            try:
                zone, moved = self.memory.allocate(plan.memory)
            except MemoryAllocationError as exc:
                raise PolicyError(f"{request.label}: {exc}") from None
        grant = Grant(
            container_id=request.container_id,
            label=request.label,
            pool=plan.pool,
            kind=plan.kind,
            exclusive=plan.exclusive,
            shared=plan.shared,
            reserved=plan.reserved,
            memory=zone,
            memory_types=plan.types,
            memory_size=size,
            pin_cpu=request.pin_cpu,
            pin_memory=request.pin_memory,
            hide_hyperthreads=request.cpu.hide_hyperthreads,
            cold_start_until=cold_start_until if zone is not None else None,
            pool_isolated=self.resources.isolated,
        )
        self._account(grant)
        self._moved(moved)
        return grant

    def restore(
        self, request: Request, saved: SavedGrant, *, cold_start_until: float | None = None
    ) -> Grant:
        """Account a grant exactly as ``saved`` describes it; raises :class:`RestoreError`
        (nothing changed) when that is no longer possible."""
        pool = self.tree.by_name(saved.pool)
        if pool is None:
            raise RestoreError(f"pool {saved.pool!r} no longer exists")
        cpu = request.cpu
        expected = {
            CPUKind.EXCLUSIVE: _EXCLUSIVE_KINDS,
            CPUKind.MIXED: (CPUKind.MIXED, *_EXCLUSIVE_KINDS),
        }.get(cpu.kind, (cpu.kind,))
        if saved.kind not in expected:
            raise RestoreError(f"kind {saved.kind.value} does not suit the request now")
        if len(saved.exclusive) != cpu.full:
            raise RestoreError(f"{len(saved.exclusive)} exclusive CPUs, {cpu.full} wanted")
        if saved.exclusive:
            from_isolated = saved.exclusive.issubset(self.supply.isolated[pool.id])
            from_sharable = saved.exclusive.issubset(self.supply.sharable[pool.id])
            if saved.kind is CPUKind.ISOLATED and cpu.kind is CPUKind.MIXED:
                if not from_isolated:
                    raise RestoreError(f"isolated CPUs {saved.exclusive} are not free")
            elif saved.kind is CPUKind.ISOLATED and not from_isolated:
                raise RestoreError(f"isolated CPUs {saved.exclusive} are not free")
            if saved.kind is not CPUKind.ISOLATED and not (from_sharable or from_isolated):
                raise RestoreError(f"exclusive CPUs {saved.exclusive} are not free")
            if (
                saved.kind is CPUKind.EXCLUSIVE
                and cpu.kind is not CPUKind.MIXED
                and not from_sharable
            ):
                raise RestoreError(f"exclusive CPUs {saved.exclusive} are not sharable")
        types = saved.memory_types or request.memory.types or self.default_types
        size = 0 if request.memory.preserve else request.memory.size
        zone: CPUSet | None = None
        if not request.memory.preserve:
            if saved.memory is None:
                raise RestoreError("no memory zone was saved")
            memory_request = MemoryRequest(
                owner=request.container_id,
                size=size,
                nodes=self.pool_nodes(pool, types),
                types=types,
            )
            try:
                self.memory.restore(memory_request, saved.memory)
            except MemoryAllocationError as exc:
                raise RestoreError(str(exc)) from None
            zone = saved.memory
        kind = CPUKind.MIXED if cpu.kind is CPUKind.MIXED else saved.kind
        grant = Grant(
            container_id=request.container_id,
            label=request.label,
            pool=pool,
            kind=kind,
            exclusive=saved.exclusive,
            shared=cpu.shared if kind in (CPUKind.SHARED, CPUKind.MIXED) else 0,
            reserved=cpu.shared if kind is CPUKind.RESERVED else 0,
            memory=zone,
            memory_types=types,
            memory_size=size,
            pin_cpu=request.pin_cpu,
            pin_memory=request.pin_memory,
            hide_hyperthreads=request.cpu.hide_hyperthreads,
            cold_start_until=cold_start_until if zone is not None else None,
            pool_isolated=self.resources.isolated,
        )
        self._account(grant)
        return grant

    def release(self, container_id: str) -> Grant | None:
        grant = self.grants.get(container_id)
        if grant is None:
            return None
        self._unaccount(grant)
        if grant.memory is not None:
            self._moved(self.memory.release(container_id))
        return grant

    def reinstate(self, grant: Grant) -> None:
        """Put back a grant just released (undo of :meth:`release`)."""
        if grant.memory is not None:
            request = MemoryRequest(
                owner=grant.container_id,
                size=grant.memory_size,
                nodes=self.pool_nodes(grant.pool, grant.memory_types),
                types=grant.memory_types,
            )
            self.memory.restore(request, grant.memory)
        self._account(grant)

    def _account(self, grant: Grant) -> None:
        supply = self.supply
        pool = grant.pool
        cid = grant.container_id
        if grant.exclusive:
            if grant.exclusive.issubset(supply.isolated_cpus):
                supply.take_isolated(pool, grant.exclusive)
            else:
                supply.take_exclusive(pool, grant.exclusive)
        if grant.kind in (CPUKind.SHARED, CPUKind.MIXED):
            supply.grant_shared(pool, cid, grant.shared, member=True)
        elif grant.kind is CPUKind.RESERVED:
            supply.grant_reserved(pool, cid, grant.reserved)
        supply.count[pool.id] += 1
        self.memory_granted += grant.memory_size if grant.memory is not None else 0
        self._usage(grant.memory, grant.memory_size)
        self.grants[cid] = grant
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
                supply.return_exclusive(pool, grant.exclusive)
        if grant.kind in (CPUKind.SHARED, CPUKind.MIXED):
            supply.ungrant_shared(pool, cid, grant.shared)
        elif grant.kind is CPUKind.RESERVED:
            supply.ungrant_reserved(pool, cid, grant.reserved)
        supply.count[pool.id] -= 1
        self.memory_granted -= grant.memory_size if grant.memory is not None else 0
        self._usage(grant.memory, -grant.memory_size)
        del self.grants[cid]
        self._cpu_dirty.pop(cid, None)
        self._mem_dirty.pop(cid, None)

    def _moved(self, moved: Mapping[str, CPUSet]) -> None:
        for owner, zone in moved.items():
            other = self.grants.get(owner)
            if other is not None:
                self._usage(other.memory, -other.memory_size)
                other.memory = zone
                self._usage(zone, other.memory_size)
                self._mem_dirty[owner] = None

    def end_cold_start(self, container_id: str) -> bool:
        grant = self.grants.get(container_id)
        if grant is None or grant.cold_start_until is None:
            return False
        grant.cold_start_until = None
        self._mem_dirty[container_id] = None
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
        set changed, and the grants whose tags may be stale."""
        supply = self.supply
        for pool_id in supply.take_dirty():
            for cid in supply.members[pool_id]:
                self._cpu_dirty[cid] = None
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
        return Flush(cpus, mems, tagged)

    def mark_all_dirty(self) -> None:
        for cid in self.grants:
            self._cpu_dirty[cid] = None
            self._mem_dirty[cid] = None


@attrs.frozen
class Flush:
    cpus: dict[str, CPUSet]
    mems: dict[str, CPUSet]
    tagged: list[Grant]


def _hint_fits(hint: TopologyHint, pool: Pool) -> bool:
    return hint_score(hint, cpus=pool.cpus, nodes=pool.mems, sockets=pool.packages) >= 1.0
