"""Neutral pods and containers from Kubernetes pod specs, for host agents that have them.

A host agent (koordlet-style) often holds the Kubernetes ``Pod`` object of what its runtime
hooks see. :class:`KubernetesPod` reads the parts that matter (metadata, init and regular
containers with their requests and limits, their ``hostPath`` volume mounts) and builds the
:class:`~nrirp.domain.model.Pod` and :class:`~nrirp.domain.model.Container` the engine takes,
with what kubelet would hand the runtime: QoS class, pod cgroup parent, CPU shares/quota/period,
memory limit, hugepage limits, OOM score adjustment, cgroups path, and the container spec's
devices and volume mounts (what topology hints are made from). The kubelet arithmetic is the
domain's (:mod:`nrirp.domain.model.kubelet`), the one the simulated runtime uses too, so both
agree exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Container,
    ContainerState,
    Device,
    LinuxResources,
    Mount,
    Pod,
    QOSClass,
)
from nrirp.domain.model.kubelet import (
    CgroupDriver,
    InvalidSpec,
    Resources,
    cgroups_path,
    container_resources,
    oom_score_adj,
    pod_cgroup_parent,
    pod_qos,
    pod_totals,
)
from nrirp.domain.model.pod_spec import ContainerSpec, MountSpec, PodSpec


class ManifestError(ValueError):
    """A pod manifest that cannot be read; the message names the path of the problem."""


def _mapping(value: Any, path: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ManifestError(f"{path}: expected a mapping, got {type(value).__name__}")
    return value


def _string_map(value: Any, path: str) -> dict[str, str]:
    out = {}
    for key, item in _mapping(value, path).items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise ManifestError(f"{path}.{key}: expected a string, got {item!r}")
        out[key] = item
    return out


def _string(value: Any, path: str, default: str = "") -> str:
    if value is None:
        return default
    if not isinstance(value, str):
        raise ManifestError(f"{path}: expected a string, got {value!r}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ManifestError(f"{path}: expected a list, got {type(value).__name__}")
    return value


def _host_paths(value: Any, path: str) -> dict[str, str | None]:
    """The pod's volumes by name: the host path of a ``hostPath`` volume, ``None`` for the
    others (their host paths are kubelet's, not in the pod object)."""
    out: dict[str, str | None] = {}
    for index, item in enumerate(_list(value, path)):
        where = f"{path}[{index}]"
        doc = _mapping(item, where)
        name = _string(doc.get("name"), f"{where}.name")
        host = doc.get("hostPath")
        out[name] = None
        if host is not None:
            where = f"{where}.hostPath.path"
            out[name] = _absolute(_mapping(host, where).get("path"), where)
    return out


def _absolute(value: Any, path: str) -> str:
    text = _string(value, path)
    if not text.startswith("/") or "\x00" in text:
        raise ManifestError(f"{path}: {text!r}: expected an absolute path")
    return text


_PROPAGATION = {"None": "rprivate", "HostToContainer": "rslave", "Bidirectional": "rshared"}
"""A volume mount's ``mountPropagation`` as containerd's CRI plugin puts it in the options."""


def _mounts(value: Any, path: str, volumes: Mapping[str, str | None]) -> list[MountSpec]:
    """The bind mounts the runtime gets for the container's ``volumeMounts`` of ``hostPath``
    volumes: the host path at ``mountPath``, options as containerd's CRI plugin writes them
    (``rbind``, the propagation, ``ro``/``rw``). Mounts of other volumes and ``subPath``
    mounts (kubelet bind-mounts those from its own directories) are left out."""
    out = []
    for index, item in enumerate(_list(value, path)):
        where = f"{path}[{index}]"
        doc = _mapping(item, where)
        name = _string(doc.get("name"), f"{where}.name")
        if name not in volumes:
            raise ManifestError(f"{where}.name: no volume {name!r} in spec.volumes")
        source = volumes[name]
        if source is None or _string(doc.get("subPath"), f"{where}.subPath"):
            continue
        propagation = _string(doc.get("mountPropagation"), f"{where}.mountPropagation", "None")
        if propagation not in _PROPAGATION:
            known = ", ".join(_PROPAGATION)
            raise ManifestError(
                f"{where}.mountPropagation: {propagation!r}: expected one of {known}"
            )
        read_only = doc.get("readOnly", False)
        if not isinstance(read_only, bool):
            raise ManifestError(f"{where}.readOnly: expected a boolean, got {read_only!r}")
        options = ("rbind", _PROPAGATION[propagation], "ro" if read_only else "rw")
        destination = _absolute(doc.get("mountPath"), f"{where}.mountPath")
        try:
            out.append(MountSpec(destination, source, options))
        except InvalidSpec as exc:
            raise ManifestError(f"{where}: {exc}") from None
    return out


def _containers(
    value: Any, path: str, volumes: Mapping[str, str | None] | None = None
) -> list[ContainerSpec]:
    out = []
    for index, item in enumerate(_list(value, path)):
        where = f"{path}[{index}]"
        doc = _mapping(item, where)
        resources = _mapping(doc.get("resources"), f"{where}.resources")
        mounts = _mounts(doc.get("volumeMounts"), f"{where}.volumeMounts", volumes or {})
        try:
            parsed = Resources.of(
                _mapping(resources.get("requests"), f"{where}.resources.requests"),
                _mapping(resources.get("limits"), f"{where}.resources.limits"),
            )
            name = _string(doc.get("name"), f"{where}.name")
            out.append(ContainerSpec(name, parsed, mounts=mounts))
        except InvalidSpec as exc:
            raise ManifestError(f"{where}: {exc}") from None
    return out


def _max(values: Iterable[int | None]) -> int | None:
    given = [v for v in values if v is not None]
    return max(given) if given else None


@attrs.frozen
class KubernetesPod:
    """A Kubernetes pod as kubelet describes it to the runtime.

    ``spec`` holds the metadata and the regular containers, ``init_containers`` the init
    containers (they count for the QoS class and the pod's resources, as in kubelet).
    """

    spec: PodSpec
    init_containers: tuple[ContainerSpec, ...] = ()

    @classmethod
    def from_manifest(cls, manifest: Mapping[str, Any]) -> KubernetesPod:
        """Read a ``v1.Pod`` (as a mapping, e.g. parsed JSON/YAML): ``metadata.name``,
        ``namespace``, ``uid``, ``labels``, ``annotations``, ``spec.runtimeClassName``, and
        of ``spec.initContainers`` and ``spec.containers`` the name, ``resources`` and the
        ``volumeMounts`` of ``spec.volumes``' ``hostPath`` volumes (a pod object lists no
        device nodes: build a :class:`ContainerSpec` with ``devices`` for those). Other
        fields are ignored. Raises :class:`ManifestError` naming the path of a bad value."""
        root = _mapping(manifest, "<manifest>")
        meta = _mapping(root.get("metadata"), "metadata")
        spec = _mapping(root.get("spec"), "spec")
        volumes = _host_paths(spec.get("volumes"), "spec.volumes")
        try:
            pod = PodSpec(
                _string(meta.get("name"), "metadata.name"),
                namespace=_string(meta.get("namespace"), "metadata.namespace", "default"),
                containers=_containers(spec.get("containers"), "spec.containers", volumes),
                uid=_string(meta.get("uid"), "metadata.uid"),
                labels=_string_map(meta.get("labels"), "metadata.labels"),
                annotations=_string_map(meta.get("annotations"), "metadata.annotations"),
                runtime_handler=_string(spec.get("runtimeClassName"), "spec.runtimeClassName"),
            )
        except InvalidSpec as exc:
            raise ManifestError(str(exc)) from None
        if not pod.containers:
            raise ManifestError("spec.containers: a pod needs at least one container")
        inits = _containers(spec.get("initContainers"), "spec.initContainers", volumes)
        return cls(pod, tuple(inits))

    @property
    def qos(self) -> QOSClass:
        """kubelet's ``GetPodQOS`` over init and regular containers."""
        return pod_qos(c.resources for c in (*self.init_containers, *self.spec.containers))

    def container_spec(self, name: str) -> ContainerSpec:
        for spec in (*self.init_containers, *self.spec.containers):
            if spec.name == name:
                return spec
        raise KeyError(f"pod {self.spec.namespace}/{self.spec.name} has no container {name!r}")

    def pod_resources(self) -> Resources:
        """The pod's requests and limits as kubelet sums them: the regular containers' sum, or
        the largest init container's value where that is larger."""
        total = pod_totals(c.resources for c in self.spec.containers)
        inits = [c.resources for c in self.init_containers]
        if not inits:
            return total

        def largest(field: str) -> int | None:
            return _max([getattr(total, field), *(getattr(r, field) for r in inits)])

        return Resources(
            cpu_request=largest("cpu_request"),
            cpu_limit=largest("cpu_limit"),
            memory_request=largest("memory_request"),
            memory_limit=largest("memory_limit"),
            hugepage_limits=total.hugepage_limits,
        )

    def sandbox(self, pod_id: str, *, cgroup_driver: CgroupDriver = CgroupDriver.CGROUPFS) -> Pod:
        """The neutral pod whose id (the runtime's pod sandbox id) is ``pod_id`` (the pod
        needs a ``uid``)."""
        spec = self.spec
        if not spec.uid:
            raise ManifestError("metadata.uid: the pod needs a uid (kubelet names cgroups by it)")
        qos = self.qos
        return Pod(
            id=pod_id,
            name=spec.name,
            uid=spec.uid,
            namespace=spec.namespace,
            labels={
                **spec.labels,
                "io.kubernetes.pod.name": spec.name,
                "io.kubernetes.pod.namespace": spec.namespace,
                "io.kubernetes.pod.uid": spec.uid,
            },
            annotations=dict(spec.annotations),
            cgroup_parent=pod_cgroup_parent(qos, spec.uid, cgroup_driver),
            runtime_handler=spec.runtime_handler,
            resources=container_resources(self.pod_resources()),
            qos_class=qos,
        )

    def container(
        self,
        name: str,
        container_id: str,
        *,
        pod_id: str | None = None,
        memory_capacity: int,
        state: ContainerState = ContainerState.CREATING,
        cgroup_driver: CgroupDriver = CgroupDriver.CGROUPFS,
        pid: int | None = None,
        sandbox_id: str | None = None,
    ) -> Container:
        """The neutral container ``name`` with id ``container_id`` in the pod whose id (the
        runtime's pod sandbox id, :meth:`sandbox`'s) is ``pod_id``.

        ``memory_capacity`` is the node's memory in bytes (kubelet's OOM score adjustment of
        Burstable containers depends on it; :attr:`Engine.memory_capacity` has it). The
        spec's ``devices`` and ``mounts`` (bind mounts of host paths) are the container's,
        in order; not the mounts a runtime adds to every container (``/proc``, ...).
        ``sandbox_id`` is the former name of ``pod_id``, still accepted."""
        if (pod_id is None) == (sandbox_id is None):
            raise TypeError("give the pod's id as pod_id (or its former name sandbox_id), once")
        pod_id = pod_id if pod_id is not None else sandbox_id
        assert pod_id is not None
        spec = self.container_spec(name)
        pod = self.spec
        qos = self.qos
        parent = pod_cgroup_parent(qos, pod.uid, cgroup_driver)
        resources = container_resources(
            spec.resources, cpus=_cpuset(spec.cpuset_cpus), mems=_cpuset(spec.cpuset_mems)
        )
        return Container(
            id=container_id,
            pod_id=pod_id,
            name=name,
            state=state,
            labels={
                "io.kubernetes.container.name": name,
                "io.kubernetes.pod.name": pod.name,
                "io.kubernetes.pod.namespace": pod.namespace,
                "io.kubernetes.pod.uid": pod.uid,
            },
            resources=resources,
            oom_score_adj=oom_score_adj(qos, spec.resources.memory_request, memory_capacity),
            cgroups_path=cgroups_path(parent, container_id, cgroup_driver),
            mounts=tuple(
                Mount(destination=m.destination, source=m.source, options=m.options)
                for m in spec.mounts
            ),
            devices=tuple(
                Device(path=d.path, type=d.type, major=d.major, minor=d.minor) for d in spec.devices
            ),
            pid=pid,
        )


def resources_of(resources: Resources) -> LinuxResources:
    """The neutral settings kubelet asks the runtime for, for these requests and limits
    (e.g. for :meth:`Engine.update_container` after an in-place resize)."""
    return container_resources(resources)


def _cpuset(text: str) -> CPUSet | None:
    """The cpuset CRI asks for; "" (not restricted) is none (the spec checked the syntax)."""
    return CPUSet.parse(text) if text else None
