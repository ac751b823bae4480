"""Port: host-side control for what the runtime cannot carry (cgroupfs, resctrl, cpufreq)."""

from __future__ import annotations

from typing import Protocol

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import HostChange


class HostControlError(Exception):
    """A host setting could not be applied; the message names the file or knob and the cause."""


@attrs.frozen
class HostTarget:
    """Where a container lives on the host."""

    container_id: str
    pod_id: str
    cgroup_parent: str
    cgroups_path: str
    cpus: CPUSet | None = None
    pid: int | None = None


class HostControl(Protocol):
    """Applies :class:`HostChange` settings to a container's cgroup, tasks and CPUs.

    Adapters handle cgroup v1 and v2 (mapping v2 file names such as ``memory.high`` onto v1
    equivalents where one exists), CPU frequency classes and scheduling parameters. Calls are
    made with the pipeline lock held and should be quick; failures raise
    :class:`HostControlError` and are reported, not retried.
    """

    def apply(self, target: HostTarget, change: HostChange) -> None: ...

    def forget(self, target: HostTarget) -> None:
        """The container stopped: drop whatever the adapter tracked for it."""
        ...
