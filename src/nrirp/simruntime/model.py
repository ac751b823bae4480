"""The runtime's own model: pod sandboxes and containers, and the read-only views it hands out."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.model.kubelet import QOSClass
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from nrirp.simruntime.errors import InvalidState, NotFound
from nrirp.simruntime.resources import (
    EffectiveResources,
    HostLimits,
    apply_update,
    check_resources,
)


class PodState(enum.Enum):
    """CRI pod sandbox states."""

    READY = "SANDBOX_READY"
    NOTREADY = "SANDBOX_NOTREADY"


class ContainerState(enum.IntEnum):
    """NRI container states (the values of ``api_pb2.ContainerState``)."""

    UNKNOWN = api_pb2.CONTAINER_UNKNOWN
    CREATED = api_pb2.CONTAINER_CREATED
    PAUSED = api_pb2.CONTAINER_PAUSED
    RUNNING = api_pb2.CONTAINER_RUNNING
    STOPPED = api_pb2.CONTAINER_STOPPED


UPDATABLE = frozenset({ContainerState.CREATED, ContainerState.RUNNING})


@attrs.define
class PodRecord:
    """A pod sandbox the runtime runs (mutable; only the runtime touches it)."""

    pb: api_pb2.PodSandbox
    spec: PodSpec
    qos: QOSClass
    state: PodState = PodState.READY
    containers: list[str] = attrs.field(factory=list)

    @property
    def id(self) -> str:
        return self.pb.id


@attrs.define
class ContainerRecord:
    """A container the runtime created (mutable; only the runtime touches it)."""

    pb: api_pb2.Container
    spec: ContainerSpec
    attempt: int
    adjustment: api_pb2.ContainerAdjustment

    @property
    def id(self) -> str:
        return self.pb.id

    @property
    def state(self) -> ContainerState:
        return ContainerState(self.pb.state)


def _copy_pod(pb: api_pb2.PodSandbox) -> api_pb2.PodSandbox:
    out = api_pb2.PodSandbox()
    out.CopyFrom(pb)
    return out


def _copy_container(pb: api_pb2.Container) -> api_pb2.Container:
    out = api_pb2.Container()
    out.CopyFrom(pb)
    return out


@attrs.frozen
class PodSandboxStatus:
    """A pod sandbox as the runtime knows it (a snapshot; later changes do not show)."""

    id: str
    name: str
    namespace: str
    uid: str
    state: PodState
    qos: QOSClass
    cgroup_parent: str
    spec: PodSpec
    container_ids: tuple[str, ...]
    sandbox: api_pb2.PodSandbox = attrs.field(eq=False, repr=False)
    """The NRI ``PodSandbox`` message (a copy)."""

    @classmethod
    def of(cls, record: PodRecord) -> PodSandboxStatus:
        pb = record.pb
        return cls(
            id=pb.id,
            name=pb.name,
            namespace=pb.namespace,
            uid=pb.uid,
            state=record.state,
            qos=record.qos,
            cgroup_parent=pb.linux.cgroup_parent,
            spec=record.spec,
            container_ids=tuple(record.containers),
            sandbox=_copy_pod(pb),
        )


@attrs.frozen
class ContainerStatus:
    """A container as the runtime runs it: what CRI asked, after every plugin adjustment and
    update (a snapshot; later changes do not show)."""

    id: str
    pod_id: str
    name: str
    state: ContainerState
    resources: EffectiveResources
    oom_score_adj: int | None
    annotations: Mapping[str, str]
    labels: Mapping[str, str]
    env: tuple[str, ...]
    args: tuple[str, ...]
    cgroups_path: str
    pid: int
    exit_code: int
    spec: ContainerSpec
    container: api_pb2.Container = attrs.field(eq=False, repr=False)
    """The NRI ``Container`` message (a copy)."""
    adjustment: api_pb2.ContainerAdjustment = attrs.field(eq=False, repr=False)
    """The merged adjustment of all plugins at creation (a copy); also holds what the
    ``Container`` message cannot (e.g. a memory policy)."""

    @classmethod
    def of(cls, record: ContainerRecord) -> ContainerStatus:
        pb = record.pb
        linux = pb.linux
        adjustment = api_pb2.ContainerAdjustment()
        adjustment.CopyFrom(record.adjustment)
        return cls(
            id=pb.id,
            pod_id=pb.pod_sandbox_id,
            name=pb.name,
            state=record.state,
            resources=EffectiveResources.from_pb(linux.resources),
            oom_score_adj=linux.oom_score_adj.value if linux.HasField("oom_score_adj") else None,
            annotations=dict(pb.annotations),
            labels=dict(pb.labels),
            env=tuple(pb.env),
            args=tuple(pb.args),
            cgroups_path=linux.cgroups_path,
            pid=pb.pid,
            exit_code=pb.exit_code,
            spec=record.spec,
            container=_copy_container(pb),
            adjustment=adjustment,
        )


class RuntimeModel:
    """Pods and containers by id, in creation order."""

    def __init__(self, host: HostLimits) -> None:
        self.host = host
        self.pods: dict[str, PodRecord] = {}
        self.containers: dict[str, ContainerRecord] = {}

    def pod(self, pod_id: str) -> PodRecord:
        """The pod ``pod_id``; raise :class:`NotFound`."""
        record = self.pods.get(pod_id)
        if record is None:
            raise NotFound(f"pod sandbox {pod_id!r} not found")
        return record

    def container(self, container_id: str) -> ContainerRecord:
        """The container ``container_id``; raise :class:`NotFound`."""
        record = self.containers.get(container_id)
        if record is None:
            raise NotFound(f"container {container_id!r} not found")
        return record

    def pod_of(self, container: ContainerRecord) -> PodRecord:
        return self.pod(container.pb.pod_sandbox_id)

    def add_container(self, pod: PodRecord, record: ContainerRecord) -> None:
        self.containers[record.id] = record
        pod.containers.append(record.id)

    def drop_container(self, record: ContainerRecord) -> None:
        self.containers.pop(record.id, None)
        pod = self.pods.get(record.pb.pod_sandbox_id)
        if pod is not None and record.id in pod.containers:
            pod.containers.remove(record.id)

    def snapshot(self) -> tuple[list[api_pb2.PodSandbox], list[api_pb2.Container]]:
        """Copies of every pod and container, as Synchronize sends them."""
        pods = [_copy_pod(p.pb) for p in self.pods.values()]
        containers = [_copy_container(c.pb) for c in self.containers.values()]
        return pods, containers

    def update_resources(self, record: ContainerRecord, update: api_pb2.LinuxResources) -> None:
        """Apply ``update`` to a created or running container with CRI update semantics, or
        raise :class:`InvalidState` and leave it as it was."""
        if record.state not in UPDATABLE:
            raise InvalidState(
                f"container {record.id!r} is in {record.state.name} state, cannot be updated"
            )
        merged = api_pb2.LinuxResources()
        merged.CopyFrom(record.pb.linux.resources)
        apply_update(merged, update)
        problem = check_resources(merged, self.host)
        if problem is not None:
            raise InvalidState(f"failed to update container {record.id!r}: {problem}")
        record.pb.linux.resources.CopyFrom(merged)

    def apply_updates(
        self, updates: Iterable[api_pb2.ContainerUpdate]
    ) -> tuple[list[api_pb2.ContainerUpdate], list[str]]:
        """Apply container updates as containerd's update function does.

        Returns the failed updates (unknown containers always; others unless
        ``ignore_failure``) and one message per failure.
        """
        failed: list[api_pb2.ContainerUpdate] = []
        problems: list[str] = []
        for update in updates:
            record = self.containers.get(update.container_id)
            if record is None:
                failed.append(update)
                problems.append(f"container {update.container_id!r} not found")
                continue
            try:
                self.update_resources(record, update.linux.resources)
            except InvalidState as exc:
                problems.append(str(exc))
                if not update.ignore_failure:
                    failed.append(update)
        return failed, problems
