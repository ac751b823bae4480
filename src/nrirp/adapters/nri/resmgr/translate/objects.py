"""Pods and containers as NRI reports them -> domain ``Pod`` / ``Container``.

Only what the domain models is kept (identity, metadata, cgroup placement, resources, OOM
score, mounts, devices, pid). The cache stamps ``created_at`` itself.
"""

from __future__ import annotations

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate.errors import TranslationError
from nrirp.adapters.nri.resmgr.translate.resources import resources_from_pb
from nrirp.domain.model import Container, ContainerState, Device, LinuxResources, Mount, Pod
from nrirp.domain.ports.documents import label

_STATES: dict[int, ContainerState] = {
    api_pb2.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
    api_pb2.CONTAINER_CREATED: ContainerState.CREATED,
    api_pb2.CONTAINER_PAUSED: ContainerState.PAUSED,
    api_pb2.CONTAINER_RUNNING: ContainerState.RUNNING,
    api_pb2.CONTAINER_STOPPED: ContainerState.STOPPED,
}


def pod_from_pb(pb: api_pb2.PodSandbox) -> Pod:
    """The domain pod for an NRI ``PodSandbox`` (QoS class from its cgroup parent)."""
    if not pb.id:
        raise TranslationError("pod sandbox without an id")
    linux = pb.linux
    resources: LinuxResources | None = None
    overhead: LinuxResources | None = None
    try:
        if linux.HasField("pod_resources"):
            resources = resources_from_pb(linux.pod_resources)
        if linux.HasField("pod_overhead"):
            overhead = resources_from_pb(linux.pod_overhead)
    except TranslationError as exc:
        raise TranslationError(f"pod {pb.namespace}/{pb.name}: {exc}") from None
    return Pod(
        id=pb.id,
        name=pb.name,
        uid=pb.uid,
        namespace=pb.namespace,
        labels=dict(pb.labels),
        annotations=dict(pb.annotations),
        cgroup_parent=linux.cgroup_parent,
        runtime_handler=pb.runtime_handler,
        resources=resources,
        overhead=overhead,
    )


def container_state_from_pb(state: int) -> ContainerState:
    """The domain state of an NRI container state (unknown values read as UNKNOWN)."""
    return _STATES.get(state, ContainerState.UNKNOWN)


def container_from_pb(pb: api_pb2.Container) -> Container:
    """The domain container for an NRI ``Container`` (requirements are estimated by the
    resource manager when it admits the container)."""
    if not pb.id:
        raise TranslationError("container without an id")
    linux = pb.linux
    try:
        resources = (
            resources_from_pb(linux.resources) if linux.HasField("resources") else LinuxResources()
        )
    except TranslationError as exc:
        raise TranslationError(f"container {label(pb.name or pb.id)}: {exc}") from None
    return Container(
        id=pb.id,
        pod_id=pb.pod_sandbox_id,
        name=pb.name,
        state=container_state_from_pb(pb.state),
        labels=dict(pb.labels),
        annotations=dict(pb.annotations),
        resources=resources,
        oom_score_adj=linux.oom_score_adj.value if linux.HasField("oom_score_adj") else None,
        cgroups_path=linux.cgroups_path,
        mounts=tuple(
            Mount(destination=m.destination, source=m.source, type=m.type, options=tuple(m.options))
            for m in pb.mounts
        ),
        devices=tuple(
            Device(path=d.path, type=d.type, major=d.major, minor=d.minor) for d in linux.devices
        ),
        pid=pb.pid or None,
    )
