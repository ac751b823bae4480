"""Drive pods through CRI the way a kubelet does (cgroupfs driver, host-network pods).

The calls, their order, the pod cgroup layout (``/kubepods[/burstable|/besteffort]/pod<uid>``),
labels, annotations and resource numbers follow the kubelet so that containerd and NRI plugins see
what a real node would send. Checks read the truth from the container (``/proc/1/status``) and from
its cgroup, because CRI ``ContainerStatus`` keeps reporting what CRI asked, not what NRI changed.
"""

from __future__ import annotations

import json
import signal
import time
import uuid
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import grpc

from .cgroups import CgroupView, CpuSettings, remove_cgroup_tree
from .image import IDLE_CMD
from .processes import cmdline
from .resources import (
    LinuxResourceValues,
    QOSClass,
    Resources,
    linux_resources,
    pod_cgroup_parent,
    pod_qos,
    pod_totals,
)

if TYPE_CHECKING:
    from .containerd import Containerd

DEFAULT_TIMEOUT = 30.0
STOP_GRACE_SECONDS = 10
_SIGTERM_MASK = 1 << (signal.SIGTERM - 1)


class CriError(RuntimeError):
    """A CRI call failed; ``code`` is the gRPC status code, ``details`` containerd's message."""

    def __init__(self, method: str, code: grpc.StatusCode, details: str) -> None:
        super().__init__(f"CRI {method} failed: {code.name}: {details}")
        self.method = method
        self.code = code
        self.details = details


def _frozen_map(value: Mapping[str, str] | None = None) -> dict[str, str]:
    return dict(value or {})


@attrs.frozen
class ContainerSpec:
    """A container as in a pod spec. ``cpuset_cpus``/``cpuset_mems`` are what CRI asks for (the
    kubelet's CPU manager sets them); empty means "not specified"."""

    name: str
    resources: Resources = attrs.field(factory=Resources)
    cpuset_cpus: str = ""
    cpuset_mems: str = ""
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: dict[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    labels: dict[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    annotations: dict[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    image: str | None = None


@attrs.frozen
class PodSpec:
    """A pod: metadata plus its containers; QoS class and cgroup parent follow from them."""

    name: str
    containers: tuple[ContainerSpec, ...] = ()
    namespace: str = "default"
    uid: str = attrs.field(factory=lambda: str(uuid.uuid4()))
    labels: dict[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    annotations: dict[str, str] = attrs.field(factory=dict, converter=_frozen_map)

    @property
    def qos(self) -> QOSClass:
        return pod_qos(c.resources for c in self.containers)


@attrs.frozen
class Pod:
    """A pod sandbox run through CRI; ``containers`` maps container name to CRI id."""

    id: str
    spec: PodSpec
    qos: QOSClass
    cgroup_parent: str
    sandbox_config: Any = attrs.field(repr=False)
    containers: dict[str, str] = attrs.field(factory=dict)

    def container_id(self, name: str) -> str:
        """The CRI id of container ``name`` of this pod."""
        try:
            return self.containers[name]
        except KeyError:
            raise KeyError(f"pod {self.spec.name} has no container {name!r}") from None


@attrs.frozen
class ContainerInfo:
    """One entry of ListContainers."""

    id: str
    pod_sandbox_id: str
    name: str
    state: str
    labels: dict[str, str]
    annotations: dict[str, str]


@attrs.frozen
class PodInfo:
    """One entry of ListPodSandbox."""

    id: str
    name: str
    namespace: str
    uid: str
    state: str
    labels: dict[str, str]
    annotations: dict[str, str]


@attrs.frozen
class ExecResult:
    """The outcome of ExecSync."""

    exit_code: int
    stdout: str
    stderr: str


def memory_capacity() -> int:
    """The node's memory in bytes (``MemTotal``), as kubelet's machine info reports it."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no MemTotal in /proc/meminfo")


def _call(stub: Any, method: str, request: Any, timeout: float) -> Any:
    try:
        return getattr(stub, method)(request, timeout=timeout)
    except grpc.RpcError as exc:
        raise CriError(method, exc.code(), exc.details() or "") from exc


def _catches_sigterm(pid: int) -> bool:
    """``pid`` has a SIGTERM handler (``SigCgt`` of /proc/PID/status); False once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & _SIGTERM_MASK)
    return False


def remove_all_pods(runtime: Any, pb: Any, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Stop and remove every container and pod sandbox the runtime knows, kubelet-style."""
    sandboxes = _call(runtime, "ListPodSandbox", pb.ListPodSandboxRequest(), timeout).items
    containers = _call(runtime, "ListContainers", pb.ListContainersRequest(), timeout).containers
    for c in containers:
        if c.state == pb.CONTAINER_RUNNING:
            request = pb.StopContainerRequest(container_id=c.id, timeout=STOP_GRACE_SECONDS)
            _call(runtime, "StopContainer", request, timeout)
    for s in sandboxes:
        _call(runtime, "StopPodSandbox", pb.StopPodSandboxRequest(pod_sandbox_id=s.id), timeout)
    for c in containers:
        _call(runtime, "RemoveContainer", pb.RemoveContainerRequest(container_id=c.id), timeout)
    for s in sandboxes:
        _call(runtime, "RemovePodSandbox", pb.RemovePodSandboxRequest(pod_sandbox_id=s.id), timeout)


class Kubelet:
    """A thin, typed CRI client doing what the kubelet does for the tests' pods."""

    def __init__(
        self,
        containerd: Containerd,
        *,
        node_memory: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.containerd = containerd
        self.pb = containerd.cri.pb
        self.node_memory = node_memory or memory_capacity()
        self.timeout = timeout
        self.pods: dict[str, Pod] = {}

    def _rt(self, method: str, request: Any, timeout: float | None = None) -> Any:
        return _call(self.containerd.runtime(), method, request, timeout or self.timeout)

    # --- building CRI messages -------------------------------------------------------------
    def linux_resources(
        self, resources: Resources, qos: QOSClass, cpuset_cpus: str = "", cpuset_mems: str = ""
    ) -> LinuxResourceValues:
        """The numbers kubelet sends for ``resources`` in a pod of class ``qos``."""
        return linux_resources(
            resources, qos, self.node_memory, cpuset_cpus=cpuset_cpus, cpuset_mems=cpuset_mems
        )

    def _cri_resources(self, values: LinuxResourceValues) -> Any:
        return self.pb.LinuxContainerResources(
            cpu_period=values.cpu_period,
            cpu_quota=values.cpu_quota,
            cpu_shares=values.cpu_shares,
            memory_limit_in_bytes=values.memory_limit_in_bytes,
            oom_score_adj=values.oom_score_adj,
            cpuset_cpus=values.cpuset_cpus,
            cpuset_mems=values.cpuset_mems,
        )

    def _namespaces(self) -> Any:
        pb = self.pb
        return pb.NamespaceOption(network=pb.NODE, pid=pb.CONTAINER, ipc=pb.POD)

    def sandbox_config(self, spec: PodSpec) -> Any:
        """The PodSandboxConfig kubelet would send for ``spec``."""
        pb = self.pb
        qos = spec.qos
        labels = {
            **spec.labels,
            "io.kubernetes.pod.name": spec.name,
            "io.kubernetes.pod.namespace": spec.namespace,
            "io.kubernetes.pod.uid": spec.uid,
        }
        annotations = {
            **spec.annotations,
            "kubernetes.io/config.source": "api",
            "kubernetes.io/config.seen": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        totals = linux_resources(
            pod_totals(c.resources for c in spec.containers), qos, self.node_memory
        )
        return pb.PodSandboxConfig(
            metadata=pb.PodSandboxMetadata(
                name=spec.name, uid=spec.uid, namespace=spec.namespace, attempt=0
            ),
            hostname="",  # host network: runc refuses a hostname without a private UTS namespace
            log_directory=str(
                self.containerd.layout.pod_logs / f"{spec.namespace}_{spec.name}_{spec.uid}"
            ),
            labels=labels,
            annotations=annotations,
            linux=pb.LinuxPodSandboxConfig(
                cgroup_parent=pod_cgroup_parent(qos, spec.uid),
                security_context=pb.LinuxSandboxSecurityContext(
                    namespace_options=self._namespaces()
                ),
                resources=pb.LinuxContainerResources(
                    cpu_period=totals.cpu_period,
                    cpu_quota=totals.cpu_quota,
                    cpu_shares=totals.cpu_shares,
                    memory_limit_in_bytes=totals.memory_limit_in_bytes,
                ),
            ),
        )

    def container_config(self, pod: Pod, spec: ContainerSpec) -> Any:
        """The ContainerConfig kubelet would send for ``spec`` in ``pod``."""
        pb = self.pb
        labels = {
            **spec.labels,
            "io.kubernetes.container.name": spec.name,
            "io.kubernetes.pod.name": pod.spec.name,
            "io.kubernetes.pod.namespace": pod.spec.namespace,
            "io.kubernetes.pod.uid": pod.spec.uid,
        }
        digest = zlib.crc32(repr((spec.name, spec.image, spec.command, spec.args)).encode())
        annotations = {
            **spec.annotations,
            "io.kubernetes.container.hash": f"{digest:08x}",
            "io.kubernetes.container.restartCount": "0",
            "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
            "io.kubernetes.container.terminationMessagePolicy": "File",
            "io.kubernetes.pod.terminationGracePeriod": "30",
        }
        values = self.linux_resources(spec.resources, pod.qos, spec.cpuset_cpus, spec.cpuset_mems)
        return pb.ContainerConfig(
            metadata=pb.ContainerMetadata(name=spec.name, attempt=0),
            image=pb.ImageSpec(image=spec.image or self.containerd.image.ref),
            command=list(spec.command),
            args=list(spec.args),
            envs=[pb.KeyValue(key=k, value=v) for k, v in spec.env.items()],
            labels=labels,
            annotations=annotations,
            log_path=f"{spec.name}/0.log",
            linux=pb.LinuxContainerConfig(
                resources=self._cri_resources(values),
                security_context=pb.LinuxContainerSecurityContext(
                    namespace_options=self._namespaces()
                ),
            ),
        )

    # --- pod and container lifecycle -------------------------------------------------------
    def run_pod_sandbox(self, spec: PodSpec) -> Pod:
        """RunPodSandbox only (no containers yet)."""
        config = self.sandbox_config(spec)
        parent = config.linux.cgroup_parent
        self.containerd.track_cgroup(parent)
        reply = self._rt("RunPodSandbox", self.pb.RunPodSandboxRequest(config=config))
        pod = Pod(reply.pod_sandbox_id, spec, spec.qos, parent, config)
        self.pods[pod.id] = pod
        return pod

    def create_container(self, pod: Pod, spec: ContainerSpec) -> str:
        """CreateContainer in ``pod``; returns the container id."""
        request = self.pb.CreateContainerRequest(
            pod_sandbox_id=pod.id,
            config=self.container_config(pod, spec),
            sandbox_config=pod.sandbox_config,
        )
        cid: str = self._rt("CreateContainer", request).container_id
        pod.containers[spec.name] = cid
        return cid

    def start_container(self, container_id: str) -> None:
        """StartContainer; a container running the image's idle loop is also waited for until
        the loop has set its SIGTERM trap (see :meth:`wait_idle_loop_ready`)."""
        self._rt("StartContainer", self.pb.StartContainerRequest(container_id=container_id))
        self.wait_idle_loop_ready(container_id)

    def wait_idle_loop_ready(self, container_id: str, timeout: float = 10.0) -> None:
        """If the container runs the image's idle loop, wait until its PID 1 is the loop and
        catches SIGTERM. PID 1 of a PID namespace ignores signals it does not catch, so a
        StopContainer that came before the trap would wait out the whole grace period (seen
        in about 1 of 15 starts). Other commands are not waited for."""
        info = json.loads(self.container_status(container_id).info["info"])
        if tuple(info["runtimeSpec"]["process"]["args"]) != IDLE_CMD:
            return
        pid = int(info["pid"])
        deadline = time.monotonic() + timeout
        while not (tuple(cmdline(pid)) == IDLE_CMD and _catches_sigterm(pid)):
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"container {container_id}: the idle loop (PID {pid}) did not set its "
                    f"SIGTERM trap within {timeout}s"
                )
            time.sleep(0.005)

    def run_pod(self, spec: PodSpec) -> Pod:
        """RunPodSandbox, then CreateContainer + StartContainer for each container in order."""
        pod = self.run_pod_sandbox(spec)
        for container in spec.containers:
            self.start_container(self.create_container(pod, container))
        return pod

    def stop_container(self, container_id: str, grace: int = STOP_GRACE_SECONDS) -> None:
        """StopContainer with a grace period in seconds (SIGTERM, then SIGKILL)."""
        request = self.pb.StopContainerRequest(container_id=container_id, timeout=grace)
        self._rt("StopContainer", request, timeout=self.timeout + grace)

    def remove_container(self, container_id: str) -> None:
        """RemoveContainer."""
        self._rt("RemoveContainer", self.pb.RemoveContainerRequest(container_id=container_id))
        for pod in self.pods.values():
            for name, cid in list(pod.containers.items()):
                if cid == container_id:
                    del pod.containers[name]

    def stop_pod_sandbox(self, pod_id: str) -> None:
        """StopPodSandbox."""
        self._rt("StopPodSandbox", self.pb.StopPodSandboxRequest(pod_sandbox_id=pod_id))

    def remove_pod_sandbox(self, pod_id: str) -> None:
        """RemovePodSandbox, then remove the pod cgroup (containerd leaves it behind)."""
        self._rt("RemovePodSandbox", self.pb.RemovePodSandboxRequest(pod_sandbox_id=pod_id))
        pod = self.pods.pop(pod_id, None)
        if pod is not None:
            problems = remove_cgroup_tree(pod.cgroup_parent)
            if problems:
                raise RuntimeError(f"pod cgroup {pod.cgroup_parent} not removed: {problems}")
            self.containerd.forget_cgroup(pod.cgroup_parent)

    def remove_pod(self, pod: Pod, grace: int = STOP_GRACE_SECONDS) -> None:
        """Tear a pod down in kubelet order: stop containers, stop sandbox, remove all."""
        running = self.list_containers(pod_id=pod.id)
        for c in running:
            if c.state == "CONTAINER_RUNNING":
                self.stop_container(c.id, grace)
        self.stop_pod_sandbox(pod.id)
        for c in running:
            self.remove_container(c.id)
        self.remove_pod_sandbox(pod.id)

    def remove_all(self) -> None:
        """Remove every pod the runtime knows, and the cgroups of the pods made here."""
        remove_all_pods(self.containerd.runtime(), self.pb, self.timeout)
        problems = []
        for pod in list(self.pods.values()):
            problems += remove_cgroup_tree(pod.cgroup_parent)
            self.containerd.forget_cgroup(pod.cgroup_parent)
        self.pods.clear()
        if problems:
            raise RuntimeError(f"pod cgroups not removed: {problems}")

    # --- queries ---------------------------------------------------------------------------
    def list_containers(
        self, pod_id: str | None = None, state: str | None = None
    ) -> list[ContainerInfo]:
        """ListContainers, optionally filtered by pod and state (e.g. ``CONTAINER_RUNNING``)."""
        pb = self.pb
        flt = pb.ContainerFilter(pod_sandbox_id=pod_id or "")
        if state is not None:
            flt.state.CopyFrom(pb.ContainerStateValue(state=pb.ContainerState.Value(state)))
        reply = self._rt("ListContainers", pb.ListContainersRequest(filter=flt))
        return [
            ContainerInfo(
                id=c.id,
                pod_sandbox_id=c.pod_sandbox_id,
                name=c.metadata.name,
                state=pb.ContainerState.Name(c.state),
                labels=dict(c.labels),
                annotations=dict(c.annotations),
            )
            for c in reply.containers
        ]

    def list_pods(self, state: str | None = None) -> list[PodInfo]:
        """ListPodSandbox, optionally filtered by state (``SANDBOX_READY``/``SANDBOX_NOTREADY``)."""
        pb = self.pb
        flt = pb.PodSandboxFilter()
        if state is not None:
            flt.state.CopyFrom(pb.PodSandboxStateValue(state=pb.PodSandboxState.Value(state)))
        reply = self._rt("ListPodSandbox", pb.ListPodSandboxRequest(filter=flt))
        return [
            PodInfo(
                id=s.id,
                name=s.metadata.name,
                namespace=s.metadata.namespace,
                uid=s.metadata.uid,
                state=pb.PodSandboxState.Name(s.state),
                labels=dict(s.labels),
                annotations=dict(s.annotations),
            )
            for s in reply.items
        ]

    def container_status(self, container_id: str) -> Any:
        """The raw verbose ContainerStatusResponse."""
        request = self.pb.ContainerStatusRequest(container_id=container_id, verbose=True)
        return self._rt("ContainerStatus", request)

    def container_pid(self, container_id: str) -> int:
        """The host PID of the container's init process."""
        info = json.loads(self.container_status(container_id).info["info"])
        pid = int(info.get("pid", 0))
        if pid <= 0:
            raise RuntimeError(f"container {container_id} has no running process")
        return pid

    def exec_sync(self, container_id: str, cmd: Sequence[str], timeout: int = 10) -> ExecResult:
        """ExecSync: run ``cmd`` in the container and collect its output."""
        request = self.pb.ExecSyncRequest(container_id=container_id, cmd=list(cmd), timeout=timeout)
        reply = self._rt("ExecSync", request, timeout=self.timeout + timeout)
        return ExecResult(
            exit_code=reply.exit_code,
            stdout=reply.stdout.decode(errors="replace"),
            stderr=reply.stderr.decode(errors="replace"),
        )

    def exec_ok(self, container_id: str, cmd: Sequence[str], timeout: int = 10) -> str:
        """ExecSync that must succeed; returns stdout."""
        result = self.exec_sync(container_id, cmd, timeout)
        if result.exit_code != 0:
            raise RuntimeError(f"{list(cmd)} in {container_id} exited {result.exit_code}: {result}")
        return result.stdout

    def update_container_resources(
        self,
        container_id: str,
        resources: Resources,
        *,
        cpuset_cpus: str = "",
        cpuset_mems: str = "",
        qos: QOSClass | None = None,
    ) -> None:
        """UpdateContainerResources with kubelet numbers for ``resources`` (+ optional cpusets)."""
        if qos is None:
            owners = [p for p in self.pods.values() if container_id in p.containers.values()]
            if not owners:
                raise ValueError(f"container {container_id} is not from a tracked pod: pass qos")
            qos = owners[0].qos
        values = self.linux_resources(resources, qos, cpuset_cpus, cpuset_mems)
        request = self.pb.UpdateContainerResourcesRequest(
            container_id=container_id, linux=self._cri_resources(values)
        )
        self._rt("UpdateContainerResources", request)

    # --- what the container really got -----------------------------------------------------
    def _proc_status_field(self, container_id: str, field: str) -> str:
        out = self.exec_ok(container_id, ["grep", f"{field}:", "/proc/1/status"])
        return out.split(":", 1)[1].strip()

    def container_cpus_allowed(self, container_id: str) -> str:
        """``Cpus_allowed_list`` of the container's PID 1, read inside the container."""
        return self._proc_status_field(container_id, "Cpus_allowed_list")

    def container_mems_allowed(self, container_id: str) -> str:
        """``Mems_allowed_list`` of the container's PID 1, read inside the container."""
        return self._proc_status_field(container_id, "Mems_allowed_list")

    def container_cgroup(self, container_id: str) -> CgroupView:
        """The container's cgroups, found from its PID (v1, v2 or hybrid hosts)."""
        return CgroupView.of_pid(self.container_pid(container_id))

    def container_cgroup_cpuset(self, container_id: str) -> str:
        """The container cgroup's ``cpuset.cpus``."""
        return self.container_cgroup(container_id).cpuset_cpus()

    def container_cgroup_mems(self, container_id: str) -> str:
        """The container cgroup's ``cpuset.mems``."""
        return self.container_cgroup(container_id).cpuset_mems()

    def container_cgroup_cpu(self, container_id: str) -> CpuSettings:
        """The container cgroup's CPU shares/weight and CFS quota/period."""
        return self.container_cgroup(container_id).cpu()

    def container_cgroup_memory_limit(self, container_id: str) -> int | None:
        """The container cgroup's memory limit (None = unlimited)."""
        return self.container_cgroup(container_id).memory_limit()
