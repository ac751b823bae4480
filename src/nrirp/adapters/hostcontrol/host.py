"""``HostAdapter``: the HostControl port on a real host, cgroup files and task scheduling."""

from __future__ import annotations

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.hostcontrol.sched import ProcessScheduler
from nrirp.domain.model import HostChange
from nrirp.domain.ports.host_control import HostControlError, HostTarget


class HostAdapter:
    """Cgroup settings go to :class:`CgroupfsHostControl`; scheduling class and I/O priority
    to every task of the container (the processes of its cgroup, else its main process)
    through :class:`ProcessScheduler`. Every failure is collected into one
    :class:`HostControlError` after what could be applied was."""

    def __init__(
        self, cgroups: CgroupfsHostControl, scheduler: ProcessScheduler | None = None
    ) -> None:
        self.cgroups = cgroups
        self.scheduler = scheduler or ProcessScheduler()

    def apply(self, target: HostTarget, change: HostChange) -> None:
        problems: list[str] = []
        if change.cgroup:
            try:
                self.cgroups.apply(target, HostChange(cgroup=change.cgroup))
            except HostControlError as exc:
                problems.append(str(exc))
        if change.scheduling is not None or change.io_priority is not None:
            try:
                tids = self.scheduler.threads(self._processes(target))
                self.scheduler.apply(tids, change.scheduling, change.io_priority)
            except HostControlError as exc:
                problems.append(f"container {target.container_id}: {exc}")
        if problems:
            raise HostControlError("; ".join(problems))

    def forget(self, target: HostTarget) -> None:
        self.cgroups.forget(target)

    def _processes(self, target: HostTarget) -> list[int]:
        try:
            found = self.cgroups.tasks(target)
        except HostControlError:
            found = []
        if not found and target.pid:
            found = [target.pid]
        if not found:
            raise HostControlError("no process to apply the scheduling class to")
        return found
