"""The simulator's host: a fake machine's host tree with the real host control adapters on
it, so a replay shows what was written and how; in-memory fakes otherwise (a ``--sysfs-root``
tree is never written to)."""

from __future__ import annotations

from typing import Any

import attrs

from nrirp.adapters.fakehw import FakeHardwareDiscovery, FakeHostTree
from nrirp.adapters.hostcontrol.cpufreq import SysfsCPUPower
from nrirp.adapters.hostcontrol.irq import ProcInterruptControl
from nrirp.adapters.hostcontrol.resctrl import ResctrlFs
from nrirp.adapters.memory import (
    InMemoryCPUPower,
    InMemoryInterrupts,
    InMemoryResctrl,
    InMemoryResourceExport,
)
from nrirp.domain.ports.cpu_power import CPUPowerControl
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.ports.interrupts import InterruptControl
from nrirp.domain.ports.resctrl import ResctrlControl
from nrirp.domain.ports.resource_export import ResourceExport


@attrs.frozen
class SimulatedHost:
    """The host ports of a simulation, and the tree they write into (``None``: in memory)."""

    cpu_power: CPUPowerControl
    interrupts: InterruptControl
    resctrl: ResctrlControl
    resource_export: ResourceExport
    tree: FakeHostTree | None = None


def simulated_host(hardware: HardwareDiscovery) -> SimulatedHost:
    """Real adapters on the fake machine's host tree (when its spec has a ``host``
    section), else in-memory ports that offer nothing."""
    export = InMemoryResourceExport("/var/lib/nrirp/containers")
    if isinstance(hardware, FakeHardwareDiscovery) and hardware.spec.host is not None:
        tree = FakeHostTree(hardware.spec)
        return SimulatedHost(
            cpu_power=SysfsCPUPower(tree.sysfs_root),
            interrupts=ProcInterruptControl(tree.procfs_root),
            resctrl=ResctrlFs(tree.resctrl_root),
            resource_export=export,
            tree=tree,
        )
    return SimulatedHost(
        cpu_power=InMemoryCPUPower(),
        interrupts=InMemoryInterrupts(
            unavailable="the simulated machine has no host section: no /proc/irq"
        ),
        resctrl=InMemoryResctrl(),
        resource_export=export,
    )


def cpu_power_of(host: SimulatedHost) -> CPUPowerControl:
    return host.cpu_power


def interrupts_of(host: SimulatedHost) -> InterruptControl:
    return host.interrupts


def resctrl_of(host: SimulatedHost) -> ResctrlControl:
    return host.resctrl


def resource_export_of(host: SimulatedHost) -> ResourceExport:
    return host.resource_export


def host_files(host: SimulatedHost) -> dict[str, Any]:
    """What the adapters wrote, for reports: ``{"cpu": {path: value}, "irq": {...},
    "resctrl": {group: schemata}, "export": {path: content}}`` with paths relative to the
    tree (the exports relative to the state directory; nothing else without a tree)."""
    out: dict[str, Any] = {"cpu": {}, "irq": {}, "resctrl": {}, "export": {}}
    export = host.resource_export
    if isinstance(export, InMemoryResourceExport):
        out["export"] = {
            f"containers/{cid}/resources.sh": text for cid, text in sorted(export.files.items())
        }
    tree = host.tree
    if tree is None:
        return out
    root = tree.root.rstrip("/") + "/"
    power, irq, resctrl = host.cpu_power, host.interrupts, host.resctrl
    if isinstance(power, SysfsCPUPower):
        out["cpu"] = {p.removeprefix(root): v for p, v in sorted(power.current().items())}
    if isinstance(irq, ProcInterruptControl):
        out["irq"] = {p.removeprefix(root): v for p, v in sorted(irq.current().items())}
    if isinstance(resctrl, ResctrlFs):
        out["resctrl"] = resctrl.groups()
    return out
