"""Neutral Linux resource settings of a container (a runtime-independent LinuxResources).

Every field is optional: ``None`` means "not set", which is different from zero (NRI keeps
presence the same way). The same value type describes what a container has, what a change sets,
and what an adjustment or update carries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model._frozen import frozen_int_map, frozen_map

_MAP_FIELDS = ("hugepage_limits", "unified")


@attrs.frozen(hash=False)
class LinuxResources:
    """CPU, memory, hugepage, class and pids settings; ``None`` / empty means unset."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    cpu_realtime_runtime: int | None = None
    cpu_realtime_period: int | None = None
    cpus: CPUSet | None = None
    mems: CPUSet | None = None
    memory_limit: int | None = None
    memory_reservation: int | None = None
    memory_swap: int | None = None
    hugepage_limits: Mapping[str, int] = attrs.field(factory=dict, converter=frozen_int_map)
    """Limit in bytes by page size (``"2MB"``, ``"1GB"``)."""
    rdt_class: str | None = None
    blockio_class: str | None = None
    unified: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    """cgroup v2 unified settings by file name (``"memory.high"``)."""
    pids_limit: int | None = None

    def merged(self, other: LinuxResources) -> LinuxResources:
        """These settings overridden by every field ``other`` sets (maps merge per key)."""
        changes: dict[str, Any] = {}
        for field in attrs.fields(LinuxResources):
            value = getattr(other, field.name)
            if field.name in _MAP_FIELDS:
                if value:
                    changes[field.name] = {**getattr(self, field.name), **value}
            elif value is not None:
                changes[field.name] = value
        return attrs.evolve(self, **changes) if changes else self

    def set_fields(self) -> tuple[str, ...]:
        """Names of the fields that are set."""
        return tuple(
            f.name
            for f in attrs.fields(LinuxResources)
            if (
                bool(getattr(self, f.name))
                if f.name in _MAP_FIELDS
                else getattr(self, f.name) is not None
            )
        )

    def is_empty(self) -> bool:
        return not self.set_fields()

    def difference(self, base: LinuxResources) -> LinuxResources:
        """The fields of ``self`` that ``base`` does not already have with the same value."""
        changes: dict[str, Any] = {}
        for field in attrs.fields(LinuxResources):
            mine = getattr(self, field.name)
            theirs = getattr(base, field.name)
            if field.name in _MAP_FIELDS:
                diff = {k: v for k, v in mine.items() if theirs.get(k) != v}
                if diff:
                    changes[field.name] = diff
            elif mine is not None and mine != theirs:
                changes[field.name] = mine
        return LinuxResources(**changes)


NO_RESOURCES = LinuxResources()
