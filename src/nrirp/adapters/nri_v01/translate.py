"""An NRI v0.1 request -> the domain's ``Pod`` / ``Container`` / ``LinuxResources``.

What containerd 1.6's CRI plugin passes (``pkg/cri/server``: sandbox_run.go,
container_start.go, and ``WithNRISandboxDelete`` for deletes): the task's id and pid, the
sandbox id (equal to the id for the sandbox itself), the sandbox's labels (kubelet's
``io.kubernetes.pod.name/namespace/uid`` and the pod's labels; none on delete) and the OCI
spec's ``linux.resources``, ``cgroupsPath`` and annotations (CRI's ``io.kubernetes.cri.*``
ones, plus the pod annotations the runtime's ``pod_annotations`` lets through).

The values are built to match what NRI v0.2+ reports for the same pod, so that a policy
decides the same through both: pod annotations are the sandbox's annotations without CRI's
own, a container's annotations leave out what it inherited from its pod, and container labels
are kubelet's four identity labels. What v0.1 never carries (pod resources, OOM score, mounts,
devices) is left unset.
"""

from __future__ import annotations

from collections.abc import Mapping

from nrirp.adapters.nri_v01.protocol import Request, RequestError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod

CRI_PREFIX = "io.kubernetes.cri."
POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
POD_UID = "io.kubernetes.pod.uid"
CONTAINER_NAME = "io.kubernetes.container.name"
CRI_CONTAINER_NAME = "io.kubernetes.cri.container-name"
CRI_SANDBOX_NAME = "io.kubernetes.cri.sandbox-name"
CRI_SANDBOX_NAMESPACE = "io.kubernetes.cri.sandbox-namespace"
CRI_SANDBOX_UID = "io.kubernetes.cri.sandbox-uid"


def cgroup_parent_of(cgroups_path: str) -> str:
    """The parent (the pod's cgroup) of a container's cgroups path, for both drivers:
    ``/kubepods/burstable/pod<uid>/<id>`` -> ``/kubepods/burstable/pod<uid>``,
    ``kubepods-burstable-pod<uid>.slice:cri-containerd:<id>`` -> the slice."""
    if not cgroups_path:
        return ""
    if ":" in cgroups_path:
        return cgroups_path.split(":", 1)[0]
    parent = cgroups_path.rstrip("/").rsplit("/", 1)[0]
    return parent or "/"


def pod_of(request: Request) -> Pod:
    """The pod a request belongs to, from what the request says about it.

    For the sandbox's own request this is the pod; a container's request carries the same
    labels and (with pod annotations let through) the same annotations, so a pod first seen
    through one of its containers (the daemon was started later) gets the same identity.
    """
    spec = request.spec
    labels = request.labels
    annotations = spec.annotations
    own = set() if request.is_sandbox else container_own_keys(annotations)
    pod_annotations = {
        k: v for k, v in annotations.items() if not k.startswith(CRI_PREFIX) and k not in own
    }
    return Pod(
        id=request.sandbox_id or request.id,
        name=labels.get(POD_NAME) or annotations.get(CRI_SANDBOX_NAME, ""),
        uid=labels.get(POD_UID) or annotations.get(CRI_SANDBOX_UID, ""),
        namespace=labels.get(POD_NAMESPACE) or annotations.get(CRI_SANDBOX_NAMESPACE, ""),
        labels=labels,
        annotations=pod_annotations,
        cgroup_parent=cgroup_parent_of(spec.cgroups_path),
    )


def container_own_keys(annotations: Mapping[str, str]) -> set[str]:
    """Annotation keys kubelet sets on a container itself (``io.kubernetes.container.*``)."""
    return {k for k in annotations if k.startswith("io.kubernetes.container.")}


def container_of(request: Request, pod: Pod) -> Container:
    """The container of a (non-sandbox) request, in ``pod``.

    Its annotations are the spec's without those equal to its pod's (pod annotations the
    runtime passed through), as NRI v0.2 reports a container's own annotations.
    """
    spec = request.spec
    annotations = {k: v for k, v in spec.annotations.items() if pod.annotations.get(k) != v}
    name = spec.annotations.get(CRI_CONTAINER_NAME, "")
    labels = {
        CONTAINER_NAME: name,
        POD_NAME: pod.name,
        POD_NAMESPACE: pod.namespace,
        POD_UID: pod.uid,
    }
    return Container(
        id=request.id,
        pod_id=pod.id,
        name=name,
        state=ContainerState.CREATING,
        labels={k: v for k, v in labels.items() if v},
        annotations=annotations,
        resources=resources_from_oci(spec.resources),
        cgroups_path=spec.cgroups_path,
        pid=request.pid if request.pid > 0 else None,
    )


def _int(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"{where}: expected an integer")
    return value


def _section(resources: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = resources.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RequestError(f"spec.resources.{key}: expected an object")
    return value


def _cpuset(value: object, where: str) -> CPUSet | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RequestError(f"{where}: expected a CPU list string")
    try:
        return CPUSet.parse(value)
    except ValueError as exc:
        raise RequestError(f"{where}: {exc}") from None


def resources_from_oci(resources: Mapping[str, object] | None) -> LinuxResources:
    """The OCI ``linux.resources`` object (runtime-spec ``LinuxResources`` as JSON) as domain
    resources; what is absent stays unset."""
    if not resources:
        return LinuxResources()
    cpu = _section(resources, "cpu")
    memory = _section(resources, "memory")
    pids = _section(resources, "pids")
    where = "spec.resources"
    hugepages: dict[str, int] = {}
    raw_hugepages = resources.get("hugepageLimits")
    if raw_hugepages is not None:
        if not isinstance(raw_hugepages, list):
            raise RequestError(f"{where}.hugepageLimits: expected an array")
        for index, item in enumerate(raw_hugepages):
            if not isinstance(item, dict) or not isinstance(item.get("pageSize"), str):
                raise RequestError(f"{where}.hugepageLimits[{index}]: expected a pageSize")
            limit = _int(item.get("limit"), f"{where}.hugepageLimits[{index}].limit")
            hugepages[item["pageSize"]] = limit or 0
    unified = resources.get("unified")
    if unified is not None and not (
        isinstance(unified, dict) and all(isinstance(v, str) for v in unified.values())
    ):
        raise RequestError(f"{where}.unified: expected an object of strings")
    return LinuxResources(
        cpu_shares=_int(cpu.get("shares"), f"{where}.cpu.shares"),
        cpu_quota=_int(cpu.get("quota"), f"{where}.cpu.quota"),
        cpu_period=_int(cpu.get("period"), f"{where}.cpu.period"),
        cpu_realtime_runtime=_int(cpu.get("realtimeRuntime"), f"{where}.cpu.realtimeRuntime"),
        cpu_realtime_period=_int(cpu.get("realtimePeriod"), f"{where}.cpu.realtimePeriod"),
        cpus=_cpuset(cpu.get("cpus"), f"{where}.cpu.cpus"),
        mems=_cpuset(cpu.get("mems"), f"{where}.cpu.mems"),
        memory_limit=_int(memory.get("limit"), f"{where}.memory.limit"),
        memory_reservation=_int(memory.get("reservation"), f"{where}.memory.reservation"),
        memory_swap=_int(memory.get("swap"), f"{where}.memory.swap"),
        hugepage_limits=hugepages,
        unified=dict(unified or {}),
        pids_limit=_int(pids.get("limit"), f"{where}.pids.limit"),
    )
