"""The allocation pipeline: which CPUs of a free set to take, best first.

Steps, each working on what the previous ones left:

1. idle packages, taken whole;
2. idle clusters (hybrid parts only; E-clusters for low priority, P-clusters otherwise):
   the tightest idle cluster that holds the rest, else whole idle clusters;
3. cache groups: at the lowest cache level where one group holds the rest, the best such group
   (in a package this allocation already uses, with the most CPUs of the wanted priority, idle
   groups first, a NUMA node or die inside it that holds the request, whole free cores enough
   for the request, then the tightest group, die and package); the rest is picked inside it by the
   lower levels. When no group holds the rest, whole idle groups of the highest level are taken;
   then the same over NUMA nodes and dies that split a package (tightest first, not idle
   first), both inside a chosen cache group and for what no cache group could hold;
4. idle whole cores;
5. single threads by: package already used, the package's free CPUs of the wanted priority
   (more first), package id, the thread's priority, the free threads of its core (fewer first), id.

Step 1 runs for every request, one CPU included (as the reference's): a package whose only
usable CPU is free (the rest offline, e.g. after hot-plug) is taken before a CPU of a full
package. Steps 2-4 run only for requests of more than one CPU. Everything is deterministic:
every choice ends in a comparison of CPU ids.
"""

from __future__ import annotations

import heapq

from nrirp.domain.cpuallocator.index import (
    GroupLevel,
    MachineIndex,
    PackageIndex,
    Unit,
    bit_ids,
)


class _State:
    """One fill in progress. ``free`` ⊆ ``eligible``; ``pref`` marks the wanted priority."""

    __slots__ = ("eligible", "free", "pref", "remaining", "result")

    def __init__(self, free: int, count: int, pref: int, eligible: int) -> None:
        self.free = free
        self.remaining = count
        self.pref = pref
        self.eligible = eligible
        self.result = 0

    def take(self, bits: int) -> None:
        self.result |= bits
        self.free &= ~bits
        self.remaining -= bits.bit_count()


class Picker:
    """Runs the pipeline over a :class:`MachineIndex`."""

    def __init__(self, index: MachineIndex) -> None:
        self._index = index

    def pick(
        self,
        free: int,
        count: int,
        *,
        pref: int,
        eligible: int,
        efficient_clusters: bool | None,
    ) -> int:
        """``count`` CPUs of ``free`` (which must hold at least that many).

        ``pref``: CPUs of the wanted priority class. ``eligible``: the CPUs this request could
        use at all, which decides whether a package, cluster or group counts as idle.
        ``efficient_clusters``: the kind of cluster step 2 takes, None to skip it.
        """
        st = _State(free, count, pref, eligible)
        index = self._index
        self._idle_packages(st)
        if st.remaining > 1:
            if efficient_clusters is not None and st.remaining > 1:
                self._idle_clusters(st, efficient_clusters)
            if st.remaining > 1:
                self._groups(st, index.cache_levels, (index.domain_levels,))
            if st.remaining > 1:
                self._groups(st, index.domain_levels, ())
            if st.remaining > 1:
                self._idle_cores(st)
        if st.remaining > 0:
            self._threads(st)
        return st.result

    def _inside(self, st: _State, free: int, stages: tuple[tuple[GroupLevel, ...], ...]) -> int:
        """All of ``st.remaining`` from ``free`` (one group), by the finer steps.

        ``stages``: the group levels to try, in order, before whole cores and threads.
        """
        sub = _State(free, st.remaining, st.pref, st.eligible)
        for position, levels in enumerate(stages):
            if sub.remaining > 1 and levels:
                self._groups(sub, levels, stages[position + 1 :])
        if sub.remaining > 1:
            self._idle_cores(sub)
        if sub.remaining > 0:
            self._threads(sub)
        return sub.result

    # ---------------------------------------------------------------- 1. packages
    def _idle_packages(self, st: _State) -> None:
        rows = []
        for package in self._index.packages:
            usable = package.bits & st.eligible
            size = usable.bit_count()
            if not usable or size > st.remaining or st.free & usable != usable:
                continue
            rows.append((-(usable & st.pref).bit_count(), -size, package.id, usable))
        rows.sort(key=lambda row: row[:3])
        for _, neg_size, _, usable in rows:
            if -neg_size <= st.remaining:
                st.take(usable)

    # ---------------------------------------------------------------- 2. hybrid clusters
    def _idle_clusters(self, st: _State, efficient: bool) -> None:
        units = [u for u in self._index.clusters if u.efficient is efficient]
        while st.remaining > 1:
            idle = []
            for unit in units:
                usable = unit.bits & st.eligible
                if usable and st.free & usable == usable:
                    idle.append((unit, usable, usable.bit_count()))
            fits = [row for row in idle if row[2] >= st.remaining]
            if fits:
                unit, usable, _ = min(fits, key=lambda row: self._fit_key(st, *row))
                st.take(self._inside(st, usable, (self._index.domain_levels,)))
                return
            whole = [row for row in idle if row[2] <= st.remaining]
            if not whole:
                return
            unit, usable, _ = min(whole, key=lambda row: self._whole_key(st, *row))
            st.take(usable)

    def _fit_key(self, st: _State, unit: Unit, free: int, size: int) -> tuple[int, ...]:
        wanted = min((free & st.pref).bit_count(), st.remaining)
        return (self._unused(st, unit.package), -wanted, size, unit.first)

    def _whole_key(self, st: _State, unit: Unit, free: int, size: int) -> tuple[int, ...]:
        wanted = (free & st.pref).bit_count()
        return (self._unused(st, unit.package), -wanted, -size, unit.first)

    def _unused(self, st: _State, package_id: int) -> int:
        """0 when this allocation already has CPUs in the package, else 1."""
        return 0 if st.result & self._index.package_bits[package_id] else 1

    # ---------------------------------------------------------------- 3. cache groups, nodes
    def _groups(
        self,
        st: _State,
        levels: tuple[GroupLevel, ...],
        after: tuple[tuple[GroupLevel, ...], ...],
    ) -> None:
        """Step 3 over ``levels`` (lowest first); ``after``: what a chosen group is split by."""
        while st.remaining > 1 and levels:
            package_free = {p.id: (st.free & p.bits).bit_count() for p in self._index.packages}
            used = {p.id for p in self._index.packages if st.result & p.bits}
            for depth, level in enumerate(levels):
                if level.largest < st.remaining:
                    continue
                best: tuple[tuple[int, ...], int] | None = None
                for package_id, groups in level.by_package.items():
                    pfree = package_free.get(package_id, 0)
                    if pfree < st.remaining:
                        continue
                    unused = 0 if package_id in used else 1
                    package = self._index.package_by_id[package_id]
                    # the part of the request that whole cores should cover
                    cores_part = st.remaining - st.remaining % package.largest_core
                    for group in groups:
                        free = group.bits & st.free
                        size = free.bit_count()
                        if size < st.remaining:
                            continue
                        busy = 0
                        if level.idle_first:
                            busy = 0 if free == group.bits & st.eligible else 1
                        whole = package.whole_core_cpus(free) if cores_part else 0
                        split = 0
                        if group.inner:
                            split = 1
                            for domain in group.inner:
                                if (domain & free).bit_count() >= st.remaining:
                                    split = 0
                                    break
                        key = (
                            unused,
                            -min((free & st.pref).bit_count(), st.remaining),
                            busy,
                            split,
                            -min(whole, cores_part),
                            size,
                            (group.die_bits & st.free).bit_count(),
                            pfree,
                            group.first,
                        )
                        if best is None or key < best[0]:
                            best = (key, free)
                if best is not None:
                    st.take(self._inside(st, best[1], (levels[:depth], *after)))
                    return
            if not self._take_idle_group(st, levels[-1], package_free, used):
                return

    def _take_idle_group(
        self, st: _State, level: GroupLevel, package_free: dict[int, int], used: set[int]
    ) -> bool:
        """Take the best whole idle group of ``level`` that is not larger than the rest."""
        best: tuple[tuple[int, ...], int] | None = None
        for group in level.groups:
            usable = group.bits & st.eligible
            size = usable.bit_count()
            if not usable or size > st.remaining or st.free & usable != usable:
                continue
            key = (
                0 if group.package in used else 1,
                -(usable & st.pref).bit_count(),
                -size,
                package_free.get(group.package, 0),
                group.first,
            )
            if best is None or key < best[0]:
                best = (key, usable)
        if best is None:
            return False
        st.take(best[1])
        return True

    # ---------------------------------------------------------------- 4-5. cores, threads
    def _package_order(self, st: _State) -> list[PackageIndex]:
        """Packages with free CPUs: already used first, then most free CPUs of the priority."""
        rows = []
        for package in self._index.packages:
            free = st.free & package.bits
            if free:
                used = 0 if st.result & package.bits else 1
                rows.append((used, -(free & st.pref).bit_count(), package.id, package))
        rows.sort(key=lambda row: row[:3])
        return [row[3] for row in rows]

    def _idle_cores(self, st: _State) -> None:
        for package in self._package_order(st):
            if st.remaining < package.smallest_core:
                continue
            lo = package.lo
            free = st.free >> lo
            pref = (st.pref >> lo) & package.local_mask
            taken = 0
            if pref in (0, package.local_mask):  # one priority class: plain id order
                for core in package.cores:
                    if core.size <= st.remaining and free & core.local == core.local:
                        taken |= core.local
                        free &= ~core.local
                        st.remaining -= core.size
                        if st.remaining < package.smallest_core:
                            break
            else:
                idle = [
                    (-(pref & core.local).bit_count(), core.first, core)
                    for core in package.cores
                    if free & core.local == core.local
                ]
                idle.sort(key=lambda row: row[:2])
                for _, _, core in idle:
                    if core.size <= st.remaining:
                        taken |= core.local
                        st.remaining -= core.size
            if taken:
                st.result |= taken << lo
                st.free &= ~(taken << lo)
            if st.remaining <= 1:
                return

    def _threads(self, st: _State) -> None:
        core_of = self._index.core_of
        for package in self._package_order(st):
            lo = package.lo
            free = (st.free >> lo) & package.local_mask
            pref = st.pref >> lo
            rows = []
            for i in bit_ids(free):
                core = core_of[lo + i]
                assert core is not None
                rows.append((0 if pref >> i & 1 else 1, (core.local & free).bit_count(), i))
            if len(rows) > st.remaining:
                rows = heapq.nsmallest(st.remaining, rows)
            taken = 0
            for _, _, i in rows:
                taken |= 1 << i
            st.take(taken << lo)
            if st.remaining == 0:
                return
