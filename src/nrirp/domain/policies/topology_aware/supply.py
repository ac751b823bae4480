"""Per-pool CPU supply: sharable, isolated and reserved CPUs, and what is granted from them.

Exclusive grants slice CPUs off the sharable set of every pool that holds them (the pool, its
ancestors and the descendants they overlap). Shared grants count against the pool and every
ancestor: a pool's free shared capacity is ``1000 * |sharable|`` minus the shared mCPU granted
in its subtree, and what a new shared grant can get there is the minimum of that along the path
to the top. Reserved grants are counted the same way against the reserved CPUs.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.topology_aware.pools import Pool, PoolTree


class Supply:
    """The dynamic CPU state of every pool of a tree (arrays indexed by pool id)."""

    def __init__(self, tree: PoolTree, reserved: CPUSet, isolated: CPUSet) -> None:
        self.tree = tree
        self.reserved_cpus = reserved
        self.isolated_cpus = isolated
        pools = tree.pools
        self.reserved: list[CPUSet] = [p.cpus & reserved for p in pools]
        self.isolated_all: list[CPUSet] = [p.cpus & isolated for p in pools]
        self.sharable: list[CPUSet] = [p.cpus - reserved - isolated for p in pools]
        self.initial_sharable: list[CPUSet] = list(self.sharable)
        self.isolated: list[CPUSet] = list(self.isolated_all)
        self.shared_granted: list[int] = [0] * len(pools)
        self.reserved_granted: list[int] = [0] * len(pools)
        self.members: list[dict[str, None]] = [{} for _ in pools]
        """Grants whose CPUs follow the pool's shared set (shared and mixed), by container."""
        self.reserved_members: list[dict[str, None]] = [{} for _ in pools]
        self.count: list[int] = [0] * len(pools)
        """Grants in each pool itself, of every kind."""
        self.colocated: list[int] = [0] * len(pools)
        """Grants of the normal CPU kinds (shared, exclusive, isolated, mixed) in each pool
        itself: the reference's colocation count for a shared request."""
        self.free: list[int] = [1000 * len(c) for c in self.sharable]
        """Free shared mCPU of each pool itself: ``1000 * |sharable|`` minus shared grants."""
        self._parents: list[tuple[int, int]] = [
            (p.id, p.parent.id) for p in pools if p.parent is not None
        ]  # pre-order: a parent comes before its children
        self._allocatable: list[int] | None = None
        self._allocatable_reserved: list[int] | None = None
        self.version: list[int] = [0] * len(pools)
        """Bumped whenever anything a pool's score reads of its CPU supply changes (its sets,
        grants, members, count), so scores can be reused until then."""
        self.sets: list[int] = [0] * len(pools)
        """Bumped whenever a pool's sharable or isolated set changes: a score whose pool has
        only seen grants come and go since is worked out again from its counts
        (:meth:`PoolScorer.rescored`)."""
        self.fallback: list[CPUSet] = [self._fallback(p) for p in pools]
        self.dirty: set[int] = set()
        self.causes: dict[int, list[tuple[bool, str]]] = {}
        """Why the shared set of each dirty pool changed (for the decision log)."""

    def _fallback(self, pool: Pool) -> CPUSet:
        for p in (pool, *pool.ancestors):
            if self.reserved[p.id]:
                return self.reserved[p.id]
        return self.reserved_cpus

    # ------------------------------------------------------------------ queries
    def shared_cpus(self, pool: Pool) -> CPUSet:
        """The CPUs shared containers of ``pool`` run on (the reserved CPUs when none are left)."""
        return self.sharable[pool.id] or self.fallback[pool.id]

    def reserved_of(self, pool: Pool) -> CPUSet:
        return self.reserved[pool.id] or self.fallback[pool.id]

    def free_shared(self, pool: Pool) -> int:
        """Free shared mCPU of the pool itself (not limited by its ancestors)."""
        return self.free[pool.id]

    def allocatable_shared(self, pool: Pool) -> int:
        """Shared mCPU a new grant in ``pool`` can get: the minimum along the path to the top."""
        return self.allocatable_shared_all()[pool.id]

    def allocatable_shared_all(self) -> list[int]:
        """:meth:`allocatable_shared` of every pool, by id (kept until the supply changes;
        callers must not modify it)."""
        out = self._allocatable
        if out is None:
            out = list(self.free)
            for pid, parent in self._parents:
                if out[parent] < out[pid]:
                    out[pid] = out[parent]
            self._allocatable = out
        return out

    def allocatable_reserved_all(self) -> list[int]:
        """:meth:`allocatable_reserved` of every pool, by id (kept until the supply changes;
        callers must not modify it)."""
        out = self._allocatable_reserved
        if out is None:
            out = [
                1000 * len(r) - g for r, g in zip(self.reserved, self.reserved_granted, strict=True)
            ]
            for pid, parent in self._parents:
                if out[parent] < out[pid]:
                    out[pid] = out[parent]
            self._allocatable_reserved = out
        return out

    def allocatable_reserved(self, pool: Pool) -> int:
        return self.allocatable_reserved_all()[pool.id]

    def fits(self, pool: Pool, cpus: CPUSet, shared: int) -> bool:
        """Would taking ``cpus`` off the sharable sets and granting ``shared`` mCPU in ``pool``
        keep every pool's shared grants within its shared CPUs?"""
        for p in self._touched(pool, cpus):
            left = len(self.sharable[p.id] - cpus)
            need = self.shared_granted[p.id]
            if p.id == pool.id or p in pool.ancestors:
                need += shared
            if 1000 * left < need:
                return False
        return True

    def overcommitted_by(self, pool: Pool, cpus: CPUSet) -> list[Pool]:
        """Pools whose shared grants would no longer fit if ``cpus`` left their sharable set."""
        out = []
        for p in self._touched(pool, cpus):
            left = len(self.sharable[p.id]) - len(self.sharable[p.id] & cpus)
            if 1000 * left < self.shared_granted[p.id]:
                out.append(p)
        return out

    def _touched(self, pool: Pool, cpus: CPUSet) -> Iterable[Pool]:
        yield pool
        yield from pool.ancestors
        for d in pool.descendants:
            if d.cpus & cpus:
                yield d

    # ------------------------------------------------------------------ changes
    def take_exclusive(self, pool: Pool, cpus: CPUSet, by: str = "") -> None:
        """Slice ``cpus`` off the sharable sets (``by``: who takes them, for the log)."""
        for p in self._touched(pool, cpus):
            taken = self.sharable[p.id] & cpus
            if taken:
                self.sharable[p.id] = self.sharable[p.id] - cpus
                self._changed(p.id, True, f"{cpu_list(taken)} went to {by}" if by else "")

    def return_exclusive(self, pool: Pool, cpus: CPUSet, by: str = "") -> None:
        """Give ``cpus`` back to the sharable sets they came from (``by``: who held them)."""
        for p in self._touched(pool, cpus):
            back = (cpus & self.initial_sharable[p.id]) - self.sharable[p.id]
            if back:
                self.sharable[p.id] = self.sharable[p.id] | back
                self._changed(p.id, False, f"{cpu_list(back)} came back from {by}" if by else "")

    def _changed(self, pool_id: int, shrank: bool, cause: str) -> None:
        self.dirty.add(pool_id)
        self.version[pool_id] += 1
        self.sets[pool_id] += 1
        self.free[pool_id] = 1000 * len(self.sharable[pool_id]) - self.shared_granted[pool_id]
        self._allocatable = None
        if cause:
            self.causes.setdefault(pool_id, []).append((shrank, cause))

    def why_changed(self, pool: Pool) -> str:
        """The decision-log reason for the shared containers of a pool whose set changed."""
        causes = self.causes.get(pool.id, [])
        how = {True: "shrank", False: "grew"}
        ways = {shrank for shrank, _ in causes}
        text = f"shared CPUs of {pool.name} {how[ways.pop()] if len(ways) == 1 else 'changed'}"
        if causes:
            text += ": " + "; ".join(cause for _, cause in causes)
        if not self.sharable[pool.id]:
            text += f" (none left: on the reserved CPUs {self.fallback[pool.id]})"
        return text

    def take_isolated(self, pool: Pool, cpus: CPUSet) -> None:
        version, sets = self.version, self.sets
        for p in self._touched(pool, cpus):
            self.isolated[p.id] = self.isolated[p.id] - cpus
            version[p.id] += 1
            sets[p.id] += 1

    def return_isolated(self, pool: Pool, cpus: CPUSet) -> None:
        version, sets = self.version, self.sets
        for p in self._touched(pool, cpus):
            self.isolated[p.id] = self.isolated[p.id] | (cpus & self.isolated_all[p.id])
            version[p.id] += 1
            sets[p.id] += 1

    def grant_shared(self, pool: Pool, container_id: str, mcpu: int, *, member: bool) -> None:
        version, free = self.version, self.free
        for p in (pool, *pool.ancestors):
            self.shared_granted[p.id] += mcpu
            free[p.id] -= mcpu
            version[p.id] += 1
        self._allocatable = None
        if member:
            self.members[pool.id][container_id] = None

    def ungrant_shared(self, pool: Pool, container_id: str, mcpu: int) -> None:
        version, free = self.version, self.free
        for p in (pool, *pool.ancestors):
            self.shared_granted[p.id] -= mcpu
            free[p.id] += mcpu
            version[p.id] += 1
        self._allocatable = None
        self.members[pool.id].pop(container_id, None)

    def grant_reserved(self, pool: Pool, container_id: str, mcpu: int) -> None:
        version = self.version
        for p in (pool, *pool.ancestors):
            self.reserved_granted[p.id] += mcpu
            version[p.id] += 1
        self._allocatable_reserved = None
        self.reserved_members[pool.id][container_id] = None

    def ungrant_reserved(self, pool: Pool, container_id: str, mcpu: int) -> None:
        version = self.version
        for p in (pool, *pool.ancestors):
            self.reserved_granted[p.id] -= mcpu
            version[p.id] += 1
        self._allocatable_reserved = None
        self.reserved_members[pool.id].pop(container_id, None)

    def add_count(self, pool: Pool, delta: int, *, normal: bool) -> None:
        """Count a grant in (``delta`` 1) or out of (-1) ``pool``; ``normal``: of a normal
        CPU kind (not reserved or preserve)."""
        self.count[pool.id] += delta
        if normal:
            self.colocated[pool.id] += delta
        self.version[pool.id] += 1

    def take_dirty(self) -> Sequence[int]:
        """The pools whose sharable set changed since the last call (their causes stay
        readable through :meth:`why_changed` until :meth:`clear_causes`)."""
        dirty = sorted(self.dirty)
        self.dirty.clear()
        return dirty

    def clear_causes(self) -> None:
        self.causes.clear()


def cpu_list(cpus: CPUSet) -> str:
    """``CPU 3`` or ``CPUs 3-5``."""
    return f"CPU {cpus}" if len(cpus) == 1 else f"CPUs {cpus}"


def plural(count: int, noun: str) -> str:
    """``1 exclusive CPU``, ``2 exclusive CPUs``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
