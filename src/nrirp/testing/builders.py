"""Pods and containers from Kubernetes-style resources, for tests.

Write what a pod spec says (requests and limits in Kubernetes quantities); the QoS class,
CPU shares, CFS quota, memory limit, OOM score adjustment and cgroup paths follow by kubelet's
arithmetic (``nrirp.domain.model.kubelet``, through :class:`~nrirp.app.embed.KubernetesPod`),
exactly as a runtime would report them. Ids are derived from the names, so a test reads the
same every run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

import attrs

from nrirp.app.embed import ContainerState, KubernetesPod
from nrirp.domain.model import Container, Pod, QOSClass, Resources
from nrirp.domain.model.kubelet import QuantityValue
from nrirp.domain.model.pod_spec import ContainerSpec, DeviceSpec, MountSpec, PodSpec

Quantities = Mapping[str, QuantityValue]


def container(
    name: str,
    *,
    requests: Quantities | None = None,
    limits: Quantities | None = None,
    annotations: Mapping[str, str] | None = None,
    cpuset_cpus: str = "",
    cpuset_mems: str = "",
    devices: Iterable[DeviceSpec] = (),
    mounts: Iterable[MountSpec] = (),
) -> ContainerSpec:
    """A container with Kubernetes requests and limits (``{"cpu": "500m", "memory":
    "64Mi"}``; a missing request defaults to its limit, as the API server does).

    ``annotations`` are the container's own (``KEY: VALUE``): :func:`pod` turns each into the
    pod annotation ``KEY/container.NAME``, the convention policies read. ``cpuset_cpus`` /
    ``cpuset_mems`` are what kubelet's CPU and memory managers would ask for through CRI.
    """
    return ContainerSpec(
        name,
        resources=Resources.of(requests=requests, limits=limits),
        annotations=dict(annotations or {}),
        cpuset_cpus=cpuset_cpus,
        cpuset_mems=cpuset_mems,
        devices=tuple(devices),
        mounts=tuple(mounts),
    )


def guaranteed(
    name: str,
    cpu: QuantityValue,
    memory: QuantityValue,
    *,
    annotations: Mapping[str, str] | None = None,
    cpuset_cpus: str = "",
    cpuset_mems: str = "",
    devices: Iterable[DeviceSpec] = (),
    mounts: Iterable[MountSpec] = (),
) -> ContainerSpec:
    """A container whose CPU and memory limits equal its requests (a pod of only such
    containers is Guaranteed); ``cpuset_cpus``/``cpuset_mems``: what kubelet's static CPU
    and memory managers would give it."""
    return container(
        name,
        limits={"cpu": cpu, "memory": memory},
        annotations=annotations,
        cpuset_cpus=cpuset_cpus,
        cpuset_mems=cpuset_mems,
        devices=devices,
        mounts=mounts,
    )


def burstable(
    name: str,
    cpu: QuantityValue | None = None,
    memory: QuantityValue | None = None,
    *,
    cpu_limit: QuantityValue | None = None,
    memory_limit: QuantityValue | None = None,
    annotations: Mapping[str, str] | None = None,
    devices: Iterable[DeviceSpec] = (),
    mounts: Iterable[MountSpec] = (),
) -> ContainerSpec:
    """A container with requests (``cpu``, ``memory``) and optionally larger limits."""
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    limits = {k: v for k, v in (("cpu", cpu_limit), ("memory", memory_limit)) if v is not None}
    return container(
        name,
        requests=requests,
        limits=limits,
        annotations=annotations,
        devices=devices,
        mounts=mounts,
    )


def besteffort(
    name: str,
    *,
    annotations: Mapping[str, str] | None = None,
    devices: Iterable[DeviceSpec] = (),
    mounts: Iterable[MountSpec] = (),
) -> ContainerSpec:
    """A container with no requests and no limits: BestEffort."""
    return container(name, annotations=annotations, devices=devices, mounts=mounts)


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@attrs.frozen
class PodUnderTest:
    """A pod built by :func:`pod`: its Kubernetes description and the neutral values an
    engine is called with (:attr:`sandbox`, :meth:`container`)."""

    kube: KubernetesPod

    @property
    def name(self) -> str:
        return self.kube.spec.name

    @property
    def namespace(self) -> str:
        return self.kube.spec.namespace

    @property
    def id(self) -> str:
        """The sandbox id (derived from namespace and name)."""
        return f"sandbox-{_short_hash(f'{self.namespace}/{self.name}')}"

    @property
    def qos(self) -> QOSClass:
        """The QoS class kubelet gives it."""
        return self.kube.qos

    @property
    def container_names(self) -> tuple[str, ...]:
        """The regular containers, in creation order."""
        return tuple(c.name for c in self.kube.spec.containers)

    @property
    def init_container_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.kube.init_containers)

    @property
    def sandbox(self) -> Pod:
        """The neutral pod (RunPodSandbox's argument)."""
        return self.kube.sandbox(self.id)

    def container_id(self, name: str) -> str:
        self.kube.container_spec(name)  # KeyError for a name the pod does not have
        return f"{self.id}-{name}"

    def container(
        self,
        name: str,
        *,
        memory_capacity: int,
        state: ContainerState = ContainerState.CREATING,
        pid: int | None = None,
    ) -> Container:
        """The neutral container ``name`` as the runtime reports it (``memory_capacity``: the
        node's memory, for kubelet's OOM score adjustment)."""
        return self.kube.container(
            name,
            self.container_id(name),
            pod_id=self.id,
            memory_capacity=memory_capacity,
            state=state,
            pid=pid,
        )


def pod(
    name: str,
    *containers: ContainerSpec,
    namespace: str = "default",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
    init_containers: Iterable[ContainerSpec] = (),
    uid: str | None = None,
    runtime_class: str = "",
) -> PodUnderTest:
    """A pod of ``containers`` (at least one). Its uid is derived from namespace and name
    unless given; each container's own ``annotations`` become ``KEY/container.NAME`` pod
    annotations."""
    merged = dict(annotations or {})
    for each in (*init_containers, *containers):
        for key, value in each.annotations.items():
            merged[f"{key}/container.{each.name}"] = value
    spec = PodSpec(
        name,
        namespace=namespace,
        containers=containers,
        uid=uid or f"uid-{_short_hash(f'{namespace}/{name}')}",
        labels=dict(labels or {}),
        annotations=merged,
        runtime_handler=runtime_class,
    )
    if not containers:
        raise ValueError(f"pod {namespace}/{name}: a pod needs at least one container")
    return PodUnderTest(KubernetesPod(spec, tuple(init_containers)))
