"""Replaying a workload through the real pipeline and the simulated runtime.

Every step drives the simulated runtime the way a kubelet drives containerd; the runtime calls
our NRI plugin, which runs the resource manager and the policy, and applies the adjustments and
updates it gets back. Policy-initiated updates (after reconfiguration, events, removals) go
through NRI's UpdateContainers asynchronously; the replay waits until they are delivered before
it records the state. A step that fails is recorded with its errors and the replay goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.memory import RecordingDecisionLog
from nrirp.adapters.recording.format import Synchronize
from nrirp.adapters.system import ConfigFileError, read_config_file
from nrirp.app.simulator import recorded
from nrirp.app.simulator.cluster import SimulatedCluster, needs_cluster
from nrirp.app.simulator.composition import SimulatorContainer
from nrirp.app.simulator.describe import describe_step
from nrirp.app.simulator.expect import (
    CheckedContainer,
    CheckedPool,
    StepState,
    check_step,
)
from nrirp.app.simulator.host_view import HostView, HostWatcher
from nrirp.app.simulator.policy_view import adjusted_settings, holders, pool_views
from nrirp.app.simulator.results import (
    BalloonView,
    Change,
    ContainerView,
    PodView,
    PoolView,
    ReplayResult,
    StepResult,
)
from nrirp.app.simulator.simulation import Simulation
from nrirp.app.simulator.updates import SettledTimeoutError, SettlingRuntimeUpdates
from nrirp.app.simulator.workload import (
    RECORDED_KINDS,
    ApplyConfig,
    CreatePod,
    DeleteConfig,
    DeletePod,
    Event,
    ExitContainer,
    LabelNode,
    Reconfigure,
    RestartContainer,
    Step,
    UpdateContainer,
    Workload,
)
from nrirp.domain.config import ConfigError, PolicySpecs
from nrirp.domain.config.duration import Duration
from nrirp.domain.config.registry import builtin_specs
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import HostChange
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policy import PolicyEvent
from nrirp.domain.ports.decisions import Notice, Severity
from nrirp.domain.ports.state_store import StateStoreError
from nrirp.simruntime import (
    ContainerState,
    ContainerStatus,
    PodState,
    SimRuntime,
    SimRuntimeError,
)

SETTLE_TIMEOUT = 10.0


class StepFailed(Exception):
    """Ends a step with these errors (the replay goes on)."""

    def __init__(self, *errors: str) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


class Replayer:
    """Replays steps on a started :class:`Simulation` whose plugin drives ``manager``."""

    def __init__(
        self,
        simulation: Simulation,
        manager: ResourceManager,
        updates: SettlingRuntimeUpdates,
        decisions: Any,
        workload: Workload,
        store: Any = None,
        specs: PolicySpecs | None = None,
        host_control: Any = None,
        host: HostWatcher | None = None,
        *,
        last_state_only: bool = False,
        recorded_config: bool = True,
    ) -> None:
        self.simulation = simulation
        self.last_state_only = last_state_only
        """Read the state after the last step only (and after steps with checks): a long
        recording's steps show their outcome and decisions, the last one the whole node."""
        self.recorded_config = recorded_config
        """Replay a recording's reconfigurations (``False``: skip them, another configuration
        is tried)."""
        self.store = store
        self.specs = specs
        self.host_settings: Mapping[str, HostChange] = getattr(host_control, "settings", {})
        self.host = host
        self._host_view: HostView | None = None
        self.runtime: SimRuntime = simulation.runtime
        self.manager = manager
        self.updates = updates
        self.log = decisions if isinstance(decisions, RecordingDecisionLog) else None
        self.workload = workload
        self._previous: dict[str, ContainerView] = {}
        self._refusals: dict[str, str] = {}
        self._replay_note = ""
        self.cluster: SimulatedCluster | None = None
        if needs_cluster(workload):
            self.cluster = SimulatedCluster(manager, specs or builtin_specs(), workload.base_dir)

    async def run(self) -> list[StepResult]:
        """Replay every step in order."""
        await self._settle([])
        if self.cluster is not None:
            await self.cluster.start()
        try:
            return [await self.run_step(step) for step in self.workload.steps]
        finally:
            if self.cluster is not None:
                await self.cluster.stop()

    async def run_step(self, step: Step) -> StepResult:
        """Replay one step and record the state after it."""
        decisions_before = len(self.log.decisions) if self.log else 0
        notices_before = len(self.log.notices) if self.log else 0
        errors: list[str] = []
        self._refusals = {}
        self._replay_note = ""
        if recorded.leads_with_sync(self.workload, step):
            decisions_before = notices_before = 0  # it happened when the plugin connected
            if step.note != recorded.STATE_ONLY_NOTE:
                self._replay_note = "the runtime's state when the daemon connected"
        else:
            try:
                await self._perform(step, errors)
            except StepFailed as failure:
                errors.extend(failure.errors)
            except (SimRuntimeError, recorded.RecordedStepFailed) as exc:
                errors.append(str(exc))
        await self._settle(errors)
        self._flush_state(errors)
        decisions = tuple(self.log.decisions[decisions_before:]) if self.log else ()
        notices = tuple(self.log.notices[notices_before:]) if self.log else ()
        if isinstance(step.action, Event):
            source = f"event {step.action.kind}"
            errors += [
                n.message for n in notices if n.source == source and n.severity is Severity.ERROR
            ]
        shown = not self.last_state_only or bool(step.expect) or step is self.workload.steps[-1]
        description = self.manager.describe() if shown else {}
        balloons = balloon_views(description)
        pools = pool_views(description)
        pods, containers = self._state(pools, balloons) if shown else ((), ())
        checks = check_step(step.expect, self._check_state(containers, pools, balloons))
        note = "; ".join(n for n in (step.note, self._replay_note) if n)
        host_view, host_changed = self._watch_host()
        return StepResult(
            state_shown=shown,
            number=step.number,
            kind=step.kind,
            description=describe_step(step),
            note=note,
            errors=tuple(errors),
            decisions=decisions,
            notices=notices,
            pods=pods,
            containers=containers,
            expected_error=step.expected_error,
            unmet_expectation=step.unmet_expectation(errors),
            balloons=balloons,
            pools=pools,
            checks=checks,
            host=host_view,
            host_changed=host_changed,
        )

    def _watch_host(self) -> tuple[HostView | None, bool]:
        """The host after the step, and whether it differs from after the step before."""
        if self.host is None:
            return None, False
        view = self.host.after_step()
        previous, self._host_view = self._host_view, view
        changed = not view.same_as(previous) and not (previous is None and view.is_empty())
        return view, changed

    # ------------------------------------------------------------------ actions
    async def _perform(self, step: Step, errors: list[str]) -> None:
        action = step.action
        if step.kind in RECORDED_KINDS:
            await self._perform_recorded(step)
        elif isinstance(action, CreatePod):
            await self._create_pod(action, errors)
        elif isinstance(action, DeletePod):
            pod = self.runtime.find_pod(action.namespace, action.name)
            await self.runtime.delete_pod(pod)
        elif isinstance(action, UpdateContainer):
            ctr = self.runtime.find_container(action.namespace, action.pod, action.container)
            label = f"{action.namespace}/{action.pod}/{action.container}"
            with self._refusal(label):
                await self.runtime.update_container(ctr, action.resources.resources)
        elif isinstance(action, RestartContainer):
            await self._restart(action)
        elif isinstance(action, ExitContainer):
            await self._exit(action)
        elif isinstance(action, Reconfigure):
            if self.workload.recording is not None and not self.recorded_config:
                self._replay_note = "skipped: the replay tries another configuration"
                return
            self._reconfigure(action)
        elif isinstance(action, ApplyConfig | DeleteConfig | LabelNode):
            assert self.cluster is not None  # made for every workload with such steps
            try:
                refused = await self.cluster.perform(action)
            except (OSError, ValueError) as exc:
                raise StepFailed(str(exc)) from None
            if refused:
                raise StepFailed(*refused)
        elif isinstance(action, Event):
            self.manager.inject_event(PolicyEvent(action.kind, action.source, action.data))
        elif isinstance(action, Duration):
            await asyncio.sleep(action.total_seconds())
        else:  # pragma: no cover - the workload model has no other actions
            raise TypeError(f"unknown step action {action!r}")

    async def _create_pod(self, action: CreatePod, errors: list[str]) -> None:
        for existing in self.runtime.pods():
            if (
                existing.namespace == action.namespace
                and existing.name == action.name
                and existing.state is PodState.READY
            ):
                raise StepFailed(f"pod {action.namespace}/{action.name} already exists")
        pod = await self.runtime.run_pod_sandbox(action.pod_spec())
        prefix = f"{action.namespace}/{action.name}/"
        # init containers run to completion one after another; one that fails stops the pod
        for ctr in action.init_containers:
            try:
                with self._refusal(prefix + ctr.name):
                    created = await self.runtime.create_container(pod, ctr.name)
                await self.runtime.start_container(created)
                await self.runtime.stop_container(created)  # it ran to completion
            except SimRuntimeError as exc:
                errors.append(f"init container {ctr.name}: {exc}")
                errors.append("the pod's containers were not started")
                return
        # like kubelet's SyncPod: a container that fails does not stop the others
        for ctr in action.containers:
            try:
                with self._refusal(prefix + ctr.name):
                    created = await self.runtime.create_container(pod, ctr.name)
                await self.runtime.start_container(created)
            except SimRuntimeError as exc:
                errors.append(f"container {ctr.name}: {exc}")

    async def _perform_recorded(self, step: Step) -> None:
        """A step of a recording: the runtime's own event, by id (``recorded.py``)."""
        if isinstance(step.action, Synchronize):  # a reconnect: the runtime ran these
            await recorded.seed_runtime(self.runtime, step.action)
            await self.simulation.reconnect()
            return
        with self._refusal(step.subject):
            note = await recorded.perform(self.runtime, step)
        if note:
            self._replay_note = f"nothing to do: {note}"

    @contextlib.contextmanager
    def _refusal(self, label: str) -> Iterator[None]:
        """Note a refused creation or update of the container ``namespace/pod/name``."""
        try:
            yield
        except SimRuntimeError as exc:
            self._refusals[label] = str(exc)
            raise

    async def _exit(self, action: ExitContainer) -> None:
        ctr = self.runtime.find_container(action.namespace, action.pod, action.container)
        if ctr.state is not ContainerState.RUNNING:
            raise StepFailed(
                f"container {action.namespace}/{action.pod}/{action.container} is not running "
                f"(state {ctr.state.name.lower()})"
            )
        await self.runtime.stop_container(ctr)

    async def _restart(self, action: RestartContainer) -> None:
        old = self.runtime.find_container(action.namespace, action.pod, action.container)
        if old.state is not ContainerState.RUNNING:
            raise StepFailed(
                f"container {action.namespace}/{action.pod}/{action.container} is not running "
                f"(state {old.state.name.lower()})"
            )
        await self.runtime.stop_container(old)
        try:
            # the spec as it is now: an in-place resize changed the pod's resources too
            label = f"{action.namespace}/{action.pod}/{action.container}"
            with self._refusal(label):
                created = await self.runtime.create_container(old.pod_id, old.spec)
            await self.runtime.start_container(created)
        finally:
            # kubelet garbage-collects the dead instance; the simulator does it at once
            await self.runtime.remove_container(old)

    def _reconfigure(self, action: Reconfigure) -> None:
        policy = self.manager.policy.name
        try:
            if action.file:
                path = os.path.join(self.workload.base_dir, action.file)
                source: str | Mapping[str, Any] = read_config_file(path)
            else:
                source = action.config
            config = load_policy_config(policy, source, self.specs)
        except ConfigError as exc:
            raise StepFailed(
                *(f"{p.path}: {p.message}" for p in exc.problems),
                "configuration not applied, the old one stays",
            ) from None
        except ConfigFileError as exc:
            raise StepFailed(str(exc), "configuration not applied, the old one stays") from None
        outcome = self.manager.reconfigure(config)
        if not outcome.applied:
            raise StepFailed(
                f"the policy refused the configuration: {outcome.reason}",
                "configuration not applied, the old one stays",
            )

    # ------------------------------------------------------------------ state
    async def _settle(self, errors: list[str]) -> None:
        try:
            await self.updates.settled(SETTLE_TIMEOUT)
        except SettledTimeoutError as exc:
            errors.append(str(exc))

    def _flush_state(self, errors: list[str]) -> None:
        flush = getattr(self.store, "flush", None)
        if not callable(flush):
            return
        try:
            flush()
        except StateStoreError as exc:
            errors.append(f"state not saved: {exc}")

    def _state(
        self, pools: tuple[PoolView, ...], balloons: tuple[BalloonView, ...]
    ) -> tuple[tuple[PodView, ...], tuple[ContainerView, ...]]:
        pods = self.runtime.pods()
        by_id = {p.id: p for p in pods}
        decided = {c.id: c for c in self.manager.containers()}
        held_by_id, held_by_label = holders(pools, balloons)
        views: list[ContainerView] = []
        current: dict[str, ContainerView] = {}
        for status in self.runtime.containers():
            pod = by_id[status.pod_id]
            view = _container_view(status, pod.namespace, pod.name, pod.qos.value, decided)
            on_host = self.host_settings.get(status.id)
            scheduling, io_priority = adjusted_settings(status, on_host)
            applied_by = None
            if on_host is not None and (on_host.scheduling or on_host.io_priority):
                applied_by = "host"
            elif scheduling is not None or io_priority is not None:
                applied_by = "nri"
            label = f"{pod.namespace}/{pod.name}/{status.name}"
            held = held_by_id.get(status.id)
            if held is None and status.state is not ContainerState.STOPPED:
                held = held_by_label.get(label)
            view = attrs.evolve(
                view,
                pool=held,
                scheduling=scheduling,
                io_priority=io_priority,
                applied_by=applied_by,
            )
            previous = self._previous.get(view.id)
            if previous is None:
                change = Change.NEW
            elif previous.settings() != view.settings():
                change = Change.CHANGED
            else:
                change = Change.UNCHANGED
            view = _evolve_change(view, change)
            views.append(view)
            current[view.id] = view
        self._previous = current
        pod_views = tuple(
            PodView(
                namespace=p.namespace,
                name=p.name,
                uid=p.uid,
                id=p.id,
                qos=p.qos.value,
                cgroup_parent=p.cgroup_parent,
                state="ready" if p.state is PodState.READY else "notready",
            )
            for p in pods
        )
        return pod_views, tuple(views)

    def _check_state(
        self,
        containers: tuple[ContainerView, ...],
        pools: tuple[PoolView, ...],
        balloons: tuple[BalloonView, ...],
    ) -> StepState:
        """What the step's ``expect`` checks look at."""
        checked = {
            f"{c.namespace}/{c.pod}/{c.name}": CheckedContainer(c.cpus, c.mems, c.state, c.pool)
            for c in containers  # in creation order: the latest instance of a name wins
        }
        return StepState(
            containers=checked,
            pools={
                p.name: CheckedPool(
                    cpus=CPUSet.parse(p.cpus),
                    mems=CPUSet.parse(p.mems),
                    shared=CPUSet.parse(p.shared),
                    reserved=CPUSet.parse(p.reserved),
                    isolated=CPUSet.parse(p.isolated),
                    containers=frozenset(p.containers),
                )
                for p in pools
            },
            balloons={
                b.name: CheckedPool(
                    cpus=CPUSet.parse(b.cpus),
                    mems=CPUSet.parse(b.mems),
                    shared=None,
                    reserved=None,
                    isolated=None,
                    containers=frozenset(b.containers),
                )
                for b in _all_balloons(balloons)
            },
            refusals=dict(self._refusals),
        )


def _all_balloons(balloons: tuple[BalloonView, ...]) -> list[BalloonView]:
    """Balloons and the components of composite ones."""
    out: list[BalloonView] = []
    for balloon in balloons:
        out.append(balloon)
        out += _all_balloons(balloon.components)
    return out


def _container_view(
    status: ContainerStatus, namespace: str, pod: str, qos: str, decided: Mapping[str, Any]
) -> ContainerView:
    res = status.resources
    known = decided.get(status.id)
    return ContainerView(
        namespace=namespace,
        pod=pod,
        name=status.name,
        id=status.id,
        state=status.state.name.lower(),
        qos=qos,
        cpus=res.cpus,
        mems=res.mems,
        cpu_shares=res.cpu_shares,
        cpu_quota=res.cpu_quota,
        cpu_period=res.cpu_period,
        memory_limit=res.memory_limit,
        oom_score_adj=status.oom_score_adj,
        rdt_class=res.rdt_class,
        blockio_class=res.blockio_class,
        decided_cpus=None if known is None else known.cpus,
        decided_mems=None if known is None else known.mems,
        known_to_policy=known is not None,
    )


def balloon_views(description: Mapping[str, Any]) -> tuple[BalloonView, ...]:
    """The balloons a policy's description lists (none for policies without balloons)."""
    found = description.get("balloons")
    if not isinstance(found, list):
        return ()
    return tuple(_balloon_view(b) for b in found if isinstance(b, Mapping))


def _balloon_view(data: Mapping[str, Any]) -> BalloonView:
    components = data.get("components")
    return BalloonView(
        name=str(data.get("name", "")),
        type=str(data.get("type", "")),
        cpus=str(data.get("cpus", "")),
        shared_idle_cpus=str(data.get("shared_idle_cpus", "")),
        mems=str(data.get("mems", "")),
        cpu_class=None if data.get("cpu_class") is None else str(data.get("cpu_class")),
        containers=tuple(str(c) for c in data.get("containers", ())),
        components=tuple(_balloon_view(c) for c in components or () if isinstance(c, Mapping)),
    )


def _evolve_change(view: ContainerView, change: Change) -> ContainerView:
    return attrs.evolve(view, change=change)


async def replay(
    container: SimulatorContainer,
    workload: Workload,
    *,
    last_state_only: bool = False,
    recorded_config: bool = True,
) -> list[StepResult]:
    """Replay ``workload`` on a :class:`SimulatorContainer` built by :func:`build_simulator`
    whose resource manager is started; returns one result per step.

    ``last_state_only``: read the state after the last step only (and after steps with
    checks). ``recorded_config``: replay a recording's reconfigurations (else skip them)."""
    adapters, core = container.adapters.container, container.core.container
    updates = adapters.runtime_updates()
    if not isinstance(updates, SettlingRuntimeUpdates):
        raise TypeError("the simulator's runtime_updates must be a SettlingRuntimeUpdates")
    start = recorded.initial_sync(workload)  # a recording: what ran when the daemon connected
    if start is not None:
        await recorded.seed_runtime(container.runtime(), start)
        if not workload.steps:  # a part holding its state alone: show where it begins
            workload = attrs.evolve(workload, steps=(recorded.start_step(start),))
    async with container.simulation() as simulation:
        replayer = Replayer(
            simulation,
            core.resource_manager(),
            updates,
            adapters.decision_log(),
            workload,
            adapters.state_store(),
            core.policy_registry(),
            adapters.host_control(),
            HostWatcher(core.resource_manager().host, adapters.host()),
            last_state_only=last_state_only,
            recorded_config=recorded_config,
        )
        return await replayer.run()


def replay_result(
    container: SimulatorContainer,
    workload: Workload,
    steps: list[StepResult],
    *,
    hardware: str,
    config_file: str | None,
) -> ReplayResult:
    """Bundle the steps with the setting they ran in, and what was said at the start."""
    machine = container.core.container.machine()
    manager = container.core.container.resource_manager()
    log = container.adapters.container.decision_log()
    start_notices: tuple[Notice, ...] = ()
    if isinstance(log, RecordingDecisionLog):
        # the steps took every notice from theirs on (a recording's leading synchronize
        # takes those of the start too): what is left before them was said at the start
        told = sum(len(step.notices) for step in steps)
        start_notices = tuple(log.notices[: max(0, len(log.notices) - told)])
    return ReplayResult(
        policy=manager.policy.name,
        hardware=hardware,
        cpus=machine.online,
        nodes=CPUSet.from_ids(machine.nodes),
        nri_version=str(container.runtime().version),
        workload=workload.source,
        description=workload.description,
        config_file=config_file,
        steps=tuple(steps),
        start_notices=start_notices,
    )
