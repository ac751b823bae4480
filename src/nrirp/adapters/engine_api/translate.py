"""Engine API messages <-> the domain's values, both ways, in one place.

Presence is kept: an unset ``optional`` field is ``None`` in the domain and the other way
round. Values the domain cannot hold (a bad CPU list, an unknown state) raise
:class:`MessageError`, which the service answers with INVALID_ARGUMENT.
"""

from __future__ import annotations

from nrirp.adapters.engine_api.gen import engine_pb2 as pb
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Adjustment,
    Container,
    ContainerState,
    Device,
    LinuxResources,
    Mount,
    Pod,
    Update,
)
from nrirp.domain.model.resources import negative_unsigned


class MessageError(ValueError):
    """A message carries a value the engine cannot use; the text names the field."""


_INT_FIELDS = (
    "cpu_shares",
    "cpu_quota",
    "cpu_period",
    "cpu_realtime_runtime",
    "cpu_realtime_period",
    "memory_limit",
    "memory_reservation",
    "memory_swap",
    "pids_limit",
)
_STRING_FIELDS = ("rdt_class", "blockio_class")

_STATES = {
    pb.CONTAINER_STATE_UNSPECIFIED: ContainerState.CREATING,
    pb.CONTAINER_STATE_CREATING: ContainerState.CREATING,
    pb.CONTAINER_STATE_CREATED: ContainerState.CREATED,
    pb.CONTAINER_STATE_PAUSED: ContainerState.PAUSED,
    pb.CONTAINER_STATE_RUNNING: ContainerState.RUNNING,
    pb.CONTAINER_STATE_STOPPED: ContainerState.STOPPED,
    pb.CONTAINER_STATE_UNKNOWN: ContainerState.UNKNOWN,
}
_STATE_VALUES = {
    ContainerState.CREATING: pb.CONTAINER_STATE_CREATING,
    ContainerState.CREATED: pb.CONTAINER_STATE_CREATED,
    ContainerState.PAUSED: pb.CONTAINER_STATE_PAUSED,
    ContainerState.RUNNING: pb.CONTAINER_STATE_RUNNING,
    ContainerState.STOPPED: pb.CONTAINER_STATE_STOPPED,
    ContainerState.UNKNOWN: pb.CONTAINER_STATE_UNKNOWN,
    ContainerState.STALE: pb.CONTAINER_STATE_UNKNOWN,
}


def _cpuset(text: str, where: str) -> CPUSet:
    try:
        return CPUSet.parse(text)
    except ValueError as exc:
        raise MessageError(f"{where}: {exc}") from None


def resources_from_pb(
    msg: pb.Resources, where: str = "resources", *, check: bool = True
) -> LinuxResources:
    """The resources; with ``check`` (a request's), a negative value of a setting that is
    unsigned in OCI raises :class:`MessageError` (replies are taken as the engine sent them)."""

    def number(name: str) -> int | None:
        value: int = getattr(msg, name)
        return value if msg.HasField(name) else None  # type: ignore[arg-type]

    resources = LinuxResources(
        cpu_shares=number("cpu_shares"),
        cpu_quota=number("cpu_quota"),
        cpu_period=number("cpu_period"),
        cpu_realtime_runtime=number("cpu_realtime_runtime"),
        cpu_realtime_period=number("cpu_realtime_period"),
        cpus=_cpuset(msg.cpus, f"{where}.cpus") if msg.HasField("cpus") else None,
        mems=_cpuset(msg.mems, f"{where}.mems") if msg.HasField("mems") else None,
        memory_limit=number("memory_limit"),
        memory_reservation=number("memory_reservation"),
        memory_swap=number("memory_swap"),
        hugepage_limits=dict(msg.hugepage_limits),
        rdt_class=msg.rdt_class if msg.HasField("rdt_class") else None,
        blockio_class=msg.blockio_class if msg.HasField("blockio_class") else None,
        unified=dict(msg.unified),
        pids_limit=number("pids_limit"),
    )
    problem = negative_unsigned(resources) if check else None
    if problem is not None:
        raise MessageError(f"{where}.{problem}")
    return resources


def resources_to_pb(resources: LinuxResources) -> pb.Resources:
    msg = pb.Resources()
    for name in _INT_FIELDS + _STRING_FIELDS:
        value = getattr(resources, name)
        if value is not None:
            setattr(msg, name, value)
    if resources.cpus is not None:
        msg.cpus = str(resources.cpus)
    if resources.mems is not None:
        msg.mems = str(resources.mems)
    msg.hugepage_limits.update(resources.hugepage_limits)
    msg.unified.update(resources.unified)
    return msg


def pod_from_pb(msg: pb.Pod, *, check: bool = True) -> Pod:
    if not (msg.id.strip() if check else msg.id):  # a blank id names nothing
        raise MessageError("pod.id: missing")
    return Pod(
        id=msg.id,
        name=msg.name,
        uid=msg.uid,
        namespace=msg.namespace,
        labels=dict(msg.labels),
        annotations=dict(msg.annotations),
        cgroup_parent=msg.cgroup_parent,
        runtime_handler=msg.runtime_handler,
        resources=resources_from_pb(msg.resources, "pod.resources", check=check)
        if msg.HasField("resources")
        else None,
        overhead=resources_from_pb(msg.overhead, "pod.overhead", check=check)
        if msg.HasField("overhead")
        else None,
    )


def pod_to_pb(pod: Pod) -> pb.Pod:
    msg = pb.Pod(
        id=pod.id,
        name=pod.name,
        uid=pod.uid,
        namespace=pod.namespace,
        labels=dict(pod.labels),
        annotations=dict(pod.annotations),
        cgroup_parent=pod.cgroup_parent,
        runtime_handler=pod.runtime_handler,
    )
    if pod.resources is not None:
        msg.resources.CopyFrom(resources_to_pb(pod.resources))
    if pod.overhead is not None:
        msg.overhead.CopyFrom(resources_to_pb(pod.overhead))
    return msg


def _mounts_from_pb(mounts: object) -> tuple[Mount, ...]:
    return tuple(
        Mount(destination=m.destination, source=m.source, type=m.type, options=tuple(m.options))
        for m in mounts  # type: ignore[attr-defined]
    )


def _mounts_to_pb(mounts: tuple[Mount, ...]) -> list[pb.Mount]:
    return [
        pb.Mount(destination=m.destination, source=m.source, type=m.type, options=list(m.options))
        for m in mounts
    ]


def container_from_pb(msg: pb.Container, pod_id: str = "", *, check: bool = True) -> Container:
    """The container; ``pod_id`` fills an empty ``pod_id`` (the request's pod); ``check``: as
    :func:`resources_from_pb`'s."""
    if not (msg.id.strip() if check else msg.id):  # a blank id names nothing
        raise MessageError("container.id: missing")
    state = _STATES.get(msg.state)
    if state is None:
        raise MessageError(f"container.state: unknown value {msg.state}")
    return Container(
        id=msg.id,
        pod_id=msg.pod_id or pod_id,
        name=msg.name,
        state=state,
        labels=dict(msg.labels),
        annotations=dict(msg.annotations),
        resources=resources_from_pb(msg.resources, "container.resources", check=check),
        oom_score_adj=msg.oom_score_adj if msg.HasField("oom_score_adj") else None,
        cgroups_path=msg.cgroups_path,
        mounts=_mounts_from_pb(msg.mounts),
        devices=tuple(
            Device(path=d.path, type=d.type, major=d.major, minor=d.minor) for d in msg.devices
        ),
        pid=msg.pid if msg.HasField("pid") and msg.pid > 0 else None,
    )


def container_to_pb(container: Container) -> pb.Container:
    msg = pb.Container(
        id=container.id,
        pod_id=container.pod_id,
        name=container.name,
        state=_STATE_VALUES[container.state],
        labels=dict(container.labels),
        annotations=dict(container.annotations),
        cgroups_path=container.cgroups_path,
        mounts=_mounts_to_pb(container.mounts),
        devices=[
            pb.Device(path=d.path, type=d.type, major=d.major, minor=d.minor)
            for d in container.devices
        ],
    )
    msg.resources.CopyFrom(resources_to_pb(container.resources))
    if container.oom_score_adj is not None:
        msg.oom_score_adj = container.oom_score_adj
    if container.pid is not None:
        msg.pid = container.pid
    return msg


def adjustment_to_pb(adjustment: Adjustment) -> pb.Adjustment:
    msg = pb.Adjustment(
        container_id=adjustment.container_id,
        annotations=dict(adjustment.annotations),
        env=dict(adjustment.env),
        mounts=_mounts_to_pb(adjustment.mounts),
    )
    msg.resources.CopyFrom(resources_to_pb(adjustment.resources))
    return msg


def adjustment_from_pb(msg: pb.Adjustment) -> Adjustment:
    return Adjustment(
        container_id=msg.container_id,
        resources=resources_from_pb(msg.resources, "adjustment.resources", check=False),
        annotations=dict(msg.annotations),
        env=dict(msg.env),
        mounts=_mounts_from_pb(msg.mounts),
    )


def update_to_pb(update: Update) -> pb.Update:
    return pb.Update(
        container_id=update.container_id,
        resources=resources_to_pb(update.resources),
        ignore_failure=update.ignore_failure,
    )


def update_from_pb(msg: pb.Update) -> Update:
    return Update(
        container_id=msg.container_id,
        resources=resources_from_pb(msg.resources, "update.resources", check=False),
        ignore_failure=msg.ignore_failure,
    )


def updates_to_pb(updates: list[Update] | tuple[Update, ...]) -> pb.Updates:
    return pb.Updates(updates=[update_to_pb(u) for u in updates])
