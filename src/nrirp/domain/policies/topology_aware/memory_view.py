"""Memory as the pools see it: each pool's nodes and capacity per memory type, whether a
request's memory fits a pool without widening anyone, and the bytes granted in zones meeting
each pool's memory.

The facts of a pool (nodes, capacity) never change for a configuration and are memoized here;
the usage counters change with every grant and are kept by :meth:`MemoryView.count`.
"""

from __future__ import annotations

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryAllocator, MemoryRequest
from nrirp.domain.model import QOSClass
from nrirp.domain.policies.topology_aware.grants import Grant
from nrirp.domain.policies.topology_aware.pools import Pool, PoolTree
from nrirp.domain.policies.topology_aware.preferences import ROOTED_KINDS, Request
from nrirp.domain.policies.topology_aware.scoring import MemoryFit, limit_key
from nrirp.domain.topology import Machine, MemoryType

PMEM = frozenset({MemoryType.PMEM})


@attrs.frozen
class PoolMemory:
    """A pool's memory facts for requests of some memory types."""

    nodes: CPUSet
    """The nodes the pool's requests of these types are placed in."""
    count: int
    capacity: int
    typed_capacity: int
    has_types: bool
    """The nodes have memory of one of the types."""
    has_all_types: bool
    """The nodes have memory of every one of the types (the machine has)."""
    bound: int
    """The pool whose ``pool_touch`` counter bounds the usage of zones meeting ``nodes``: the
    nearest of the pool and its ancestors whose memory holds them."""


def accounted_size(request: Request) -> int:
    """The bytes a request's grant accounts (none when its memory is left alone)."""
    return 0 if request.memory.preserve else request.memory.size


def strict_nodes(request: Request) -> CPUSet | None:
    """The nodes strict topology hints limit ``request``'s memory to (``None``: no limit;
    reserved and preserved containers keep the root pool's)."""
    limits = request.hint_limits
    if limits is None or request.cpu.kind in ROOTED_KINDS:
        return None
    return limits.nodes


class MemoryView:
    """The memory facts and usage of every pool of a tree."""

    def __init__(self, machine: Machine, tree: PoolTree, memory: MemoryAllocator) -> None:
        self.machine = machine
        self.tree = tree
        self.memory = memory
        present = {n.memory_type for n in machine.nodes.values() if n.memory_bytes > 0}
        self.default_types: frozenset[MemoryType] = frozenset(
            present - {MemoryType.HBM}
        ) or frozenset(present)
        """Types of a request that names none: every type present but HBM (HBM if alone)."""
        self.pool_touch: list[int] = [0] * len(tree.pools)
        """Bytes of grants whose memory zone meets each pool's memory, by pool id."""
        self._typed_nodes: dict[frozenset[MemoryType], CPUSet] = {}
        self._capacity: dict[tuple[int, frozenset[MemoryType]], int] = {}
        self._pool_nodes: dict[tuple[int, frozenset[MemoryType]], CPUSet] = {}
        self._roomy: dict[tuple[frozenset[MemoryType], int], list[Pool]] = {}
        self._facts: dict[frozenset[MemoryType], list[PoolMemory]] = {}
        self._zone_pools: dict[int, tuple[int, ...]] = {}

    # ------------------------------------------------------------------ facts
    def types_of(self, request: Request) -> frozenset[MemoryType]:
        """The memory types ``request`` may use."""
        return request.memory.types or self.default_types

    def typed_nodes(self, types: frozenset[MemoryType]) -> CPUSet:
        """The machine's nodes of ``types``."""
        nodes = self._typed_nodes.get(types)
        if nodes is None:
            nodes = CPUSet.from_ids(
                n.id for n in self.machine.nodes.values() if n.memory_type in types
            )
            self._typed_nodes[types] = nodes
        return nodes

    def pool_nodes(self, pool: Pool, types: frozenset[MemoryType]) -> CPUSet:
        """The nodes a request of ``types`` gets in ``pool``: the pool's own nodes of those
        types, and for each type it has none of, the nodes of that type nearest to the pool
        (as the reference's memory allocator makes a zone cover every requested type)."""
        key = (pool.id, types)
        nodes = self._pool_nodes.get(key)
        if nodes is None:
            nodes = self._covering(pool, types)
            self._pool_nodes[key] = nodes
        return nodes

    def _covering(self, pool: Pool, types: frozenset[MemoryType]) -> CPUSet:
        managed = self.tree.top.mems
        nodes = pool.mems & self.typed_nodes(types)
        near = nodes or pool.mems
        distance = self.machine.distance
        for memory_type in MemoryType:
            if memory_type not in types:
                continue
            typed = managed & self.typed_nodes(frozenset({memory_type}))
            if not typed or nodes & typed:
                continue
            if not near:
                nodes = nodes | typed
                continue
            far = {n: min(distance(z, n) for z in near) for n in typed}
            closest = min(far.values())
            nodes = nodes | CPUSet.from_ids(n for n, d in far.items() if d == closest)
        return nodes or (managed & self.typed_nodes(types))

    def pool_capacity(self, pool: Pool, types: frozenset[MemoryType]) -> int:
        """Bytes of the pool's own memory of ``types``."""
        key = (pool.id, types)
        value = self._capacity.get(key)
        if value is None:
            value = self.memory.capacity(pool.mems & self.typed_nodes(types))
            self._capacity[key] = value
        return value

    def roomy(self, types: frozenset[MemoryType], size: int) -> list[Pool]:
        """The pools whose memory of ``types`` can hold ``size`` bytes at all."""
        key = (types, size)
        found = self._roomy.get(key)
        if found is None:
            if len(self._roomy) >= 1024:
                self._roomy.clear()
            found = [p for p in self.tree.pools if self.pool_capacity(p, types) >= size]
            self._roomy[key] = found
        return found

    def facts(self, types: frozenset[MemoryType]) -> list[PoolMemory]:
        """Memory facts of every pool for requests of ``types``, by pool id."""
        facts = self._facts.get(types)
        if facts is None:
            facts = []
            for pool in self.tree.pools:
                nodes = self.pool_nodes(pool, types)
                bound = next(
                    (p for p in (pool, *pool.ancestors) if nodes.issubset(p.mems)), self.tree.top
                )
                facts.append(
                    PoolMemory(
                        nodes=nodes,
                        count=len(nodes),
                        capacity=self.memory.capacity(nodes),
                        typed_capacity=self.pool_capacity(pool, types),
                        has_types=bool(nodes & self.typed_nodes(types)),
                        has_all_types=all(nodes & self.typed_nodes(frozenset({t})) for t in types),
                        bound=bound.id,
                    )
                )
            self._facts[types] = facts
        return facts

    def fit(
        self,
        request: Request,
        pool: Pool,
        types: frozenset[MemoryType],
        size: int,
        known: dict[int, tuple[bool, int, bool]],
    ) -> MemoryFit:
        """How ``size`` bytes of ``request`` fit ``pool`` now; ``known``: the fits found per
        node set during one plan."""
        facts = self.facts(types)[pool.id]
        burstable = request.qos is QOSClass.BURSTABLE
        covers = limit_key(burstable, request.memory.limit, facts.typed_capacity)
        has_types = facts.has_all_types if request.memory.types is not None else facts.has_types
        if not size:
            return MemoryFit(True, 0, has_types, covers)
        nodes = facts.nodes
        exact = strict_nodes(request) is None
        if not exact:
            nodes = self.request_nodes(request, pool, types)
        key = nodes.bits
        fit = known.get(key)
        if fit is None:
            # Sufficient for a fit without widening anyone: every zone meeting the nodes plus
            # the request fits in them (a set S holding the nodes N then has demand at most
            # that plus the demand of S - N, which fitted before).
            if exact and self.pool_touch[facts.bound] + size <= facts.capacity:
                fit = (True, facts.count, True)
            else:
                try:
                    offer = self.memory.offer(
                        MemoryRequest(
                            owner=request.container_id, size=size, nodes=nodes, types=types
                        )
                    )
                    fit = (offer.fits, len(offer.nodes), False)
                except MemoryAllocationError:
                    fit = (False, 1 << 30, False)
            known[key] = fit
        # a fast-path fit stays true while the usage meeting the nodes (counted by the bound
        # pool, whose memory holds them) stays within what the test allowed
        stable = fit[2]
        room = facts.capacity - size if stable else None
        return MemoryFit(fit[0], fit[1], has_types, covers, stable, room, facts.bound)

    def request_for(
        self, request: Request, pool: Pool, types: frozenset[MemoryType], size: int
    ) -> MemoryRequest | None:
        """What to ask the memory allocator for ``request`` in ``pool`` (``None``: leave the
        memory alone)."""
        if request.memory.preserve:
            return None
        return MemoryRequest(
            owner=request.container_id,
            size=size,
            nodes=self.request_nodes(request, pool, types),
            types=types,
        )

    def request_nodes(self, request: Request, pool: Pool, types: frozenset[MemoryType]) -> CPUSet:
        """The nodes ``request`` asks for in ``pool``: :meth:`pool_nodes`, within the strict
        topology hints' nodes when it has some there."""
        nodes = self.pool_nodes(pool, types)
        limits = strict_nodes(request)
        if limits is not None:
            return (nodes & limits) or nodes
        return nodes

    def mems_of(self, grant: Grant) -> CPUSet | None:
        """The mems the container should have (``None``: leave them alone): its zone, only
        its PMEM nodes during a cold start."""
        zone = grant.memory
        if zone is None:
            return None
        if grant.cold_start_until is not None:
            slow = zone & self.typed_nodes(PMEM)
            if slow:
                return slow
        return zone

    # ------------------------------------------------------------------ usage
    def count(self, zone: CPUSet | None, size: int) -> None:
        """Count ``size`` bytes (negative: uncount) in the pools whose memory meets ``zone``."""
        if zone is None or not size:
            return
        touch = self.pool_touch
        for pid in self._zone_pools_of(zone):
            touch[pid] += size

    def _zone_pools_of(self, zone: CPUSet) -> tuple[int, ...]:
        """The pools whose memory meets ``zone``, by id."""
        bits = zone.bits
        found = self._zone_pools.get(bits)
        if found is None:
            found = tuple(p.id for p in self.tree.pools if bits & p.mems.bits)
            self._zone_pools[bits] = found
        return found
