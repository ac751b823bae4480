"""The allocation engine of one configuration, as the policy uses it: pools, supply and memory
built from the machine, with the planner (``planner.py``) and the ledger of grants
(``ledger.py``) over the pools' memory facts (``memory_view.py``) and CPU picking
(``cpu_picker.py``). No cache: the policy pushes :meth:`Allocations.flush` into it.

A plan changes nothing; a commit or restore that raises leaves the engine as it was, and so
does a resize that commits no new grant (:meth:`Allocations.resizing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager

from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocator
from nrirp.domain.policies.topology_aware.cpu_picker import CPUPicker
from nrirp.domain.policies.topology_aware.grants import Grant, SavedGrant
from nrirp.domain.policies.topology_aware.ledger import Flush, Ledger
from nrirp.domain.policies.topology_aware.memory_view import MemoryView
from nrirp.domain.policies.topology_aware.planner import Plan, Planner
from nrirp.domain.policies.topology_aware.pools import Pool, PoolTree, build_pool_tree
from nrirp.domain.policies.topology_aware.preferences import Request
from nrirp.domain.policies.topology_aware.resources import ManagedResources, resolve_resources
from nrirp.domain.policies.topology_aware.supply import Supply
from nrirp.domain.policy import PolicyError
from nrirp.domain.topology import Machine, MemoryType
from nrirp.domain.topology.hints import TopologyHint


class Allocations:
    """Pools and grants for one configuration of the policy."""

    def __init__(
        self, machine: Machine, spec: TopologyAwarePolicySpec, cpu_allocator: CPUAllocator
    ) -> None:
        self.machine = machine
        self.spec = spec
        self.resources: ManagedResources = resolve_resources(machine, spec, cpu_allocator)
        try:
            self.tree: PoolTree = build_pool_tree(machine, self.resources.available)
        except ValueError as exc:
            raise PolicyError(str(exc)) from None
        self.supply = Supply(self.tree, self.resources.reserved, self.resources.isolated)
        self.memory = MemoryAllocator(machine, nodes=self.tree.top.mems)
        self.memory_view = MemoryView(machine, self.tree, self.memory)
        self.cpus = CPUPicker(machine, self.supply, cpu_allocator)
        self.planner = Planner(
            self.tree, self.supply, self.memory_view, self.cpus, cpu_allocator.priorities()
        )
        self.ledger = Ledger(self.resources, self.supply, self.memory_view, self.cpus)
        # the ledger's tables (never rebound), read on most operations: no property between
        self.grants: Mapping[str, Grant] = self.ledger.grants
        """The grants by container id."""
        self.cold_starts: Mapping[str, float] = self.ledger.cold_starts
        """Container id -> end of its cold start."""
        self.colocated: Mapping[tuple[str, str], Mapping[int, int]] = self.ledger.colocated
        """Grants per pool id of each ``("pod", pod id)`` and ``("namespace", name)``."""

    # ------------------------------------------------------------------ grants
    @property
    def memory_granted(self) -> int:
        """Bytes of memory granted in total."""
        return self.ledger.memory_granted

    def colocated_pools(self, key: tuple[str, str], weight: int) -> list[tuple[Pool, int]]:
        """``(pool, weight * grants there)`` for the grants of a pod or namespace (``key``)."""
        return self.ledger.colocated_pools(key, weight)

    def typed_nodes(self, types: frozenset[MemoryType]) -> CPUSet:
        """The machine's memory nodes of ``types``."""
        return self.memory_view.typed_nodes(types)

    # ------------------------------------------------------------------ decisions
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
        ``class_cpus``: where its CPU class takes effect, when not everywhere."""
        return self.planner.plan(
            request, hints=hints, weighted=weighted, prefer=prefer, class_cpus=class_cpus
        )

    def plan_keeping(self, request: Request, old: Grant) -> Plan | None:
        """A plan keeping the pool and CPUs of ``old`` (given by :meth:`resizing`), or ``None``."""
        return self.planner.plan_keeping(request, old)

    def commit(self, plan: Plan, *, cold_start_until: float | None = None) -> Grant:
        """Carry out ``plan``; raises :class:`PolicyError` (nothing changed) when memory fails."""
        return self.ledger.commit(plan, cold_start_until=cold_start_until)

    def restore(
        self, request: Request, saved: SavedGrant, *, cold_start_until: float | None = None
    ) -> Grant:
        """Account a grant exactly as ``saved`` describes it; raises
        :class:`~nrirp.domain.policies.topology_aware.grants.RestoreError` (nothing changed)
        when that is no longer possible."""
        plan = self.planner.plan_saved(request, saved)
        return self.ledger.restore(plan, saved.memory, cold_start_until=cold_start_until)

    def resizing(self, container_id: str) -> AbstractContextManager[Grant | None]:
        """``with alloc.resizing(cid) as old:`` plan and commit the container's new grant;
        ``old`` is its current grant (``None``: it has none), put back unless a new one is
        committed (see :meth:`Ledger.resizing`)."""
        return self.ledger.resizing(container_id)

    def release(self, container_id: str) -> Grant | None:
        """Drop the container's grant."""
        return self.ledger.release(container_id)

    def end_cold_start(self, container_id: str) -> bool:
        """End the container's cold start; ``False`` when it has none."""
        return self.ledger.end_cold_start(container_id)

    # ------------------------------------------------------------------ results
    def flush(self) -> Flush:
        """The cpus, mems and tags to set since the last flush (:meth:`Ledger.flush`)."""
        return self.ledger.flush()

    def mark_all_dirty(self) -> None:
        """Report every grant at the next flush."""
        self.ledger.mark_all_dirty()
