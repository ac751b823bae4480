"""NRI ``PodSandbox`` and ``Container`` messages shaped like the ones containerd sends.

Labels, annotations, environment, mounts, namespaces and cgroup paths follow what kubelet asks
and containerd's CRI plugin adds, so plugins see realistic objects (and Synchronize messages have
realistic sizes). Fields the emulated NRI release does not have are left out.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import attrs

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.model.kubelet import (
    CgroupDriver,
    QOSClass,
    Resources,
    cgroups_path,
    oom_score_adj,
    pod_cgroup_parent,
    pod_totals,
)
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from nrirp.simruntime.emulation import NriVersion
from nrirp.simruntime.kubelet import linux_resources

SANDBOX_CPU_SHARES = 2
"""containerd gives the pause container the minimum CPU shares."""
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_CRI_STATE = "/var/lib/containerd/io.containerd.grpc.v1.cri/sandboxes"
_CRI_RUN = "/run/containerd/io.containerd.grpc.v1.cri/sandboxes"
_KUBE_ENV = (
    "KUBERNETES_SERVICE_HOST=10.96.0.1",
    "KUBERNETES_SERVICE_PORT=443",
    "KUBERNETES_SERVICE_PORT_HTTPS=443",
    "KUBERNETES_PORT=tcp://10.96.0.1:443",
    "KUBERNETES_PORT_443_TCP=tcp://10.96.0.1:443",
    "KUBERNETES_PORT_443_TCP_PROTO=tcp",
    "KUBERNETES_PORT_443_TCP_PORT=443",
    "KUBERNETES_PORT_443_TCP_ADDR=10.96.0.1",
)


@attrs.frozen
class ObjectStyle:
    """How much of a real node's detail the built objects carry.

    ``default_mounts``: the OCI and kubelet mounts every container has (/proc, /dev, ...,
    service account). ``kube_env``: the ``KUBERNETES_*`` service variables. ``runtime_annotations``:
    the annotations kubelet and containerd add to every container (hash, restart count,
    ``io.kubernetes.cri.*``). A kubelet-like container is about 3 KB in a Synchronize message;
    :meth:`bare` ones about 0.4 KB, which fits 5,000 of them into one 4 MiB message.
    """

    default_mounts: bool = True
    kube_env: bool = True
    runtime_annotations: bool = True

    @classmethod
    def bare(cls) -> ObjectStyle:
        """Only what the specs say plus identity labels, ids, paths and resources."""
        return cls(default_mounts=False, kube_env=False, runtime_annotations=False)


@attrs.frozen
class NodeSettings:
    """What the objects depend on besides the specs."""

    version: NriVersion
    cgroup_driver: CgroupDriver = CgroupDriver.CGROUPFS
    memory_capacity: int = 64 << 30
    style: ObjectStyle = ObjectStyle()


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def build_pod_sandbox(
    spec: PodSpec, *, pod_id: str, uid: str, pid: int, seen_at: str, node: NodeSettings
) -> api_pb2.PodSandbox:
    """The NRI pod of ``spec`` as containerd reports it once its sandbox runs."""
    qos = spec.qos
    parent = pod_cgroup_parent(qos, uid, node.cgroup_driver)
    pod = api_pb2.PodSandbox(
        id=pod_id,
        name=spec.name,
        uid=uid,
        namespace=spec.namespace,
        labels={
            **spec.labels,
            "io.kubernetes.pod.name": spec.name,
            "io.kubernetes.pod.namespace": spec.namespace,
            "io.kubernetes.pod.uid": uid,
        },
        annotations={
            **spec.annotations,
            "kubernetes.io/config.source": "api",
            "kubernetes.io/config.seen": seen_at,
        },
        runtime_handler=spec.runtime_handler,
        pid=pid,
    )
    linux = pod.linux
    linux.cgroup_parent = parent
    linux.cgroups_path = cgroups_path(parent, pod_id, node.cgroup_driver)
    for kind in ("pid", "ipc", "uts", "mount"):
        linux.namespaces.add(type=kind)
    if not spec.host_network:
        linux.namespaces.add(type="network", path=f"/var/run/netns/cni-{uid}")
    totals = pod_totals(c.resources for c in spec.containers)
    linux.pod_resources.CopyFrom(linux_resources(totals))
    linux.resources.cpu.shares.value = SANDBOX_CPU_SHARES
    if node.version.at_least(8) and spec.ips:
        pod.ips.extend(spec.ips)
    return pod


def container_id(pod_id: str, name: str, attempt: int) -> str:
    """A stable 64-hex container id, like containerd's random ones in shape."""
    return _digest("container", pod_id, name, str(attempt))


def pod_id_for(namespace: str, name: str, uid: str, attempt: int) -> str:
    """A stable 64-hex sandbox id."""
    return _digest("sandbox", namespace, name, uid, str(attempt))


def pod_uid_for(namespace: str, name: str, serial: int) -> str:
    """A stable UUID-shaped pod uid for pods whose spec has none."""
    h = _digest("uid", namespace, name, str(serial))
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def build_container(
    pod: api_pb2.PodSandbox,
    qos: QOSClass,
    spec: ContainerSpec,
    *,
    cid: str,
    attempt: int,
    created_at: int,
    node: NodeSettings,
    host_network: bool,
) -> api_pb2.Container:
    """The NRI container of ``spec`` in ``pod`` as containerd passes it to CreateContainer."""
    version = node.version
    image = spec.image
    spec_hash = _digest("spec", spec.name, image, *spec.command, *spec.args)[:8]
    ctr = api_pb2.Container(
        id=cid,
        pod_sandbox_id=pod.id,
        name=spec.name,
        state=api_pb2.CONTAINER_UNKNOWN,
        labels={
            **spec.labels,
            "io.kubernetes.container.name": spec.name,
            "io.kubernetes.pod.name": pod.name,
            "io.kubernetes.pod.namespace": pod.namespace,
            "io.kubernetes.pod.uid": pod.uid,
        },
        annotations=dict(spec.annotations),
        args=[*(spec.command or ("/bin/sh",)), *spec.args],
        env=_environment(pod, spec.env, node.style),
    )
    if node.style.runtime_annotations:
        ctr.annotations.update(_runtime_annotations(pod, spec, spec_hash, attempt))
    if node.style.default_mounts:
        volumes = {m.destination for m in spec.mounts}
        ctr.mounts.extend(
            m for m in _default_mounts(pod, spec.name, spec_hash) if m.destination not in volumes
        )
    ctr.mounts.extend(
        api_pb2.Mount(destination=m.destination, type="bind", source=m.source, options=m.options)
        for m in spec.mounts
    )
    linux = ctr.linux
    linux.devices.extend(
        api_pb2.LinuxDevice(path=d.path, type=d.type, major=d.major, minor=d.minor)
        for d in spec.devices
    )
    for kind in ("pid", "ipc", "uts", "mount"):
        path = f"/proc/{pod.pid}/ns/{kind}" if kind in ("ipc", "uts") else ""
        linux.namespaces.add(type=kind, path=path)
    if not host_network:
        linux.namespaces.add(type="network", path=f"/proc/{pod.pid}/ns/net")
    linux.resources.CopyFrom(
        linux_resources(spec.resources, cpuset_cpus=spec.cpuset_cpus, cpuset_mems=spec.cpuset_mems)
    )
    if version.at_least(8):  # containerd 2.0+ reports the OOM score adjustment
        linux.oom_score_adj.value = container_oom_score_adj(qos, spec.resources, node)
    linux.cgroups_path = cgroups_path(pod.linux.cgroup_parent, cid, node.cgroup_driver)
    if version.at_least(10):
        ctr.created_at = created_at
    if version.at_least(12, 2):
        ctr.image.name = image
    return ctr


def container_oom_score_adj(qos: QOSClass, resources: Resources, node: NodeSettings) -> int:
    """The OOM score adjustment kubelet asks for the container."""
    return oom_score_adj(qos, resources.memory_request, node.memory_capacity)


def _runtime_annotations(
    pod: api_pb2.PodSandbox, spec: ContainerSpec, spec_hash: str, attempt: int
) -> dict[str, str]:
    return {
        "io.kubernetes.container.hash": spec_hash,
        "io.kubernetes.container.restartCount": str(attempt),
        "io.kubernetes.container.terminationMessagePath": "/dev/termination-log",
        "io.kubernetes.container.terminationMessagePolicy": "File",
        "io.kubernetes.pod.terminationGracePeriod": "30",
        "io.kubernetes.cri.container-type": "container",
        "io.kubernetes.cri.container-name": spec.name,
        "io.kubernetes.cri.image-name": spec.image,
        "io.kubernetes.cri.sandbox-id": pod.id,
        "io.kubernetes.cri.sandbox-name": pod.name,
        "io.kubernetes.cri.sandbox-namespace": pod.namespace,
        "io.kubernetes.cri.sandbox-uid": pod.uid,
    }


def _environment(pod: api_pb2.PodSandbox, env: Mapping[str, str], style: ObjectStyle) -> list[str]:
    out = [DEFAULT_PATH, f"HOSTNAME={pod.name}"]
    out.extend(f"{key}={value}" for key, value in env.items())
    if style.kube_env:
        out.extend(_KUBE_ENV)
    return out


def _default_mounts(pod: api_pb2.PodSandbox, name: str, spec_hash: str) -> list[api_pb2.Mount]:
    kubelet = f"/var/lib/kubelet/pods/{pod.uid}"
    bind_rw = ["rbind", "rprivate", "rw"]

    def mount(dest: str, kind: str, source: str, options: list[str]) -> api_pb2.Mount:
        return api_pb2.Mount(destination=dest, type=kind, source=source, options=options)

    return [
        mount("/proc", "proc", "proc", ["nosuid", "noexec", "nodev"]),
        mount("/dev", "tmpfs", "tmpfs", ["nosuid", "strictatime", "mode=755", "size=65536k"]),
        mount(
            "/dev/pts",
            "devpts",
            "devpts",
            ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"],
        ),
        mount("/dev/mqueue", "mqueue", "mqueue", ["nosuid", "noexec", "nodev"]),
        mount("/sys", "sysfs", "sysfs", ["nosuid", "noexec", "nodev", "ro"]),
        mount(
            "/sys/fs/cgroup", "cgroup", "cgroup", ["nosuid", "noexec", "nodev", "relatime", "ro"]
        ),
        mount("/etc/hosts", "bind", f"{kubelet}/etc-hosts", bind_rw),
        mount("/dev/termination-log", "bind", f"{kubelet}/containers/{name}/{spec_hash}", bind_rw),
        mount("/etc/hostname", "bind", f"{_CRI_STATE}/{pod.id}/hostname", bind_rw),
        mount("/etc/resolv.conf", "bind", f"{_CRI_STATE}/{pod.id}/resolv.conf", bind_rw),
        mount("/dev/shm", "bind", f"{_CRI_RUN}/{pod.id}/shm", bind_rw),
        mount(
            "/var/run/secrets/kubernetes.io/serviceaccount",
            "bind",
            f"{kubelet}/volumes/kubernetes.io~projected/kube-api-access-{spec_hash[:5]}",
            ["rbind", "rprivate", "ro"],
        ),
    ]
