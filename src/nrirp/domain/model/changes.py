"""What policies change on containers: pending changes, adjustments, updates, host changes."""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from nrirp.domain.model._frozen import FieldsEqual, frozen_map
from nrirp.domain.model.resources import LinuxResources

RUNTIME_CONTROLLER = "runtime"
"""Controller that delivers changes the runtime can carry (NRI adjustments and updates)."""
HOST_CONTROLLER = "host"
"""Controller that applies changes the runtime cannot carry, directly on the host."""


@attrs.frozen
class Mount:
    """A mount to add to a container being created."""

    destination: str
    source: str
    type: str = "bind"
    options: tuple[str, ...] = ("ro", "rbind")


class SchedulingPolicy(enum.Enum):
    """Linux scheduling policy."""

    NONE = "none"
    OTHER = "other"
    FIFO = "fifo"
    RR = "rr"
    BATCH = "batch"
    IDLE = "idle"
    DEADLINE = "deadline"


@attrs.frozen
class Scheduling:
    """Scheduling parameters (the reference's scheduling classes)."""

    policy: SchedulingPolicy = SchedulingPolicy.NONE
    nice: int | None = None
    priority: int | None = None
    flags: tuple[str, ...] = ()
    runtime: int | None = None
    deadline: int | None = None
    period: int | None = None


class IOPriorityClass(enum.Enum):
    NONE = "none"
    REALTIME = "realtime"
    BEST_EFFORT = "best-effort"
    IDLE = "idle"


@attrs.frozen
class IOPriority:
    io_class: IOPriorityClass = IOPriorityClass.NONE
    priority: int = 0


@attrs.frozen(hash=False)
class HostChange:
    """Settings applied on the host because the runtime cannot carry them.

    ``cgroup`` holds cgroup settings by cgroup v2 file name (``memory.high``, ``cpu.idle``);
    the host adapter maps them onto v1 where needed. ``cpu_class`` names a CPU frequency/idle
    class for the container's CPUs.
    """

    cgroup: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    cpu_class: str | None = None
    scheduling: Scheduling | None = None
    io_priority: IOPriority | None = None

    def merged(self, other: HostChange) -> HostChange:
        return HostChange(
            cgroup={**self.cgroup, **other.cgroup},
            cpu_class=other.cpu_class if other.cpu_class is not None else self.cpu_class,
            scheduling=other.scheduling if other.scheduling is not None else self.scheduling,
            io_priority=other.io_priority if other.io_priority is not None else self.io_priority,
        )

    def is_empty(self) -> bool:
        return (
            not self.cgroup
            and self.cpu_class is None
            and self.scheduling is None
            and (self.io_priority is None)
        )


@attrs.frozen(eq=False, hash=False, slots=False)  # cheap copies and comparisons (see _frozen)
class PendingChanges(FieldsEqual):
    """Changes recorded on a container and not yet delivered, plus the controllers to act.

    ``resources`` holds only the fields that changed. Annotations, environment, mounts,
    scheduling and I/O priority for the runtime can only be set while the container is being
    created; on existing containers scheduling and I/O priority go to ``host``.
    """

    resources: LinuxResources = attrs.field(factory=LinuxResources)
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    mounts: tuple[Mount, ...] = ()
    scheduling: Scheduling | None = None
    io_priority: IOPriority | None = None
    host: HostChange = attrs.field(factory=HostChange)
    controllers: frozenset[str] = frozenset()

    def is_empty(self) -> bool:
        return not self.controllers


NO_CHANGES = PendingChanges()


@attrs.frozen(hash=False)
class Adjustment:
    """Changes to a container being created (NRI's ContainerAdjustment, neutral)."""

    container_id: str
    resources: LinuxResources = attrs.field(factory=LinuxResources)
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=frozen_map)
    mounts: tuple[Mount, ...] = ()
    scheduling: Scheduling | None = None
    io_priority: IOPriority | None = None

    def is_empty(self) -> bool:
        return (
            self.resources.is_empty()
            and not self.annotations
            and not self.env
            and not self.mounts
            and self.scheduling is None
            and self.io_priority is None
        )


@attrs.frozen(hash=False)
class Update:
    """Changes to the resources of an existing container (NRI's ContainerUpdate, neutral)."""

    container_id: str
    resources: LinuxResources
    ignore_failure: bool = False
