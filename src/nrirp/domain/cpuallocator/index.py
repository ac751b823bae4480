"""What the allocator precomputes once per machine: packages, cores, clusters and cache levels.

CPU sets are plain ``int`` bit masks here (bit ``n`` = CPU ``n``), the representation
:class:`~nrirp.domain.cpuset.CPUSet` wraps, so the per-call work is big-integer arithmetic.
Cores also carry a mask relative to their package's lowest CPU id, which keeps the masks
small on machines whose CPU ids run into the thousands.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator.priorities import classify_priorities
from nrirp.domain.topology import CacheGroup, CacheType, CoreType, Machine


def bit_ids(bits: int) -> list[int]:
    """Positions of the set bits in ascending order; the cost follows the span of the set."""
    if not bits:
        return []
    low = (bits & -bits).bit_length() - 1
    if bits.bit_count() <= 8:
        out = []
        while bits:
            lowest = bits & -bits
            out.append(lowest.bit_length() - 1)
            bits ^= lowest
        return out
    text = bin(bits >> low)[:1:-1]
    return [i + low for i, digit in enumerate(text) if digit == "1"]


@attrs.frozen(slots=True)
class Unit:
    """CPUs taken as one piece: a cluster, cache group, node or die (inside one package)."""

    bits: int
    size: int
    package: int
    first: int
    die_bits: int  # the CPUs of the unit's die (of its package when it spans dies)
    efficient: bool = False
    inner: tuple[int, ...] = ()  # NUMA nodes / dies strictly inside the unit


@attrs.frozen(slots=True)
class Core:
    """A physical core; ``local`` is its thread mask shifted down by its package's ``lo``."""

    local: int
    size: int
    first: int


@attrs.frozen(slots=True)
class CoreShape:
    """Cores whose threads sit at the same offsets from their first thread.

    ``firsts``: the first threads of those cores (global mask); ``offsets``: where the other
    threads are. ``free & (free >> d) ...`` over the offsets marks the cores wholly in ``free``.
    """

    firsts: int
    offsets: tuple[int, ...]
    size: int


@attrs.frozen(slots=True)
class PackageIndex:
    id: int
    bits: int
    lo: int  # lowest CPU id of the package
    local_mask: int  # bits >> lo
    cores: tuple[Core, ...]  # by lowest thread id
    smallest_core: int
    largest_core: int
    shapes: tuple[CoreShape, ...]  # empty when the numbering has too many shapes

    def whole_core_cpus(self, free: int) -> int:
        """How many CPUs of ``free`` belong to cores of this package that are wholly free."""
        if not self.shapes:
            local = free >> self.lo
            return sum(c.size for c in self.cores if local & c.local == c.local)
        total = 0
        for shape in self.shapes:
            whole = free & shape.firsts
            for offset in shape.offsets:
                whole &= free >> offset
            total += whole.bit_count() * shape.size
        return total


@attrs.frozen(slots=True)
class GroupLevel:
    """Groups of CPUs at one level (a cache level, NUMA nodes or dies), each in one package.

    ``idle_first``: a fully free group beats a tighter, partly used one (cache levels, so that
    a workload gets a cache of its own); otherwise the tightest group wins (packing).
    """

    name: str
    groups: tuple[Unit, ...]
    by_package: Mapping[int, tuple[Unit, ...]]
    largest: int
    idle_first: bool


def _level(name: str, units: list[Unit], *, idle_first: bool) -> GroupLevel:
    units.sort(key=lambda u: u.first)
    by_package: dict[int, list[Unit]] = {}
    for unit in units:
        by_package.setdefault(unit.package, []).append(unit)
    return GroupLevel(
        name=name,
        groups=tuple(units),
        by_package={p: tuple(us) for p, us in by_package.items()},
        largest=max(u.size for u in units),
        idle_first=idle_first,
    )


class MachineIndex:
    """Precomputed, read-only view of a machine for the allocator."""

    def __init__(self, machine: Machine) -> None:
        self.online = machine.online.bits
        self.hybrid = machine.is_hybrid
        self.efficient = machine.cpus_of_type(CoreType.EFFICIENT).bits
        self.priority_of: Mapping[int, CPUPriority] = classify_priorities(machine)
        bits = dict.fromkeys((CPUPriority.HIGH, CPUPriority.NORMAL, CPUPriority.LOW), 0)
        for cpu_id, priority in self.priority_of.items():
            bits[priority] |= 1 << cpu_id
        self.priority_bits: Mapping[CPUPriority, int] = bits

        size = machine.online.max() + 1 if machine.online else 0
        self.core_of: list[Core | None] = [None] * size
        packages = []
        for package in machine.packages.values():
            lo = package.cpus.min()
            cores = []
            for core in machine.cores.values():
                if core.package_id != package.id:
                    continue
                local = Core(local=core.cpus.bits >> lo, size=len(core.cpus), first=core.cpus.min())
                cores.append(local)
                for cpu_id in core.cpus:
                    self.core_of[cpu_id] = local
            cores.sort(key=lambda c: c.first)
            packages.append(
                PackageIndex(
                    id=package.id,
                    bits=package.cpus.bits,
                    lo=lo,
                    local_mask=package.cpus.bits >> lo,
                    cores=tuple(cores),
                    smallest_core=min(c.size for c in cores),
                    largest_core=max(c.size for c in cores),
                    shapes=_shapes(cores, lo),
                )
            )
        self.packages: tuple[PackageIndex, ...] = tuple(packages)
        self.package_bits: Mapping[int, int] = {p.id: p.bits for p in packages}
        self.package_by_id: Mapping[int, PackageIndex] = {p.id: p for p in packages}
        self.clusters: tuple[Unit, ...] = _clusters(machine) if self.hybrid else ()
        caches = _cache_levels(machine)
        domains = _domain_levels(machine, caches)
        inner = [u.bits for level in domains for u in level.groups]
        self.cache_levels: tuple[GroupLevel, ...] = tuple(_with_inner(lv, inner) for lv in caches)
        self.domain_levels: tuple[GroupLevel, ...] = tuple(_with_inner(lv, inner) for lv in domains)


_MAX_SHAPES = 8


def _with_inner(level: GroupLevel, domains: list[int]) -> GroupLevel:
    """``level`` with each group knowing the node and die groups strictly inside it."""
    units = [
        attrs.evolve(
            unit,
            inner=tuple(d for d in domains if d != unit.bits and d & ~unit.bits == 0),
        )
        for unit in level.groups
    ]
    return _level(level.name, units, idle_first=level.idle_first)


def _shapes(cores: list[Core], lo: int) -> tuple[CoreShape, ...]:
    """The cores grouped by thread offsets; empty when there are too many groups to pay off."""
    firsts: dict[tuple[int, ...], int] = {}
    for core in cores:
        ids = bit_ids(core.local)
        offsets = tuple(i - ids[0] for i in ids[1:])
        firsts[offsets] = firsts.get(offsets, 0) | 1 << (ids[0] + lo)
        if len(firsts) > _MAX_SHAPES:
            return ()
    return tuple(
        CoreShape(firsts=mask, offsets=offsets, size=len(offsets) + 1)
        for offsets, mask in sorted(firsts.items())
    )


def _unit(machine: Machine, bits: int, first: int, *, efficient: bool = False) -> Unit | None:
    """A unit of the CPUs ``bits`` (lowest ``first``); None when they span packages."""
    members = [machine.cpus[i] for i in bit_ids(bits)]
    packages = {c.package_id for c in members}
    if len(packages) != 1:
        return None
    package = packages.pop()
    dies = {c.die_id for c in members}
    die_bits = (
        machine.die_cpus(package, dies.pop()).bits
        if len(dies) == 1
        else machine.package_cpus(package).bits
    )
    return Unit(bits, len(members), package, first, die_bits, efficient)


def _clusters(machine: Machine) -> tuple[Unit, ...]:
    out = []
    for cluster in machine.clusters.values():
        efficient = all(machine.cpus[i].core_type is CoreType.EFFICIENT for i in cluster.cpus)
        unit = _unit(machine, cluster.cpus.bits, cluster.cpus.min(), efficient=efficient)
        if unit is not None:
            out.append(unit)
    return tuple(sorted(out, key=lambda u: u.first))


def _groups_of_level(machine: Machine, level: int) -> tuple[CacheGroup, ...]:
    unified = machine.cache_groups(level, CacheType.UNIFIED)
    return unified or machine.cache_groups(level, CacheType.DATA)


def _cache_levels(machine: Machine) -> tuple[GroupLevel, ...]:
    """Cache levels, lowest first, whose groups span more than one core.

    A level that groups CPUs exactly like a lower useful level adds nothing and is left out;
    groups that span packages are never used.
    """
    out: list[GroupLevel] = []
    seen: set[frozenset[int]] = set()
    for level in sorted({g.level for g in machine.caches}):
        groups = [g for g in _groups_of_level(machine, level) if g.cpus]
        if all(g.cpus.issubset(machine.thread_siblings(g.cpus.min())) for g in groups):
            continue  # per-core (or per-thread) caches say nothing the cores do not
        units = [
            unit for g in groups if (unit := _unit(machine, g.cpus.bits, g.cpus.min())) is not None
        ]
        partition = frozenset(u.bits for u in units)
        if not units or partition in seen:
            continue
        seen.add(partition)
        out.append(_level(f"L{level} cache", units, idle_first=True))
    return tuple(out)


def _domain_levels(
    machine: Machine, cache_levels: tuple[GroupLevel, ...]
) -> tuple[GroupLevel, ...]:
    """NUMA nodes, then dies, where they split a package and group CPUs unlike a cache level."""
    seen = {frozenset(u.bits for u in level.groups) for level in cache_levels}
    seen.add(frozenset(p.cpus.bits for p in machine.packages.values()))
    candidates = [
        ("NUMA node", [n.cpus for n in machine.nodes.values() if n.cpus]),
        ("die", [d.cpus for d in machine.dies.values()]),
    ]
    out: list[GroupLevel] = []
    for name, sets in candidates:
        units = [u for c in sets if (u := _unit(machine, c.bits, c.min())) is not None]
        partition = frozenset(u.bits for u in units)
        if not units or partition in seen:
            continue
        seen.add(partition)
        out.append(_level(name, units, idle_first=False))
    return tuple(sorted(out, key=lambda level: level.largest))
