"""Cache instances of a fake machine: one per sharing domain of each level, domains split
into groups of cores, or instances listed by hand."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from nrirp.adapters.fakehw.records import CacheLayout, CpuLayout, Problems
from nrirp.adapters.fakehw.spec import CacheLevelSpec, CacheScope, MachineSpec
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CoreType

_SCOPE_KEYS: dict[CacheScope, Callable[[CpuLayout], Hashable]] = {
    CacheScope.CORE: lambda c: (c.package, c.core),
    CacheScope.CLUSTER: lambda c: (c.package, c.cluster),
    CacheScope.NODE: lambda c: c.node,
    CacheScope.DIE: lambda c: (c.package, c.die),
    CacheScope.PACKAGE: lambda c: c.package,
}


def check_cache_levels(spec: MachineSpec, cpus: list[CpuLayout], problems: Problems) -> None:
    """The rules for ``cores_per_instance`` and ``instances`` (the other keys are checked
    with the spec's other sizes)."""
    core_of = {c.id: (c.package, c.core) for c in cpus}
    core_cpus: dict[tuple[int, int], int] = {}
    for c in cpus:
        core_cpus[(c.package, c.core)] = core_cpus.get((c.package, c.core), 0) | 1 << c.id
    present = CPUSet.from_ids(core_of)
    for index, level in enumerate(spec.caches):
        path = f"$.caches[{index}]"
        if level.cores_per_instance is not None:
            if level.cores_per_instance < 1:
                problems.add(
                    f"{path}.cores_per_instance",
                    f"must be at least 1, got {level.cores_per_instance}",
                )
            if level.shared_by is CacheScope.CORE:
                problems.add(
                    f"{path}.cores_per_instance",
                    "splits the instances of a wider scope: give shared_by cluster, node, die "
                    "or package",
                )
            if level.instances:
                problems.add(f"{path}.cores_per_instance", "give either this or 'instances'")
        given = [inst.id for inst in level.instances if inst.id is not None]
        if given and len(given) != len(level.instances):
            problems.add(f"{path}.instances", "give an id to every instance or to none")
        if len(set(given)) != len(given) or any(i < 0 for i in given):
            problems.add(f"{path}.instances", f"ids must be distinct and >= 0, got {given}")
        taken = CPUSet()
        for i, instance in enumerate(level.instances):
            ipath = f"{path}.instances[{i}]"
            if not instance.cpus:
                problems.add(f"{ipath}.cpus", "an instance needs at least one CPU")
            elif not instance.cpus.issubset(present):
                problems.add(f"{ipath}.cpus", f"cpus {instance.cpus - present} do not exist")
            else:
                if instance.cpus & taken:
                    problems.add(
                        f"{ipath}.cpus", f"cpus {instance.cpus & taken} are in another instance"
                    )
                whole = CPUSet().union(*(CPUSet(core_cpus[core_of[c]]) for c in instance.cpus))
                if whole != instance.cpus:
                    problems.add(
                        f"{ipath}.cpus",
                        f"must hold whole cores: cpus {whole - instance.cpus} share a core with "
                        "its cpus",
                    )
                taken |= instance.cpus
            size = instance.size
            if size is not None and (size <= 0 or size % 1024):
                problems.add(f"{ipath}.size", f"must be a positive multiple of 1K, got {size}")


def cache_layout(spec: MachineSpec, cpus: list[CpuLayout]) -> list[CacheLayout]:
    out = []
    by_id = {c.id: c for c in cpus}
    for level in spec.caches:
        groups: list[tuple[list[CpuLayout], int | None, int | None]]
        if level.instances:
            groups = [
                ([by_id[i] for i in inst.cpus], inst.size or level.size, inst.id)
                for inst in level.instances
            ]
        else:
            groups = [(members, _size(level, members), None) for members in _domains(level, cpus)]
        groups.sort(key=lambda group: group[0][0].id)
        for index, (members, size, given_id) in enumerate(groups):
            out.append(
                CacheLayout(
                    level=level.level,
                    type=level.type,
                    id=index if given_id is None else given_id,
                    cpus=CPUSet.from_ids(c.id for c in members),
                    size_bytes=size,
                )
            )
    return out


def _domains(level: CacheLevelSpec, cpus: list[CpuLayout]) -> list[list[CpuLayout]]:
    """The CPUs of each instance: one per ``shared_by`` domain, or groups of
    ``cores_per_instance`` cores of it (cores in the order of their lowest CPU id)."""
    key_of = _SCOPE_KEYS[level.shared_by]
    domains: dict[Hashable, list[CpuLayout]] = {}
    for cpu in sorted(cpus, key=lambda c: c.id):
        domains.setdefault(key_of(cpu), []).append(cpu)
    per = level.cores_per_instance
    if per is None:
        return list(domains.values())
    out = []
    for members in domains.values():
        cores: dict[tuple[int, int], list[CpuLayout]] = {}
        for cpu in members:
            cores.setdefault((cpu.package, cpu.core), []).append(cpu)
        ordered = list(cores.values())
        for start in range(0, len(ordered), per):
            out.append([c for core in ordered[start : start + per] for c in core])
    return out


def _size(level: CacheLevelSpec, members: list[CpuLayout]) -> int | None:
    efficient = all(c.core_type is CoreType.EFFICIENT for c in members)
    if efficient and level.efficient_size is not None:
        return level.efficient_size
    return level.size
