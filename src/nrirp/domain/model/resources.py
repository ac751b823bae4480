"""Neutral Linux resource settings of a container (a runtime-independent LinuxResources).

Every field is optional: ``None`` means "not set", which is different from zero (NRI keeps
presence the same way). The same value type describes what a container has, what a change sets,
and what an adjustment or update carries.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model._frozen import EMPTY_MAP, FieldsEqual, frozen_int_map, frozen_map, replaced

_MAP_FIELDS = ("hugepage_limits", "unified")


# Fields in an instance dict, compared as one (FieldsEqual): ``merged`` is one dict copy
@attrs.frozen(eq=False, hash=False, slots=False)
class LinuxResources(FieldsEqual):
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
    hugepage_limits: Mapping[str, int] = attrs.field(default=EMPTY_MAP, converter=frozen_int_map)
    """Limit in bytes by page size (``"2MB"``, ``"1GB"``)."""
    rdt_class: str | None = None
    blockio_class: str | None = None
    unified: Mapping[str, str] = attrs.field(default=EMPTY_MAP, converter=frozen_map)
    """cgroup v2 unified settings by file name (``"memory.high"``)."""
    pids_limit: int | None = None

    def merged(self, other: LinuxResources) -> LinuxResources:
        """These settings overridden by every field ``other`` sets (maps merge per key)."""
        if other.only_cpusets():
            cpus, mems = other.cpus, other.mems  # the common change: cpus and/or mems
            if mems is None:
                return self if cpus is None else replaced(self, {"cpus": cpus})
            if cpus is None:
                return replaced(self, {"mems": mems})
            return replaced(self, {"cpus": cpus, "mems": mems})
        changes: dict[str, Any] = {
            name: value
            for name, value in zip(_SCALARS, _scalars_of(other), strict=True)
            if value is not None
        }
        if other.hugepage_limits:
            changes["hugepage_limits"] = _frozen({**self.hugepage_limits, **other.hugepage_limits})
        if other.unified:
            changes["unified"] = _frozen({**self.unified, **other.unified})
        return replaced(self, changes) if changes else self

    def set_fields(self) -> tuple[str, ...]:
        """Names of the fields that are set."""
        return tuple(
            name
            for name in _FIELDS
            if (
                bool(getattr(self, name))
                if name in _MAP_FIELDS
                else getattr(self, name) is not None
            )
        )

    def only_cpusets(self) -> bool:
        """Whether no field but ``cpus`` and ``mems`` is set (the usual change)."""
        return _others_of(self) == _NO_OTHERS and not self.hugepage_limits and not self.unified

    def is_empty(self) -> bool:
        return _scalars_of(self) == _NO_SCALARS and not self.hugepage_limits and not self.unified

    def difference(self, base: LinuxResources) -> LinuxResources:
        """The fields of ``self`` that ``base`` does not already have with the same value."""
        if self.only_cpusets():
            return self._cpuset_difference(base)  # the common change: cpus and/or mems
        changes: dict[str, Any] = {}
        for name, mine, theirs in zip(_SCALARS, _scalars_of(self), _scalars_of(base), strict=True):
            if mine is not None and mine != theirs:
                changes[name] = mine
        for name in _MAP_FIELDS:
            ours: Mapping[str, Any] = getattr(self, name)
            known: Mapping[str, Any] = getattr(base, name)
            diff = {k: v for k, v in ours.items() if known.get(k) != v}
            if diff:
                changes[name] = _frozen(diff)
        return replaced(NO_RESOURCES, changes) if changes else NO_RESOURCES

    def _cpuset_difference(self, base: LinuxResources) -> LinuxResources:
        cpus, mems = self.cpus, self.mems
        new_cpus = cpus is not None and cpus != base.cpus
        new_mems = mems is not None and mems != base.mems
        if new_cpus == (cpus is not None) and new_mems == (mems is not None):
            return self  # every field set here is a change
        if new_cpus:
            return only_field("cpus", cpus)
        if new_mems:
            return only_field("mems", mems)
        return NO_RESOURCES


def _frozen(values: dict[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(values)


_last_only: tuple[str, CPUSet | None, LinuxResources | None] = ("", None, None)


def only_field(field: str, value: CPUSet | None) -> LinuxResources:
    """Resources setting only ``field`` (cpus or mems) to ``value``.

    A policy usually gives every container of a pool the very same set object, one container
    after the other: the last one made is handed out again for it (values are immutable)."""
    global _last_only
    last_field, last_value, made = _last_only
    if value is last_value and field == last_field and made is not None:
        return made
    made = replaced(NO_RESOURCES, {field: value})
    _last_only = (field, value, made)  # one tuple: threads never see a mixed pair
    return made


_FIELDS = tuple(f.name for f in attrs.fields(LinuxResources))
_SCALARS = tuple(name for name in _FIELDS if name not in _MAP_FIELDS)
_scalars_of = operator.attrgetter(*_SCALARS)
_NO_SCALARS = (None,) * len(_SCALARS)
# the scalar fields other than cpus and mems
_others_of = operator.attrgetter(*(n for n in _SCALARS if n not in ("cpus", "mems")))
_NO_OTHERS = (None,) * (len(_SCALARS) - 2)

NO_RESOURCES = LinuxResources()


UNSIGNED_FIELDS = ("cpu_shares", "cpu_period", "cpu_realtime_period")
"""Unsigned in the OCI runtime spec (and NRI): a negative value is no setting at all."""


def negative_unsigned(resources: LinuxResources) -> str | None:
    """``cpu_shares: -100 is negative`` (or a hugepage limit's) when ``resources`` holds a
    negative value of a setting that is unsigned in OCI, else ``None``; a negative CPU quota
    means no limit and is fine. For the edges that take resources from outside."""
    for name in UNSIGNED_FIELDS:
        value = getattr(resources, name)
        if value is not None and value < 0:
            return f"{name}: {value} is negative"
    for size, limit in resources.hugepage_limits.items():
        if limit < 0:
            return f"hugepage_limits[{size!r}]: {limit} is negative"
    return None
