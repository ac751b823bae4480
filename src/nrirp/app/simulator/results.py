"""What a replay produces: per step, the outcome and every container as the runtime holds it."""

from __future__ import annotations

import enum

import attrs

from nrirp.app.simulator.expect import CheckResult
from nrirp.app.simulator.host_view import HostView
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import IOPriority, Scheduling
from nrirp.domain.ports.decisions import Decision, Notice


class Change(enum.Enum):
    """How a container's row differs from the previous step."""

    NEW = "new"
    CHANGED = "changed"
    UNCHANGED = "unchanged"


@attrs.frozen
class PodView:
    """A pod sandbox in the runtime after a step."""

    namespace: str
    name: str
    uid: str
    id: str
    qos: str
    cgroup_parent: str
    state: str


@attrs.frozen
class ContainerView:
    """A container as the simulated runtime runs it after a step (after every adjustment and
    update), next to what the policy decided for it (the resource manager's cache)."""

    namespace: str
    pod: str
    name: str
    id: str
    state: str
    qos: str
    cpus: CPUSet | None
    mems: CPUSet | None
    cpu_shares: int | None
    cpu_quota: int | None
    cpu_period: int | None
    memory_limit: int | None
    oom_score_adj: int | None
    change: Change = Change.UNCHANGED
    decided_cpus: CPUSet | None = None
    decided_mems: CPUSet | None = None
    known_to_policy: bool = True
    pool: str | None = None
    """The pool or balloon of the policy holding the container's allocation, if any."""
    scheduling: Scheduling | None = None
    """Its scheduling settings as adjusted (at creation, or on the host since)."""
    io_priority: IOPriority | None = None
    """Its I/O priority as adjusted (at creation, or on the host since)."""
    rdt_class: str | None = None
    """Its RDT class (the resctrl group it joins), as the runtime holds it."""
    blockio_class: str | None = None
    """Its block I/O class, as the runtime holds it."""
    applied_by: str | None = None
    """Who applied its scheduling class and I/O priority: ``nri`` (the runtime, from the
    creation adjustment), ``host`` (the host controller, on its tasks after it started: the
    runtime's NRI cannot carry them), or ``None``."""

    @property
    def matches_decision(self) -> bool:
        """The runtime holds the cpus and mems the policy decided (vacuously true when the
        resource manager does not know the container)."""
        if not self.known_to_policy:
            return True
        return self.cpus == self.decided_cpus and self.mems == self.decided_mems

    def settings(self) -> tuple[object, ...]:
        return (
            self.state,
            self.cpus,
            self.mems,
            self.cpu_shares,
            self.cpu_quota,
            self.cpu_period,
            self.memory_limit,
        )


@attrs.frozen
class BalloonView:
    """A balloon of the ``balloons`` policy after a step (from the policy's description):
    its CPUs, the idle CPUs it shares, its memory nodes, CPU class and containers."""

    name: str
    type: str
    cpus: str
    shared_idle_cpus: str
    mems: str
    cpu_class: str | None
    containers: tuple[str, ...]
    components: tuple[BalloonView, ...] = ()


@attrs.frozen
class PoolView:
    """A pool of a policy that has pools (topology-aware) after a step, from its description:
    its CPUs, the shared, reserved and free isolated ones among them, its memory nodes and the
    containers whose allocation it holds."""

    name: str
    kind: str
    parent: str | None
    cpus: str
    shared: str
    reserved: str
    isolated: str
    mems: str
    containers: tuple[str, ...]
    """``namespace/pod/container`` of the allocations it holds, sorted."""
    container_ids: tuple[str, ...] = attrs.field(default=(), eq=False)


@attrs.frozen
class StepResult:
    """One replayed step: what it did, whether it succeeded (``errors`` say why not), the
    decisions and notices the resource manager recorded meanwhile, and the state after it."""

    number: int
    kind: str
    description: str
    note: str
    errors: tuple[str, ...]
    decisions: tuple[Decision, ...]
    notices: tuple[Notice, ...]
    pods: tuple[PodView, ...]
    containers: tuple[ContainerView, ...]
    expected_error: str | bool | None = None
    unmet_expectation: str | None = None
    """Why the outcome differs from what the step expected (``expectError``), or ``None``."""
    balloons: tuple[BalloonView, ...] = ()
    """The policy's balloons after the step (policies that have balloons)."""
    pools: tuple[PoolView, ...] = ()
    """The policy's pools after the step (policies that have pools)."""
    checks: tuple[CheckResult, ...] = ()
    """The verdicts of the step's ``expect`` checks."""
    host: HostView | None = None
    """What the host controls hold after the step (CPU classes, uncore, interrupts, resctrl,
    the files written), when the replay watched the host."""
    host_changed: bool = False
    """``host`` differs from what it was after the step before."""
    state_shown: bool = True
    """``pods``, ``containers``, ``balloons`` and ``pools`` were read after the step (a long
    recording's replay reads them after its last step only)."""

    @property
    def ok(self) -> bool:
        """The step succeeded."""
        return not self.errors

    @property
    def failed_checks(self) -> tuple[CheckResult, ...]:
        return tuple(c for c in self.checks if not c.ok)

    @property
    def as_expected(self) -> bool:
        """Succeeded, or failed as ``expectError`` said it would, and every check held."""
        if self.unmet_expectation is not None or self.failed_checks:
            return False
        return self.ok or self.expected_error is not None


@attrs.frozen
class ReplayResult:
    """A whole replay and the setting it ran in."""

    policy: str
    hardware: str
    cpus: CPUSet
    nodes: CPUSet
    nri_version: str
    workload: str
    description: str
    config_file: str | None
    steps: tuple[StepResult, ...]
    start_notices: tuple[Notice, ...] = ()
    """What the policy and the host said when they started with the configuration, before
    the first step (warnings about settings that cannot apply here, say)."""

    @property
    def failed(self) -> tuple[StepResult, ...]:
        """Steps that failed (expected or not)."""
        return tuple(s for s in self.steps if not s.ok)

    @property
    def unexpected(self) -> tuple[StepResult, ...]:
        """Steps whose outcome is not what the workload expected."""
        return tuple(s for s in self.steps if not s.as_expected)
