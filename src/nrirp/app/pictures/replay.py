"""Pictures of a simulator replay: one placement per step, from what the simulated runtime
holds after it (each container's cpuset, memory nodes and memory limit) and the policy's pools
or balloons then."""

from __future__ import annotations

from nrirp.app.pictures.frames import Frame
from nrirp.app.placement import Group, PlacedContainer, Placement
from nrirp.app.simulator.results import BalloonView, PoolView, ReplayResult, StepResult
from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.topology import Machine

HOLDING = frozenset({"created", "running", "paused"})
"""Container states that hold resources (stopped ones are not drawn)."""


def _set(text: str) -> CPUSet:
    return CPUSet.parse(text) if text else EMPTY


def _pool(view: PoolView) -> Group:
    return Group(
        name=view.name,
        kind=view.kind,
        cpus=_set(view.cpus),
        mems=_set(view.mems),
        shared_cpus=_set(view.shared),
        reserved_cpus=_set(view.reserved),
        parent=view.parent,
        members=view.containers,
        nested=True,
    )


def _balloons(view: BalloonView, parent: str | None = None) -> list[Group]:
    group = Group(
        name=view.name,
        kind="balloon",
        type=view.type,
        cpus=_set(view.cpus),
        mems=_set(view.mems),
        shared_cpus=_set(view.shared_idle_cpus),
        parent=parent,
        members=view.containers,
    )
    return [group, *(g for c in view.components for g in _balloons(c, view.name))]


def step_placement(machine: Machine, policy: str, step: StepResult) -> Placement:
    """The placement after ``step``, as the simulated runtime runs the containers."""
    groups = tuple(
        [_pool(p) for p in step.pools] + [g for b in step.balloons for g in _balloons(b)]
    )
    reserved = EMPTY
    for g in groups:
        reserved |= g.reserved_cpus
        if g.type == "reserved":
            reserved |= g.cpus
    containers = tuple(
        PlacedContainer(
            id=c.id,
            namespace=c.namespace,
            pod=c.pod,
            name=c.name,
            cpus=c.cpus,
            mems=c.mems,
            memory=c.memory_limit,
            group=c.pool,
            qos=c.qos,
        )
        for c in step.containers
        if c.state in HOLDING
    )
    return Placement(machine, policy, groups, containers, reserved)


def replay_frames(result: ReplayResult, machine: Machine) -> list[Frame]:
    """One frame per step of ``result`` (a replay on ``machine``)."""
    frames = []
    for step in result.steps:
        outcome = "ok" if step.ok else "FAILED" + (" (as expected)" if step.as_expected else "")
        caption = f"{result.policy} on {result.hardware} · {outcome}"
        if step.note:
            caption += f" · {step.note}"
        frames.append(
            Frame(
                title=f"Step {step.number}: {step.description}",
                caption=caption,
                placement=step_placement(machine, result.policy, step),
                ok=step.as_expected,
                errors=tuple(step.errors),
            )
        )
    return frames
