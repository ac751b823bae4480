"""Containers as the cache knows them, with their pending changes."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model._frozen import EMPTY_MAP, FieldsEqual, frozen_map, replaced
from nrirp.domain.model.changes import (
    HOST_CONTROLLER,
    NO_CHANGES,
    RUNTIME_CONTROLLER,
    HostChange,
    IOPriority,
    Mount,
    PendingChanges,
    Scheduling,
)
from nrirp.domain.model.requirements import Requirements
from nrirp.domain.model.resources import NO_RESOURCES, LinuxResources, only_field


class ContainerState(enum.Enum):
    """NRI container states plus the cache's synthetic ``CREATING`` and ``STALE``."""

    CREATING = "creating"
    CREATED = "created"
    PAUSED = "paused"
    RUNNING = "running"
    STOPPED = "stopped"
    UNKNOWN = "unknown"
    STALE = "stale"

    @property
    def holds_resources(self) -> bool:
        """Whether a container in this state has (or is about to have) resources allocated."""
        return self._value_ in _ACTIVE_VALUES  # by value: an enum's hash is Python code


_ACTIVE = frozenset(
    {ContainerState.CREATING, ContainerState.CREATED, ContainerState.PAUSED, ContainerState.RUNNING}
)
_ACTIVE_VALUES = frozenset(state.value for state in _ACTIVE)


class ContainerChangeError(ValueError):
    """Raised for a change that cannot be made to a container in its current state."""


@attrs.frozen
class Device:
    """A device node passed to the container (used for topology hints)."""

    path: str
    type: str = "c"
    major: int = 0
    minor: int = 0


# Fields in an instance dict, compared as one (FieldsEqual): a changed cpuset or cleared pending
# changes is one dict copy (``replaced``) instead of ``__init__`` with every converter
@attrs.frozen(eq=False, hash=False, slots=False)
class Container(FieldsEqual):
    """A container: identity, metadata, current resources, requirements and pending changes.

    ``resources`` are the container's current settings: what the runtime reported, with every
    change the policy made on top. ``requirements`` were estimated from the settings the runtime
    reported at creation or update. Values are immutable; the ``with_*`` methods return a changed
    copy that records the change as pending for the controller that will deliver it.
    """

    id: str
    pod_id: str
    name: str = ""
    state: ContainerState = ContainerState.CREATING
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    resources: LinuxResources = attrs.field(factory=LinuxResources)
    requirements: Requirements = attrs.field(factory=Requirements)
    oom_score_adj: int | None = None
    cgroups_path: str = ""
    mounts: tuple[Mount, ...] = ()
    devices: tuple[Device, ...] = ()
    pid: int | None = None
    tags: Mapping[str, str] = attrs.field(default=EMPTY_MAP, converter=frozen_map)
    """Free-form notes a policy keeps on the container (persisted). Empty by default: the one
    shared read-only empty mapping, not a new one per container."""
    created_at: float | None = None
    pending: PendingChanges = NO_CHANGES

    # ------------------------------------------------------------------ derived
    @property
    def cpus(self) -> CPUSet | None:
        return self.resources.cpus

    @property
    def mems(self) -> CPUSet | None:
        return self.resources.mems

    # ------------------------------------------------------------------ changes
    def with_resources(
        self, change: LinuxResources, *, tags: Mapping[str, str] | None = None
    ) -> Container:
        """Apply the set fields of ``change``; fields equal to the current value are no-ops.
        ``tags`` are added as :meth:`with_tags` adds them, in the same copy."""
        found = self._resource_change(change)
        extra: dict[str, Any] = {} if tags is None else {"tags": _merged_tags(self.tags, tags)}
        if found is None:
            return replaced(self, extra) if extra else self
        return self._with_runtime_change(found[0], found[1], extra)

    def _resource_change(
        self, change: LinuxResources
    ) -> tuple[LinuxResources, LinuxResources] | None:
        """What ``change`` changes (effective) and the resources after it; ``None``: nothing."""
        resources = self.resources
        if _only_cpusets(change):  # the usual change: a pool's cpus and/or mems
            cpus, mems = change.cpus, change.mems
            if cpus is not None and (cpus is resources.cpus or cpus == resources.cpus):
                cpus = None
            if mems is not None and (mems is resources.mems or mems == resources.mems):
                mems = None
            if cpus is None:
                if mems is None:
                    return None
                effective = change if change.cpus is None else only_field("mems", mems)
                return effective, replaced(resources, {"mems": mems})
            if mems is None:
                effective = change if change.mems is None else only_field("cpus", cpus)
                return effective, replaced(resources, {"cpus": cpus})
            return change, replaced(resources, {"cpus": cpus, "mems": mems})
        effective = change.difference(resources)
        if effective is NO_RESOURCES or effective.is_empty():
            return None
        return effective, resources.merged(effective)

    def _with_runtime_change(
        self, effective: LinuxResources, resources: LinuxResources, extra: dict[str, Any]
    ) -> Container:
        """This container with ``resources`` (and the fields in ``extra``), ``effective``
        (what changed) pending for the runtime controller."""
        pending = self.pending
        if pending is NO_CHANGES:  # nothing pending (the usual case): no merging needed
            new_pending = _runtime_pending(effective)
        else:
            controllers = pending.controllers
            if RUNTIME_CONTROLLER not in controllers:
                controllers = controllers | _RUNTIME if controllers else _RUNTIME
            pending_resources = pending.resources
            if not pending_resources.is_empty():
                effective_pending = pending_resources.merged(effective)
            else:
                effective_pending = effective
            new_pending = replaced(
                pending, {"resources": effective_pending, "controllers": controllers}
            )
        extra["resources"] = resources
        extra["pending"] = new_pending
        return replaced(self, extra)

    def with_cpus(self, cpus: CPUSet) -> Container:
        return self.with_resources(LinuxResources(cpus=cpus))

    def with_mems(self, mems: CPUSet) -> Container:
        return self.with_resources(LinuxResources(mems=mems))

    def with_creation_extras(
        self,
        *,
        annotations: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        mounts: tuple[Mount, ...] = (),
    ) -> Container:
        """Add annotations, environment or mounts; only while the container is being created."""
        if self.state is not ContainerState.CREATING:
            raise ContainerChangeError(
                f"container {self.name or self.id}: annotations, env and mounts can only be "
                f"set at creation (state is {self.state.value})"
            )
        pending = self.pending
        by_destination = {m.destination: m for m in pending.mounts}
        by_destination.update({m.destination: m for m in mounts})
        return attrs.evolve(
            self,
            pending=attrs.evolve(
                pending,
                annotations={**pending.annotations, **(annotations or {})},
                env={**pending.env, **(env or {})},
                mounts=tuple(by_destination.values()),
                controllers=pending.controllers | {RUNTIME_CONTROLLER},
            ),
        )

    def with_scheduling(
        self, scheduling: Scheduling | None = None, io_priority: IOPriority | None = None
    ) -> Container:
        """Set scheduling / I/O priority: by the runtime at creation, by the host afterwards."""
        pending = self.pending
        if self.state is ContainerState.CREATING:
            pending = attrs.evolve(
                pending,
                scheduling=scheduling if scheduling is not None else pending.scheduling,
                io_priority=io_priority if io_priority is not None else pending.io_priority,
                controllers=pending.controllers | {RUNTIME_CONTROLLER},
            )
            return attrs.evolve(self, pending=pending)
        return self.with_host_change(HostChange(scheduling=scheduling, io_priority=io_priority))

    def with_host_change(self, change: HostChange) -> Container:
        """Record settings for the host controller (cgroup files, CPU class, ...)."""
        if change.is_empty():
            return self
        pending = self.pending
        return attrs.evolve(
            self,
            pending=attrs.evolve(
                pending,
                host=pending.host.merged(change),
                controllers=pending.controllers | {HOST_CONTROLLER},
            ),
        )

    def with_tags(self, **tags: str) -> Container:
        return replaced(self, {"tags": _merged_tags(self.tags, tags)})

    def without_pending(self, controller: str) -> Container:
        """Forget what ``controller`` had to deliver (it has acted)."""
        controllers = self.pending.controllers
        if controller not in controllers:
            return self
        if len(controllers) == 1:  # it was the only one (the usual case)
            return replaced(self, {"pending": NO_CHANGES})
        pending = self.pending
        controllers = controllers - {controller}
        changes: dict[str, Any] = {"controllers": controllers}
        if controller == RUNTIME_CONTROLLER:
            changes.update(
                resources=LinuxResources(),
                annotations={},
                env={},
                mounts=(),
                scheduling=None,
                io_priority=None,
            )
        elif controller == HOST_CONTROLLER:
            changes["host"] = HostChange()
        return attrs.evolve(self, pending=attrs.evolve(pending, **changes))

    def admitted(
        self, *, state: ContainerState, requirements: Requirements, created_at: float | None
    ) -> Container:
        """This container as a fresh cache entry: in ``state``, with ``requirements``, nothing
        pending (a copy without ``__init__``: the values given are final)."""
        return replaced(
            self,
            {
                "state": state,
                "requirements": requirements,
                "created_at": created_at,
                "pending": NO_CHANGES,
            },
        )

    def with_process(self, pid: int | None, cgroups_path: str) -> Container:
        """With the process id and cgroups path the runtime reports."""
        return replaced(self, {"pid": pid, "cgroups_path": cgroups_path})

    def with_state(self, state: ContainerState) -> Container:
        return self if state is self.state else replaced(self, {"state": state})


_RUNTIME = frozenset({RUNTIME_CONTROLLER})
_TAG_SETS: dict[tuple[tuple[str, str], ...], Mapping[str, str]] = {}


def _merged_tags(current: Mapping[str, str], tags: Mapping[str, str]) -> Mapping[str, str]:
    """``current`` with ``tags`` added, read-only. A container's first tags (a grant's: its
    pool, kind, CPUs and memory zone) are the same for many containers: the one mapping of
    those tags, in that order, is shared (values are immutable)."""
    if current:
        return MappingProxyType({**current, **tags})
    key = tuple(tags.items())
    shared = _TAG_SETS.get(key)
    if shared is None:
        shared = MappingProxyType(dict(tags))
        if len(_TAG_SETS) >= 1024:
            _TAG_SETS.clear()
        _TAG_SETS[key] = shared
    return shared


_last_kind: tuple[LinuxResources | None, bool] = (None, False)


def _only_cpusets(change: LinuxResources) -> bool:
    """``change.only_cpusets()``, remembered for the last change object: a policy hands the
    very same change to every container of a pool."""
    global _last_kind
    last, kind = _last_kind
    if change is last:
        return kind
    kind = change.only_cpusets()
    _last_kind = (change, kind)  # one tuple: threads never see a mixed pair
    return kind


_last_pending: tuple[LinuxResources | None, PendingChanges] = (None, NO_CHANGES)


def _runtime_pending(resources: LinuxResources) -> PendingChanges:
    """Pending changes of only ``resources`` for the runtime controller.

    Containers moved together (a pool's shared containers) get the same change one after the
    other: the last pending changes made are handed out again for an equal change (values are
    immutable; the comparison is cheap, the sets in it are usually the very same objects)."""
    global _last_pending
    last, made = _last_pending
    if resources is last or resources == last:
        return made
    made = replaced(NO_CHANGES, {"resources": resources, "controllers": _RUNTIME})
    _last_pending = (resources, made)  # one tuple: threads never see a mixed pair
    return made
