"""Replaying a recording's steps (``nrirp run --record``) on the simulated runtime.

A recorded step is an event the daemon handled, with the runtime's ids: the pods and
containers are given to the runtime as NRI messages built from the recording (so the plugin
sees what the daemon saw), and the other steps act on them by id. The runtime starts from
the recording's first ``synchronize`` (the containers that ran when the daemon connected),
else from the saved state's pods and containers (a rotated part), else empty.

Steps that only tell of something gone (stopping or removing a pod or container the replay's
runtime does not have, e.g. the runtime's undo of a creation the daemon refused) do nothing;
starting or updating a container the replay does not have fails the step: that container's
creation went otherwise in the replay.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate import resources_to_pb
from nrirp.adapters.recording.format import (
    ObjectRef,
    RecordedContainer,
    RecordedPod,
    RecordedResources,
    Synchronize,
    UpdateContainerResources,
    container_data,
    pod_data,
)
from nrirp.adapters.recording.lines import yaml_line
from nrirp.app.simulator.workload import Step, Workload
from nrirp.domain.cache import SnapshotError, structure_snapshot
from nrirp.domain.config.converter import structure
from nrirp.domain.model import ContainerState
from nrirp.simruntime import NotFound, SimRuntime

_STATES = {
    ContainerState.CREATING: api_pb2.CONTAINER_UNKNOWN,
    ContainerState.CREATED: api_pb2.CONTAINER_CREATED,
    ContainerState.PAUSED: api_pb2.CONTAINER_PAUSED,
    ContainerState.RUNNING: api_pb2.CONTAINER_RUNNING,
    ContainerState.STOPPED: api_pb2.CONTAINER_STOPPED,
    ContainerState.UNKNOWN: api_pb2.CONTAINER_UNKNOWN,
    ContainerState.STALE: api_pb2.CONTAINER_STOPPED,
}


class RecordedStepFailed(Exception):
    """A recorded step that cannot be replayed (the message says why)."""


# ---------------------------------------------------------------------- messages
def pod_message(pod: RecordedPod) -> api_pb2.PodSandbox:
    """The NRI pod sandbox the daemon got, rebuilt from the recording."""
    domain = pod.domain()
    pb = api_pb2.PodSandbox(
        id=domain.id,
        name=domain.name,
        uid=domain.uid,
        namespace=domain.namespace,
        labels=dict(domain.labels),
        annotations=dict(domain.annotations),
        runtime_handler=domain.runtime_handler,
    )
    pb.linux.cgroup_parent = domain.cgroup_parent
    if domain.resources is not None:
        pb.linux.pod_resources.CopyFrom(resources_to_pb(domain.resources))
    if domain.overhead is not None:
        pb.linux.pod_overhead.CopyFrom(resources_to_pb(domain.overhead))
    return pb


def container_message(ctr: RecordedContainer) -> api_pb2.Container:
    """The NRI container the daemon got, rebuilt from the recording."""
    domain = ctr.domain()
    pb = api_pb2.Container(
        id=domain.id,
        pod_sandbox_id=domain.pod_id,
        name=domain.name,
        state=_STATES[domain.state],
        labels=dict(domain.labels),
        annotations=dict(domain.annotations),
        pid=domain.pid or 0,
    )
    pb.mounts.extend(
        api_pb2.Mount(destination=m.destination, source=m.source, type=m.type, options=m.options)
        for m in domain.mounts
    )
    linux = pb.linux
    linux.devices.extend(
        api_pb2.LinuxDevice(path=d.path, type=d.type, major=d.major, minor=d.minor)
        for d in domain.devices
    )
    linux.resources.CopyFrom(resources_to_pb(domain.resources))
    if domain.oom_score_adj is not None:
        linux.oom_score_adj.value = domain.oom_score_adj
    linux.cgroups_path = domain.cgroups_path
    return pb


def resources_message(resources: RecordedResources) -> api_pb2.LinuxResources:
    return resources_to_pb(resources.domain())


# ---------------------------------------------------------------------- the start
def initial_sync(workload: Workload) -> Synchronize | None:
    """What the replay's runtime runs when the plugin connects: the recording's leading
    ``synchronize``, else the saved state's pods and containers, else nothing."""
    recording = workload.recording
    if recording is None:
        return None
    first = workload.steps[0] if workload.steps else None
    if first is not None and isinstance(first.action, Synchronize):
        return first.action
    if recording.state is None:
        return None
    return state_sync(recording.state, workload.source)


def state_sync(state: Mapping[str, Any], source: str) -> Synchronize:
    """The pods and containers a saved state holds, as a runtime would report them."""
    try:
        snapshot = structure_snapshot(state)
    except SnapshotError as exc:
        raise RecordedStepFailed(f"{source}: the recording's saved state: {exc}") from None
    data = {
        "pods": [pod_data(p) for p in snapshot.pods],
        "containers": [container_data(c) for c in snapshot.containers],
    }
    plain = json.loads(yaml_line(data))  # as a recording would hold them
    sync, issues = structure(plain, Synchronize)
    if sync is None:  # pragma: no cover - the snapshot was structured strictly already
        raise RecordedStepFailed(f"{source}: the recording's saved state: {issues}")
    return sync


async def seed_runtime(runtime: SimRuntime, sync: Synchronize) -> None:
    """Have ``runtime`` run what ``sync`` lists, telling no plugin."""
    await runtime.adopt(
        [pod_message(p) for p in sync.pods], [container_message(c) for c in sync.containers]
    )


STATE_ONLY_NOTE = "the part holds no steps: the node's state when it began, from its saved state"


def start_step(start: Synchronize) -> Step:
    """The one step a recording without steps replays: its start (``start``, from its saved
    state) as a leading ``synchronize``, so the replay shows the node where the part begins
    (a part may hold its state alone: the daemon stopped, or a new part began, right after
    it was written)."""
    return Step(number=1, kind="synchronize", action=start, note=STATE_ONLY_NOTE)


def leads_with_sync(workload: Workload, step: Step) -> bool:
    """Whether ``step`` is the recording's leading ``synchronize`` (done when the plugin
    connected)."""
    return (
        workload.recording is not None and step.number == 1 and isinstance(step.action, Synchronize)
    )


# ---------------------------------------------------------------------- steps
async def perform(runtime: SimRuntime, step: Step) -> str | None:
    """Replay recorded ``step``; returns a note when it did nothing, raises
    :class:`RecordedStepFailed` or the runtime's error when it failed."""
    action = step.action
    if isinstance(action, RecordedPod):
        await runtime.run_pod_sandbox_message(pod_message(action))
        return None
    if isinstance(action, RecordedContainer):
        await runtime.create_container_message(container_message(action))
        return None
    if isinstance(action, UpdateContainerResources):
        record = _container(runtime, action.id, step)
        if record is None:
            raise RecordedStepFailed(f"no container {step.subject} in this replay")
        await runtime.update_container(record, resources_message(action.resources))
        return None
    if not isinstance(action, ObjectRef):  # pragma: no cover - synchronize is the replayer's
        raise TypeError(f"not a recorded step: {action!r}")
    if step.kind == "startContainer":
        record = _container(runtime, action.id, step)
        if record is None:
            raise RecordedStepFailed(f"no container {step.subject} in this replay")
        await runtime.start_container(record)
        return None
    if step.kind in ("stopContainer", "removeContainer"):
        record = _container(runtime, action.id, step)
        if record is None:
            return "the replay's runtime has no such container"
        if step.kind == "stopContainer":
            await runtime.stop_container(record)
        else:
            await runtime.remove_container(record)
        return None
    try:
        runtime.pod(action.id)
    except NotFound:
        return "the replay's runtime has no such pod sandbox"
    if step.kind == "stopPodSandbox":
        await runtime.stop_pod_sandbox(action.id)
    else:
        await runtime.remove_pod_sandbox(action.id)
    return None


def _container(runtime: SimRuntime, container_id: str, step: Step) -> str | None:
    try:
        return runtime.container(container_id).id
    except NotFound:
        return None
