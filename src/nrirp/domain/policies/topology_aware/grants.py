"""Grants: what one container holds, and the tags that persist it on the container."""

from __future__ import annotations

import functools
from collections.abc import Mapping

import attrs

from nrirp.domain.cpuset import EMPTY, CPUSet, CPUSetError
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import CPUKind
from nrirp.domain.topology import MemoryType

TAG_POOL = "topology-aware.pool"
TAG_KIND = "topology-aware.kind"
TAG_EXCLUSIVE = "topology-aware.exclusive"
TAG_MEMORY = "topology-aware.memory"
TAG_MEMORY_TYPES = "topology-aware.memory-types"
TAG_IRQ_AFFINITY = "topology-aware.irq-affinity"
TAG_CPU_CLASS = "topology-aware.cpu-class"
"""The CPU class last asked of the host controller (so it is asked again only on a change)."""


@attrs.define(eq=False)
class Grant:
    """A container's allocation. ``exclusive`` holds exclusive or isolated CPUs; ``shared``
    and ``reserved`` the mCPU counted against the pool's shared or reserved CPUs; ``memory``
    the zone from the memory allocator (``None`` when memory is left alone)."""

    container_id: str
    label: str
    pool: Pool
    kind: CPUKind
    exclusive: CPUSet = EMPTY
    shared: int = 0
    reserved: int = 0
    memory: CPUSet | None = None
    memory_types: frozenset[MemoryType] = frozenset()
    memory_size: int = 0
    pin_cpu: bool = True
    pin_memory: bool = True
    hide_hyperthreads: bool = False
    cold_start_until: float | None = None
    """Wall-clock time the cold start ends (memory limited to PMEM until then)."""
    pool_isolated: CPUSet | None = None
    """The isolated CPUs of the machine (to tag mixed grants)."""
    namespace: str = ""
    pod_id: str = ""

    _tags: tuple[CPUSet | None, dict[str, str]] | None = attrs.field(
        default=None, init=False, repr=False
    )

    def tags(self) -> dict[str, str]:
        """The tags that persist the grant (callers must not modify the mapping)."""
        cached = self._tags
        if cached is not None and cached[0] is self.memory:
            return cached[1]
        tags = {
            TAG_POOL: self.pool.name,
            TAG_KIND: self.tag_kind(),
            TAG_EXCLUSIVE: str(self.exclusive) if self.exclusive else "",
            TAG_MEMORY: "" if self.memory is None else zone_text(self.memory),
            TAG_MEMORY_TYPES: types_text(self.memory_types),
        }
        self._tags = (self.memory, tags)
        return tags

    def tag_kind(self) -> str:
        """The kind as tagged: a mixed grant is tagged by its whole CPUs (exclusive or
        isolated); the request tells it is mixed."""
        if self.kind is CPUKind.MIXED:
            isolated = self.pool_isolated is not None and self.exclusive.issubset(
                self.pool_isolated
            )
            return "isolated" if isolated else "exclusive"
        return str(self.kind.value)

    def describe(self) -> dict[str, object]:
        out: dict[str, object] = {"pool": self.pool.name, "kind": self.kind.value}
        if self.kind is CPUKind.MIXED:
            out["tagged"] = self.tag_kind()
        if self.exclusive:
            out["exclusive"] = str(self.exclusive)
        if self.shared:
            out["shared_mcpu"] = self.shared
        if self.reserved:
            out["reserved_mcpu"] = self.reserved
        if self.memory is not None:
            out["memory"] = str(self.memory)
            out["memory_types"] = types_text(self.memory_types)
            out["memory_bytes"] = self.memory_size
        if self.cold_start_until is not None:
            out["cold_start_until"] = self.cold_start_until
        return out


@functools.lru_cache(maxsize=1024)
def zone_text(zone: CPUSet) -> str:
    """``str(zone)`` for memory zones (a handful of distinct ones, rendered once)."""
    return str(zone)


@functools.cache
def types_text(types: frozenset[MemoryType]) -> str:
    """``dram,pmem``: the types in their declaration order."""
    return ",".join(t.value for t in MemoryType if t in types)


class RestoreError(ValueError):
    """A saved grant cannot be restored as it was (the caller allocates anew)."""


@attrs.frozen
class SavedGrant:
    """What a container's tags say it held before a restart or reconfiguration."""

    pool: str
    kind: CPUKind
    exclusive: CPUSet
    memory: CPUSet | None
    memory_types: frozenset[MemoryType] | None


def saved_grant(tags: Mapping[str, str]) -> SavedGrant | None:
    """The grant recorded in ``tags``; ``None`` when there is none or it is unreadable."""
    pool = tags.get(TAG_POOL)
    kind_text = tags.get(TAG_KIND)
    if not pool or not kind_text:
        return None
    try:
        kind = CPUKind(kind_text)
        exclusive = CPUSet.parse(tags.get(TAG_EXCLUSIVE, ""))
        memory_text = tags.get(TAG_MEMORY, "")
        memory = CPUSet.parse(memory_text) if memory_text else None
        types_field = tags.get(TAG_MEMORY_TYPES, "")
        types = (
            frozenset(MemoryType(t) for t in types_field.split(",") if t) if types_field else None
        )
    except (ValueError, CPUSetError):
        return None
    return SavedGrant(pool, kind, exclusive, memory, types)
