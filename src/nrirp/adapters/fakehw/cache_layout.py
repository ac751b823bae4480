"""Cache instances of a fake machine, grouped by each level's sharing scope."""

from __future__ import annotations

from collections.abc import Callable, Hashable

from nrirp.adapters.fakehw.records import CacheLayout, CpuLayout
from nrirp.adapters.fakehw.spec import CacheScope, MachineSpec
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CoreType

_SCOPE_KEYS: dict[CacheScope, Callable[[CpuLayout], Hashable]] = {
    CacheScope.CORE: lambda c: (c.package, c.core),
    CacheScope.CLUSTER: lambda c: (c.package, c.cluster),
    CacheScope.NODE: lambda c: c.node,
    CacheScope.DIE: lambda c: (c.package, c.die),
    CacheScope.PACKAGE: lambda c: c.package,
}


def cache_layout(spec: MachineSpec, cpus: list[CpuLayout]) -> list[CacheLayout]:
    out = []
    for level in spec.caches:
        key_of = _SCOPE_KEYS[level.shared_by]
        groups: dict[Hashable, list[CpuLayout]] = {}
        for cpu in cpus:
            groups.setdefault(key_of(cpu), []).append(cpu)
        ordered = sorted(groups.values(), key=lambda members: members[0].id)
        for cache_id, members in enumerate(ordered):
            efficient = all(c.core_type is CoreType.EFFICIENT for c in members)
            size = level.size
            if efficient and level.efficient_size is not None:
                size = level.efficient_size
            out.append(
                CacheLayout(
                    level=level.level,
                    type=level.type,
                    id=cache_id,
                    cpus=CPUSet.from_ids(c.id for c in members),
                    size_bytes=size,
                )
            )
    return out
