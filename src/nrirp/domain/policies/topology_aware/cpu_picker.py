"""CPUs for a grant: picking exclusive CPUs in a pool, checking CPUs a grant keeps (a resize,
a restart), and the cpuset a grant's container gets."""

from __future__ import annotations

from nrirp.domain.config import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.topology_aware.grants import Grant
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import (
    ROOTED_KINDS,
    CPUKind,
    CPURequest,
    Request,
)
from nrirp.domain.policies.topology_aware.supply import Supply, plural
from nrirp.domain.topology import Machine

EXCLUSIVE_KINDS = (CPUKind.EXCLUSIVE, CPUKind.ISOLATED)


def compatible_kinds(kind: CPUKind) -> tuple[CPUKind, ...]:
    """Kinds a grant may have and still serve a request of ``kind`` (a reserved request
    that fell back to the shared CPUs keeps its shared grant)."""
    if kind is CPUKind.EXCLUSIVE:
        return EXCLUSIVE_KINDS
    if kind is CPUKind.MIXED:
        return (CPUKind.MIXED, *EXCLUSIVE_KINDS)
    if kind is CPUKind.RESERVED:
        return (CPUKind.RESERVED, CPUKind.SHARED)
    return (kind,)


def cpu_text(cpus: CPUSet) -> str:
    """``CPU 3 is`` / ``CPUs 3-5 are``."""
    return f"CPU {cpus} is" if len(cpus) == 1 else f"CPUs {cpus} are"


class CPUPicker:
    """Exclusive CPUs out of a pool's supply, and the cpusets grants get."""

    def __init__(self, machine: Machine, supply: Supply, cpu_allocator: CPUAllocator) -> None:
        self.machine = machine
        self.supply = supply
        self.cpu_allocator = cpu_allocator
        self._one_per_core: dict[CPUSet, CPUSet] = {}

    # ------------------------------------------------------------------ picking
    def pick(self, available: CPUSet, cpu: CPURequest, hinted: CPUSet) -> CPUSet:
        """The ``cpu.full`` exclusive CPUs of ``cpu`` out of ``available`` (empty when they
        are not there). With hide-hyperthreads too: the grant holds the CPUs it asked for
        (the scheduler accounts those) and its cpuset shows one thread of each of their
        cores (:meth:`cpus_of`)."""
        return self._pick_threads(available, cpu.full, cpu.priority, hinted)

    def pick_sharable(
        self, pool: Pool, cpu: CPURequest, hinted: CPUSet, *, within: CPUSet | None = None
    ) -> CPUSet:
        """Exclusive CPUs from the pool's sharable set that leave every pool they come from
        enough CPUs for its shared grants.

        When a pick would leave a descendant with too few CPUs for its shared containers,
        that descendant keeps what it needs (its CPUs the pick left, plus the ones the CPU
        allocator values least among those picked there) and the pick is made again without
        them: a request that fits the pool as a whole is served from several busy children.
        ``within``: the CPUs the pick is limited to (strict topology hints).
        """
        supply = self.supply
        sharable = supply.sharable[pool.id]
        if within is not None:
            sharable = sharable & within
        kept = CPUSet()
        while True:
            picked = self.pick(sharable - kept, cpu, hinted)
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
            before = kept
            for p in sorted(below, key=lambda p: -p.depth):  # the deepest first
                own = supply.sharable[p.id]
                taken = (picked - kept) & own
                need = -(-supply.shared_granted[p.id] // 1000) - len(own - taken)
                if need > 0:
                    back = self.cpu_allocator.release(taken, need, priority=cpu.priority)
                    kept = kept | (own - taken) | back
            if kept == before:
                return CPUSet()

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

    # ------------------------------------------------------------------ checking
    def problem(self, request: Request, pool: Pool, kind: CPUKind, exclusive: CPUSet) -> str | None:
        """Why ``request`` cannot be served in ``pool`` with a grant of ``kind`` holding
        ``exclusive`` (free, not accounted) now; ``None`` when it can."""
        cpu = request.cpu
        supply = self.supply
        if kind not in compatible_kinds(cpu.kind):
            return f"kind {kind.value} does not suit the request now"
        if len(exclusive) != cpu.full:
            return f"{plural(len(exclusive), 'exclusive CPU')}, {cpu.full} wanted"
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
        if kind in ROOTED_KINDS and pool.parent is not None:
            return f"{kind.value} containers live in the root pool, not in {pool.name}"
        if kind is CPUKind.RESERVED:
            if not supply.reserved[pool.id]:
                return f"{pool.name} has no reserved CPUs"
            left = supply.allocatable_reserved(pool)
            if left < cpu.shared:
                return f"the reserved CPUs have {max(left, 0)}m left, {cpu.shared}m asked"
            return None
        final = CPUKind.MIXED if cpu.kind is CPUKind.MIXED else kind
        shared = cpu.shared if final in (CPUKind.SHARED, CPUKind.MIXED) else 0
        if not supply.fits(pool, sliced, shared):
            return (
                f"the shared CPUs of {pool.name} and the pools around it cannot hold "
                f"{shared}m more" + (f" once {cpu_text(sliced)} go exclusive" if sliced else "")
            )
        return None

    # ------------------------------------------------------------------ results
    def cpus_of(self, grant: Grant) -> CPUSet | None:
        """The cpuset the container should have (``None``: leave it alone)."""
        kind = grant.kind
        if kind is CPUKind.PRESERVE:
            return None
        if kind in EXCLUSIVE_KINDS:
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

    def _one_thread_per_core(self, cpus: CPUSet) -> CPUSet:
        cached = self._one_per_core.get(cpus)
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
        if len(self._one_per_core) > 256:
            self._one_per_core.clear()
        self._one_per_core[cpus] = result
        return result
