"""Pods and containers given as NRI messages (a recording's), rather than built from specs.

The runtime keeps a spec beside each message (its status shows it, a restart uses it); for a
given message it is the least spec that says the same: names, labels and annotations, the QoS
class its cgroup parent tells (else BestEffort, as kubelet's parent for no requests).
"""

from __future__ import annotations

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.model.kubelet import InvalidSpec, QOSClass, qos_from_cgroup_parent
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from nrirp.simruntime.errors import InvalidRequest
from nrirp.simruntime.model import ContainerRecord, PodRecord, PodState


def _name(value: str, fallback: str) -> str:
    return value if value and "/" not in value and "\x00" not in value else fallback


def copy_pod(pb: api_pb2.PodSandbox) -> api_pb2.PodSandbox:
    out = api_pb2.PodSandbox()
    out.CopyFrom(pb)
    return out


def copy_container(pb: api_pb2.Container) -> api_pb2.Container:
    out = api_pb2.Container()
    out.CopyFrom(pb)
    return out


def pod_record(pb: api_pb2.PodSandbox, ready: bool = True) -> PodRecord:
    """The runtime's record of the pod ``pb`` (copied), with a spec that says the same."""
    if not pb.id:
        raise InvalidRequest("a pod sandbox needs an id")
    try:
        spec = PodSpec(
            _name(pb.name, "pod-" + pb.id[:12]),
            namespace=_name(pb.namespace, "default"),
            uid=pb.uid,
            labels=dict(pb.labels),
            annotations=dict(pb.annotations),
            runtime_handler=pb.runtime_handler,
        )
    except InvalidSpec as exc:
        raise InvalidRequest(f"pod sandbox {pb.id!r}: {exc}") from None
    qos = qos_from_cgroup_parent(pb.linux.cgroup_parent) or QOSClass.BESTEFFORT
    state = PodState.READY if ready else PodState.NOTREADY
    return PodRecord(copy_pod(pb), spec, qos, state)


def container_record(pb: api_pb2.Container, attempt: int = 0) -> ContainerRecord:
    """The runtime's record of the container ``pb`` (copied), with a spec that says the same."""
    if not pb.id or not pb.pod_sandbox_id:
        raise InvalidRequest("a container needs an id and a pod sandbox id")
    try:
        spec = ContainerSpec(
            _name(pb.name, "ctr-" + pb.id[:12]),
            labels=dict(pb.labels),
            annotations=dict(pb.annotations),
        )
    except InvalidSpec as exc:
        raise InvalidRequest(f"container {pb.id!r}: {exc}") from None
    return ContainerRecord(copy_container(pb), spec, attempt, api_pb2.ContainerAdjustment())
