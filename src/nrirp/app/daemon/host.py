"""The daemon's host control adapters: what it writes on the node besides NRI.

Config keys (``DaemonContainer.config``): ``sysfs_root`` (``/sys``: cpufreq, cpuidle, uncore,
and resctrl at ``<sysfs_root>/fs/resctrl``), the procfs tree beside it (``/proc``: interrupts),
``state_dir`` (the original values of what is changed are kept there, and the per-container
``resources.sh`` under ``containers/``), ``cgroup_root`` and ``host_controls``: which controls
are on (``--host-control``), of :data:`HOST_CONTROLS`; ``None`` for all.
"""

from __future__ import annotations

import os
from collections.abc import Collection

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.hostcontrol.cpufreq import SysfsCPUPower
from nrirp.adapters.hostcontrol.export import DirectoryResourceExport
from nrirp.adapters.hostcontrol.host import HostAdapter
from nrirp.adapters.hostcontrol.irq import ProcInterruptControl
from nrirp.adapters.hostcontrol.resctrl import ResctrlFs
from nrirp.adapters.hostcontrol.sched import ProcessScheduler
from nrirp.domain.ports.cpu_power import CPUPowerControl
from nrirp.domain.ports.host_control import HostControl
from nrirp.domain.ports.interrupts import InterruptControl
from nrirp.domain.ports.resctrl import ResctrlControl
from nrirp.domain.ports.resource_export import ResourceExport

HOST_CONTROLS = ("cpu", "irq", "rdt", "sched", "export")
"""``cpu``: CPU classes (cpufreq, cpuidle, uncore); ``irq``: interrupt affinity; ``rdt``:
resctrl groups; ``sched``: scheduling classes applied to tasks when NRI cannot carry them;
``export``: ``resources.sh``."""

DEFAULT_SYSFS = "/sys"
DEFAULT_STATE_DIR = "/var/lib/nrirp"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"


def _on(name: str, enabled: Collection[str] | None) -> bool:
    return enabled is None or name in enabled


def _procfs_beside(sysfs_root: str | None) -> str:
    """``/proc`` for ``/sys``, ``X/proc`` for a tree at ``X/sys`` (as hardware discovery)."""
    root = (sysfs_root or DEFAULT_SYSFS).rstrip("/") or "/"
    return os.path.join(os.path.dirname(root) or "/", "proc")


def cpu_power(
    sysfs_root: str | None, state_dir: str | None, enabled: Collection[str] | None
) -> CPUPowerControl | None:
    if not _on("cpu", enabled):
        return None
    journal = os.path.join(state_dir or DEFAULT_STATE_DIR, "host-cpu-power.json")
    return SysfsCPUPower(sysfs_root or DEFAULT_SYSFS, journal)


def interrupts(
    sysfs_root: str | None, state_dir: str | None, enabled: Collection[str] | None
) -> InterruptControl | None:
    if not _on("irq", enabled):
        return None
    journal = os.path.join(state_dir or DEFAULT_STATE_DIR, "host-interrupts.json")
    return ProcInterruptControl(_procfs_beside(sysfs_root), journal)


def resctrl(
    sysfs_root: str | None, state_dir: str | None, enabled: Collection[str] | None
) -> ResctrlControl | None:
    if not _on("rdt", enabled):
        return None
    journal = os.path.join(state_dir or DEFAULT_STATE_DIR, "host-resctrl.json")
    return ResctrlFs(os.path.join(sysfs_root or DEFAULT_SYSFS, "fs", "resctrl"), journal)


def resource_export(
    state_dir: str | None, enabled: Collection[str] | None
) -> ResourceExport | None:
    if not _on("export", enabled):
        return None
    return DirectoryResourceExport(os.path.join(state_dir or DEFAULT_STATE_DIR, "containers"))


def cgroupfs(cgroup_root: str | None) -> CgroupfsHostControl:
    return CgroupfsHostControl(cgroup_root or DEFAULT_CGROUP_ROOT)


def host_control(
    cgroups: CgroupfsHostControl, sysfs_root: str | None, enabled: Collection[str] | None
) -> HostControl:
    """cgroup files always; task scheduling when ``sched`` is on."""
    if not _on("sched", enabled):
        return cgroups
    return HostAdapter(cgroups, ProcessScheduler(_procfs_beside(sysfs_root)))
