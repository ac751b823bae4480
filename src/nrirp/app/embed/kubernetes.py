"""Neutral pods and containers from Kubernetes pod specs, for host agents that have them.

A host agent (koordlet-style) often holds the Kubernetes ``Pod`` object of what its runtime
hooks see. :class:`KubernetesPod` reads the parts that matter (metadata, init and regular
containers with their requests and limits) and builds the :class:`~nrirp.domain.model.Pod` and
:class:`~nrirp.domain.model.Container` the engine takes, with what kubelet would hand the
runtime: QoS class, pod cgroup parent, CPU shares/quota/period, memory limit, hugepage limits,
OOM score adjustment and cgroups path. The kubelet arithmetic is the domain's
(:mod:`nrirp.domain.model.kubelet`), the one the simulated runtime uses too, so both agree exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod, QOSClass
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
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec


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


def _containers(value: Any, path: str) -> list[ContainerSpec]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ManifestError(f"{path}: expected a list, got {type(value).__name__}")
    out = []
    for index, item in enumerate(value):
        where = f"{path}[{index}]"
        doc = _mapping(item, where)
        resources = _mapping(doc.get("resources"), f"{where}.resources")
        try:
            parsed = Resources.of(
                _mapping(resources.get("requests"), f"{where}.resources.requests"),
                _mapping(resources.get("limits"), f"{where}.resources.limits"),
            )
            out.append(ContainerSpec(_string(doc.get("name"), f"{where}.name"), parsed))
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
        ``namespace``, ``uid``, ``labels``, ``annotations``, ``spec.runtimeClassName`` and
        the name and ``resources`` of ``spec.initContainers`` and ``spec.containers``. Other
        fields are ignored. Raises :class:`ManifestError` naming the path of a bad value."""
        root = _mapping(manifest, "<manifest>")
        meta = _mapping(root.get("metadata"), "metadata")
        spec = _mapping(root.get("spec"), "spec")
        try:
            pod = PodSpec(
                _string(meta.get("name"), "metadata.name"),
                namespace=_string(meta.get("namespace"), "metadata.namespace", "default"),
                containers=_containers(spec.get("containers"), "spec.containers"),
                uid=_string(meta.get("uid"), "metadata.uid"),
                labels=_string_map(meta.get("labels"), "metadata.labels"),
                annotations=_string_map(meta.get("annotations"), "metadata.annotations"),
                runtime_handler=_string(spec.get("runtimeClassName"), "spec.runtimeClassName"),
            )
        except InvalidSpec as exc:
            raise ManifestError(str(exc)) from None
        if not pod.containers:
            raise ManifestError("spec.containers: a pod needs at least one container")
        return cls(pod, tuple(_containers(spec.get("initContainers"), "spec.initContainers")))

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
        Burstable containers depends on it; :attr:`Engine.memory_capacity` has it).
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
            pid=pid,
        )


def resources_of(resources: Resources) -> LinuxResources:
    """The neutral settings kubelet asks the runtime for, for these requests and limits
    (e.g. for :meth:`Engine.update_container` after an in-place resize)."""
    return container_resources(resources)


def _cpuset(text: str) -> CPUSet | None:
    """The cpuset CRI asks for; "" (not restricted) is none (the spec checked the syntax)."""
    return CPUSet.parse(text) if text else None
