"""What the host controls hold after a step: CPU classes per CPU group, uncore per die,
interrupt affinities, resctrl groups, and the files the adapters wrote on the fake host tree
(what was applied, and how)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

import attrs

from nrirp.app.simulator.host import SimulatedHost, host_files
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.enforcer import HostEnforcer
from nrirp.domain.hostcontrol.power import CPUTarget


@attrs.frozen
class CPUGroupView:
    """CPUs of one class that run with the same settings (``None``: the host's own)."""

    cpus: str
    cpu_class: str
    min_khz: int | None = None
    max_khz: int | None = None
    governor: str | None = None
    epp: int | None = None
    disabled_cstates: tuple[str, ...] = ()

    def settings_text(self) -> str:
        parts = []
        if self.min_khz is not None:
            parts.append(f"min {self.min_khz} kHz")
        if self.max_khz is not None:
            parts.append(f"max {self.max_khz} kHz")
        if self.governor is not None:
            parts.append(f"governor {self.governor}")
        if self.epp is not None:
            parts.append(f"EPP {self.epp}")
        if self.disabled_cstates:
            parts.append(f"C-states off {', '.join(self.disabled_cstates)}")
        return ", ".join(parts) or "nothing this host can apply"


@attrs.frozen
class HostView:
    """The host after a step. ``files``: every file the adapters changed and its value now
    (paths relative to the fake host tree; empty without one); ``changed``: those whose value
    changed in this step."""

    cpu_classes: tuple[CPUGroupView, ...] = ()
    uncore: tuple[tuple[str, int | None, int | None], ...] = ()
    interrupts: tuple[tuple[int, str], ...] = ()
    default_irq_affinity: str | None = None
    rdt_groups: tuple[tuple[str, tuple[str, ...]], ...] = ()
    files: Mapping[str, str] = attrs.field(factory=dict)
    changed: tuple[str, ...] = ()

    def same_as(self, other: HostView | None) -> bool:
        """Nothing to show again: the same settings as after ``other``."""
        return other is not None and attrs.evolve(self, changed=()) == attrs.evolve(
            other, changed=()
        )

    def is_empty(self) -> bool:
        return self == HostView()


class HostWatcher:
    """Reads the host after each step and notes what changed since the step before."""

    def __init__(self, enforcer: HostEnforcer, host: SimulatedHost | None) -> None:
        self.enforcer = enforcer
        self.host = host
        self._files: dict[str, str] = {}

    def after_step(self) -> HostView:
        enforcer = self.enforcer
        files = {} if self.host is None else _flat(host_files(self.host))
        changed = tuple(p for p, v in files.items() if self._files.get(p) != v)
        changed += tuple(p for p in self._files if p not in files)
        self._files = files
        target = enforcer.power_target
        groups: dict[tuple[str, CPUTarget], list[int]] = defaultdict(list)
        for cpu, name in target.classes.items():
            groups[(name, target.cpus.get(cpu, CPUTarget()))].append(cpu)
        cpu_views = tuple(
            CPUGroupView(
                cpus=str(CPUSet.from_ids(cpus)),
                cpu_class=name,
                min_khz=t.min_khz,
                max_khz=t.max_khz,
                governor=t.governor,
                epp=t.epp,
                disabled_cstates=tuple(sorted(t.disabled_cstates or ())),
            )
            for (name, t), cpus in sorted(groups.items(), key=lambda kv: min(kv[1]))
        )
        uncore = tuple(
            (f"{package}/{die}", u.min_khz, u.max_khz)
            for (package, die), u in sorted(target.uncore.items())
        )
        affinities = enforcer.affinities
        plan = enforcer.resctrl_plan
        return HostView(
            cpu_classes=cpu_views,
            uncore=uncore,
            interrupts=tuple((n, str(c)) for n, c in sorted(affinities.irqs.items())),
            default_irq_affinity=None if affinities.default is None else str(affinities.default),
            rdt_groups=()
            if plan is None
            else tuple((group or "(root)", lines) for group, lines in plan.groups.items()),
            files=files,
            changed=changed,
        )


def _flat(written: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for kind in ("cpu", "irq"):
        out.update(written.get(kind, {}))
    for path, text in written.get("export", {}).items():
        out[path] = text.strip().replace("\n", " ")
    for group, schemata in written.get("resctrl", {}).items():
        name = f"sys/fs/resctrl/{group}/schemata" if group else "sys/fs/resctrl/schemata"
        out[name] = schemata.replace("\n", "; ")
    return out


def host_lines(view: HostView, shown_files: int = 4) -> list[str]:
    """The table's lines for the host after a step that changed it."""
    lines = [
        f"host: CPU class {g.cpu_class} on cpus {g.cpus}: {g.settings_text()}"
        for g in view.cpu_classes
    ]
    for die, low, high in view.uncore:
        values = [f"min {low} kHz" if low is not None else "", f"max {high} kHz" if high else ""]
        lines.append(f"host: uncore of die {die}: {', '.join(v for v in values if v)}")
    by_cpus: dict[str, list[int]] = defaultdict(list)
    for number, cpus in view.interrupts:
        by_cpus[cpus].append(number)
    for cpus, numbers in by_cpus.items():
        lines.append(f"host: interrupts {', '.join(map(str, numbers))} on cpus {cpus}")
    if view.default_irq_affinity is not None:
        lines.append(f"host: new interrupts on cpus {view.default_irq_affinity}")
    for group, schemata in view.rdt_groups:
        lines.append(f"host: resctrl group {group}: {'; '.join(schemata) or '(partition)'}")
    if view.changed:
        shown = ", ".join(
            f"{p}={view.files[p]}" if p in view.files else f"{p} (put back)"
            for p in view.changed[:shown_files]
        )
        more = len(view.changed) - shown_files
        tail = f", ... and {more} more" if more > 0 else ""
        lines.append(f"host: {len(view.changed)} files written: {shown}{tail}")
    if not lines:
        lines.append("host: every setting back as the host had it")
    return lines
