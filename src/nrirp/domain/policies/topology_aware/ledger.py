"""The ledger: the grants held, what they take from the pools' CPU supply and memory, and
which containers' cpus and mems may have changed since the last :meth:`Ledger.flush`.

Committing a plan, restoring a saved grant and releasing one keep the supply, the memory
allocator, the pools' memory usage and the colocation counts in step with ``grants``. A commit
or restore that raises changes nothing; so does a resize whose new grant is not committed
(:meth:`Ledger.resizing`). Containers moved as a side effect (their pool's shared set or their
memory zone changed) are reported at the next flush with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractContextManager

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, human_bytes
from nrirp.domain.policies.topology_aware.cpu_picker import CPUPicker
from nrirp.domain.policies.topology_aware.grants import Grant, RestoreError, types_text
from nrirp.domain.policies.topology_aware.memory_view import MemoryView
from nrirp.domain.policies.topology_aware.planner import Plan
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import NORMAL_KINDS, CPUKind
from nrirp.domain.policies.topology_aware.resources import ManagedResources
from nrirp.domain.policies.topology_aware.supply import Supply
from nrirp.domain.policy import PolicyError


@attrs.frozen
class Flush:
    """What changed since the last flush."""

    cpus: dict[str, CPUSet]
    mems: dict[str, CPUSet]
    tagged: list[Grant]
    reasons: dict[str, str] = attrs.field(factory=dict)
    """Why containers were touched as a side effect of other containers' changes."""


class Ledger:
    """The grants of one configuration of the policy and their accounting."""

    def __init__(
        self, resources: ManagedResources, supply: Supply, view: MemoryView, cpus: CPUPicker
    ) -> None:
        self.resources = resources
        self.supply = supply
        self.view = view
        self.memory = view.memory
        self.cpus = cpus
        self.grants: dict[str, Grant] = {}
        self.cold_starts: dict[str, float] = {}
        """Container id -> end of its cold start, for the grants in one (kept with ``grants``)."""
        self.memory_granted = 0
        self.colocated: dict[tuple[str, str], dict[int, int]] = {}
        """Grants per pool id of each ``("pod", pod id)`` and ``("namespace", name)``."""
        self._detached: dict[str, Grant] = {}
        """Grants out for a resize (:meth:`resizing`) that no commit has replaced yet."""
        self._cpu_dirty: dict[str, None] = {}
        self._mem_dirty: dict[str, None] = {}
        self._mem_causes: dict[str, str] = {}

    # ------------------------------------------------------------------ changes
    def commit(self, plan: Plan, *, cold_start_until: float | None = None) -> Grant:
        """Carry out ``plan``; raises :class:`PolicyError` (nothing changed) when memory fails.

        A detached grant of the same container (:meth:`resizing`) is replaced: its memory is
        re-placed by the allocator, which keeps the old placement if the new one fails."""
        request = plan.request
        cid = request.container_id
        size = plan.memory.size if plan.memory is not None else 0
        limit = self.resources.memory_limit
        if limit is not None and size and self.memory_granted + size > limit:
            raise PolicyError(
                f"{human_bytes(size)} of memory would exceed the policy's "
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
                raise PolicyError(_memory_refusal(plan, exc)) from None
        elif detached is not None and detached.memory is not None:
            moved = self.memory.release(cid)
        self._detached.pop(cid, None)
        grant = self._grant(plan, zone, cold_start_until)
        self._account(grant)
        if moved:  # the cause names a cpuset: written only when some zone moved
            nodes = plan.memory.nodes if plan.memory is not None else None
            self._moved(moved, f"{request.label} needs memory in NUMA nodes {nodes}")
        return grant

    def restore(
        self, plan: Plan, zone: CPUSet | None, *, cold_start_until: float | None = None
    ) -> Grant:
        """Account ``plan`` (made from a saved grant) with its memory in the saved ``zone``;
        raises :class:`RestoreError` (nothing changed) when the zone cannot be restored."""
        if plan.memory is not None:
            if zone is None:
                raise RestoreError("no memory zone was saved")
            try:
                self.memory.restore(plan.memory, zone)
            except MemoryAllocationError as exc:
                raise RestoreError(str(exc)) from None
        else:
            zone = None
        grant = self._grant(plan, zone, cold_start_until)
        self._account(grant)
        return grant

    def release(self, container_id: str) -> Grant | None:
        """Drop the container's grant (others' memory may move back)."""
        grant = self.grants.get(container_id)
        if grant is None:
            return None
        self._unaccount(grant)
        if grant.memory is not None:
            self._moved(self.memory.release(container_id), f"{grant.label} left")
        return grant

    def resizing(self, container_id: str) -> AbstractContextManager[Grant | None]:
        """Give the container's current grant (``None``: it has none) to a block that plans
        and commits its new one. Meanwhile the grant is out of the accounting, its memory
        still placed (a commit re-places it); unless the block commits a new grant, the old
        one is put back exactly as it was, whether the block raised or not."""
        return _Resizing(self, container_id)

    def _detach(self, container_id: str) -> Grant | None:
        old = self.grants.get(container_id)
        if old is not None:
            self._unaccount(old)
            self._detached[container_id] = old
        return old

    def _put_back(self, old: Grant) -> None:
        """Account ``old`` again unless a commit replaced it."""
        if self._detached.pop(old.container_id, None) is not None:
            self._account(old)

    def end_cold_start(self, container_id: str) -> bool:
        """End the container's cold start (its mems widen to its whole zone)."""
        grant = self.grants.get(container_id)
        if grant is None or grant.cold_start_until is None:
            return False
        grant.cold_start_until = None
        self.cold_starts.pop(container_id, None)
        self._mem_dirty[container_id] = None
        self._mem_causes[container_id] = f"cold start ended: memory {grant.memory}"
        return True

    def _grant(self, plan: Plan, zone: CPUSet | None, cold_start_until: float | None) -> Grant:
        """The grant of ``plan`` with memory in ``zone`` (a cold start only holds with one)."""
        request = plan.request
        return Grant(
            container_id=request.container_id,
            label=request.label,
            pool=plan.pool,
            kind=plan.kind,
            exclusive=plan.exclusive,
            shared=plan.shared,
            reserved=plan.reserved,
            memory=zone,
            memory_types=plan.types,
            memory_size=plan.memory.size if plan.memory is not None else 0,
            pin_cpu=request.pin_cpu,
            pin_memory=request.pin_memory,
            hide_hyperthreads=request.cpu.hide_hyperthreads,
            cold_start_until=cold_start_until if zone is not None else None,
            pool_isolated=self.resources.isolated,
            namespace=request.namespace,
            pod_id=request.pod_id,
        )

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
        supply.add_count(pool, 1, normal=grant.kind in NORMAL_KINDS)
        self.memory_granted += grant.memory_size if grant.memory is not None else 0
        self.view.count(grant.memory, grant.memory_size)
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
        supply.add_count(pool, -1, normal=grant.kind in NORMAL_KINDS)
        self.memory_granted -= grant.memory_size if grant.memory is not None else 0
        self.view.count(grant.memory, -grant.memory_size)
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
        """Follow the memory allocator's moves of other grants' zones."""
        view = self.view
        for owner, zone in moved.items():
            other = self.grants.get(owner)
            if other is not None:
                before = other.memory
                view.count(before, -other.memory_size)
                other.memory = zone
                view.count(zone, other.memory_size)
                self._mem_dirty[owner] = None
                how = "widened" if before is None or before.issubset(zone) else "narrowed"
                self._mem_causes[owner] = f"memory {how} to NUMA nodes {zone}: {cause}"

    # ------------------------------------------------------------------ queries
    def colocated_pools(self, key: tuple[str, str], weight: int) -> list[tuple[Pool, int]]:
        """``(pool, weight * grants there)`` for the grants of a pod or namespace (``key``)."""
        counts = self.colocated.get(key)
        if not counts:
            return []
        pools = self.supply.tree.pools
        return [(pools[pid], weight * n) for pid, n in counts.items()]

    def flush(self) -> Flush:
        """What to set: cpus and mems of grants that are new, changed, or whose pool's shared
        set changed, the grants whose tags may be stale, and why the containers touched as a
        side effect (shared set or memory zone changed) were touched."""
        supply = self.supply
        pools = supply.tree.pools
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
                value = self.cpus.cpus_of(grant)
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
                value = self.view.mems_of(grant)
                if value is not None:
                    mems[cid] = value
        self._cpu_dirty.clear()
        self._mem_dirty.clear()
        return Flush(cpus, mems, tagged, reasons)

    def mark_all_dirty(self) -> None:
        """Report every grant at the next flush (a new configuration)."""
        for cid in self.grants:
            self._cpu_dirty[cid] = None
            self._mem_dirty[cid] = None


class _Resizing:
    """The guard of :meth:`Ledger.resizing` (a class, not a generator: every create runs
    one)."""

    __slots__ = ("_container_id", "_ledger", "_old")

    def __init__(self, ledger: Ledger, container_id: str) -> None:
        self._ledger = ledger
        self._container_id = container_id
        self._old: Grant | None = None

    def __enter__(self) -> Grant | None:
        self._old = self._ledger._detach(self._container_id)
        return self._old

    def __exit__(self, *exc_info: object) -> None:
        if self._old is not None:
            self._ledger._put_back(self._old)


def _colocation_keys(grant: Grant) -> tuple[tuple[str, str], ...]:
    keys = [("pod", grant.pod_id)] if grant.pod_id else []
    if grant.namespace:
        keys.append(("namespace", grant.namespace))
    return tuple(keys)


def _memory_refusal(plan: Plan, exc: MemoryAllocationError) -> str:
    memory = plan.memory
    assert memory is not None
    text = (
        f"cannot get {human_bytes(memory.size)} of "
        f"{types_text(memory.types)} memory in {plan.pool.name} (NUMA nodes {memory.nodes}), "
        f"not even by widening: {exc.reason}"
    )
    if exc.nodes:
        text += f"; nodes {exc.nodes} hold {human_bytes(exc.capacity)}"
        if exc.demand is not None:
            text += f" and would have {human_bytes(exc.demand)} demanded"
    return text
