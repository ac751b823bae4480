"""The host enforcer: a policy's host-wide decisions applied through the host ports.

The resource manager owns one. At start it reads what the host offers (once); at start and at
every applied configuration it says what of the configured classes cannot be applied here (a
missing interrupt control only once, while configurations keep asking for interrupt affinity),
and lays out the resctrl groups; after every committed operation it asks the policy for its
:class:`HostAssignment` and, only when that changed, applies CPU classes and interrupt
affinities; it keeps each exporting container's ``resources.sh`` current; at shutdown it puts
back what it changed (but for the configured resctrl groups that hold tasks). A failing port
is reported and never fails an operation: placing containers goes on.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from nrirp.domain.cache import Cache
from nrirp.domain.config import PolicyConfig
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.assignment import (
    NO_ASSIGNMENT,
    HostAssigning,
    HostAssignment,
    ResourceExporting,
)
from nrirp.domain.hostcontrol.classes import ClassSettings
from nrirp.domain.hostcontrol.exports import TAG_EXPORT, render
from nrirp.domain.hostcontrol.interrupts import Affinities, Interrupt, plan_affinities
from nrirp.domain.hostcontrol.power import NO_CAPS, NO_TARGET, PowerCaps, PowerTarget, plan_power
from nrirp.domain.hostcontrol.resctrl import RdtPlanError, ResctrlPlan, plan_resctrl
from nrirp.domain.hostcontrol.support import class_support, power_notices
from nrirp.domain.ports.cpu_power import CPUPowerControl
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.ports.host_control import HostControlError
from nrirp.domain.ports.interrupts import InterruptControl
from nrirp.domain.ports.resctrl import ResctrlControl
from nrirp.domain.ports.resource_export import ResourceExport
from nrirp.domain.topology import Machine

Notify = Callable[[str, Severity], None]
SOURCE = "host"


class HostEnforcer:
    """Applies host-wide decisions; every port is optional (``None``: not applied here)."""

    def __init__(
        self,
        *,
        notify: Notify,
        power: CPUPowerControl | None = None,
        interrupts: InterruptControl | None = None,
        resctrl: ResctrlControl | None = None,
        export: ResourceExport | None = None,
    ) -> None:
        self._notify = notify
        self._power = power
        self._irq = interrupts
        self._resctrl = resctrl
        self.export = export
        self._machine: Machine | None = None
        self._policy: HostAssigning | None = None
        self._exporter: ResourceExporting | None = None
        self.caps: PowerCaps = NO_CAPS
        self._irqs: tuple[Interrupt, ...] | None = None
        self._irq_problem: str | None = None
        self._irq_said: str | None = None  # the interrupt problem last warned about
        self._applied: HostAssignment | None = None
        """The assignment applied last; ``None`` until the first, which is applied even when
        it asks nothing (the ports then give back what a killed daemon left, journalled)."""
        self.power_target: PowerTarget = NO_TARGET
        self.affinities: Affinities = Affinities()
        self.resctrl_plan: ResctrlPlan | None = None
        self._rdt_cleared = False  # the resctrl port holds no group (RDT off, cleared)
        self._exported: dict[str, str] = {}
        self._support: dict[str, CPUSet] = {}

    # ------------------------------------------------------------------ lifecycle
    def start(self, machine: Machine, policy: object) -> None:
        """Read what the host offers, once; ``policy`` is asked for its assignments and
        exports when it provides them."""
        self._machine = machine
        self._policy = _as_assigning(policy)
        self._exporter = _as_exporting(policy)
        if self._power is not None:
            self.caps = self._power.capabilities()
        if self._irq is not None:
            try:
                self._irqs = self._irq.interrupts()
            except HostControlError as exc:
                self._irq_problem = str(exc)

    def configured(self, config: PolicyConfig | None, cache: Cache) -> None:
        """A configuration took effect: say what of it cannot be applied, lay out resctrl,
        and pick up the exporting containers (after a restart)."""
        self._support.clear()
        assignment = self._assignment()
        classes = assignment.classes
        machine = self._machine
        if classes and machine is not None:
            if self._power is None:
                self._notify(
                    f"CPU classes {', '.join(classes)} are not applied: "
                    "no CPU power control in this environment",
                    Severity.INFO,
                )
            else:
                has_uncore = bool(self.caps.uncore)
                for line in power_notices(classes, self.caps, machine.online, has_uncore):
                    self._notify(line, Severity.WARNING)
        # the host's lack of interrupt control is read once, at start: said at the first
        # configuration asking for interrupt affinity, not again at every reload
        lacking = self._irq_problem if assignment.interrupts is not None else None
        if lacking is not None and lacking != self._irq_said:
            self._notify(f"interrupt affinity is not applied: {lacking}", Severity.WARNING)
        self._irq_said = lacking
        if config is not None:
            self._configure_rdt(config)
        self._exported = {
            c.id: self._exported.get(c.id, "")
            for c in cache.active_containers()
            if c.tags.get(TAG_EXPORT)
        }

    def class_support(self, name: str) -> CPUSet | None:
        """The CPUs where every setting of CPU class ``name`` takes effect; ``None`` when
        that is not known (no CPU power control, or no such class)."""
        if self._power is None or self._machine is None:
            return None
        found = self._support.get(name)
        if found is None:
            settings = self._assignment().classes.get(name)
            if settings is None:
                return None
            found = class_support(settings, self.caps, self._machine.online)
            self._support[name] = found
        return found

    def after_commit(self, cache: Cache, changed: bool) -> None:
        """An operation committed (``changed``: it changed some container's resources):
        apply the policy's assignment if it changed, and refresh the exports."""
        policy = self._policy
        if policy is not None:
            assignment = policy.host_assignment()
            applied = self._applied
            if applied is None or (assignment is not applied and assignment != applied):
                self._apply(assignment)
        if self._exported and (changed or "" in self._exported.values()):
            self._refresh_exports(cache)

    def close(self) -> None:
        """Put back what was changed on the host (shutdown). The configured resctrl groups
        that hold tasks stay (a restarted daemon adopts them; runc placed the tasks only at
        creation); the port removes its others."""
        ports: tuple[tuple[CPUPowerControl | InterruptControl | ResctrlControl | None, str], ...]
        ports = (
            (self._power, "CPU classes"),
            (self._irq, "interrupt affinity"),
            (self._resctrl, "resctrl groups"),
        )
        for port, what in ports:
            if port is not None:
                self._guard(f"restoring {what}", port.restore)
        self._applied = None
        self.power_target = NO_TARGET
        self.affinities = Affinities()
        self.resctrl_plan = None

    # ------------------------------------------------------------------ exports
    def exporting(self, container_id: str) -> bool:
        return container_id in self._exported

    def start_export(self, container_id: str) -> str | None:
        """The host directory to mount into a container that asked for the export, ``None``
        when there is no export port or the policy exports nothing."""
        if self.export is None or self._exporter is None:
            return None
        self._exported.setdefault(container_id, "")
        return self.export.location(container_id)

    def _refresh_exports(self, cache: Cache) -> None:
        export, exporter = self.export, self._exporter
        assert export is not None and exporter is not None
        for cid in list(self._exported):
            ctr = cache.container(cid)
            try:
                if ctr is None or not ctr.state.holds_resources:
                    del self._exported[cid]
                    export.remove(cid)
                    continue
                content = render(exporter.exported_resources(cid) or {})
                if content != self._exported[cid]:
                    self._exported[cid] = content
                    export.write(cid, content)
            except HostControlError as exc:
                self._notify(f"resources.sh of container {cid}: {exc}", Severity.ERROR)

    # ------------------------------------------------------------------ internals
    def _assignment(self) -> HostAssignment:
        return self._policy.host_assignment() if self._policy is not None else NO_ASSIGNMENT

    def _apply(self, assignment: HostAssignment) -> None:
        first = self._applied is None
        self._applied = assignment
        machine, power, irq = self._machine, self._power, self._irq
        if power is not None and machine is not None:
            target = plan_power(
                assignment.cpu_classes,
                assignment.classes,
                self.caps,
                machine,
                assignment.turbo_domain,
            )
            if first or target != self.power_target:
                self.power_target = target
                self._guard("CPU classes", lambda: power.apply(target))
        if irq is not None and self._irqs is not None:
            affinities = plan_affinities(assignment.interrupts, self._irqs)
            if first or affinities != self.affinities:
                self.affinities = affinities
                self._guard("interrupt affinity", lambda: irq.apply(affinities))

    def _configure_rdt(self, config: PolicyConfig) -> None:
        resctrl = self._resctrl
        if resctrl is None:
            return
        rdt = config.control.rdt
        if not rdt.enable or not any(p.classes for p in rdt.partitions.values()):
            # RDT off: the groups go now, tasks or not (also those a previous daemon left,
            # at the first configuration); at shutdown there is nothing left to keep
            if self.resctrl_plan is not None or not self._rdt_cleared:
                self.resctrl_plan = None
                self._rdt_cleared = True
                self._guard("resctrl groups", resctrl.clear)
            return
        try:
            info = resctrl.info()
        except HostControlError as exc:
            self._notify(f"RDT classes are not applied: {exc}", Severity.WARNING)
            return
        try:
            plan = plan_resctrl(rdt, info)
        except RdtPlanError as exc:
            for problem in exc.problems:
                self._notify(f"RDT classes are not applied: {problem}", Severity.ERROR)
            return
        for note in plan.notes:
            self._notify(note, Severity.INFO)
        if plan != self.resctrl_plan:
            self.resctrl_plan = plan
            self._rdt_cleared = False
            self._guard("resctrl groups", lambda: resctrl.apply(plan))

    def _guard(self, what: str, call: Callable[[], None]) -> None:
        try:
            call()
        except HostControlError as exc:
            self._notify(f"{what}: {exc}", Severity.ERROR)

    @property
    def classes(self) -> Mapping[str, ClassSettings]:
        return self._assignment().classes


def _as_assigning(policy: object) -> HostAssigning | None:
    """The policy as a :class:`HostAssigning`, if it is one (checked once, at start)."""
    method = getattr(policy, "host_assignment", None)
    return policy if callable(method) else None  # type: ignore[return-value]


def _as_exporting(policy: object) -> ResourceExporting | None:
    method = getattr(policy, "exported_resources", None)
    return policy if callable(method) else None  # type: ignore[return-value]
