"""A recording's parts in the simulator's workload format: the header and the runtime-level
steps, both ways (domain values <-> plain data).

The classes are structured by the config converter (strict types, unknown keys refused,
lowerCamelCase keys); :func:`pod_data`, :func:`container_data` and :func:`resources_data`
write the same keys, leaving out what is unset. ``docs/simulator.md`` (Record and replay)
lists every key.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from nrirp.domain.config.errors import Issue, quote
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Container,
    ContainerState,
    Device,
    LinuxResources,
    Mount,
    Pod,
)

FORMAT = "nrirp.recording/v1"
"""The header's ``format``; an incompatible change gets a new version."""

_STATES = {state.value: state for state in ContainerState}
_RESOURCE_SCALARS = (
    "cpu_shares",
    "cpu_quota",
    "cpu_period",
    "cpu_realtime_runtime",
    "cpu_realtime_period",
    "memory_limit",
    "memory_reservation",
    "memory_swap",
    "rdt_class",
    "blockio_class",
    "pids_limit",
)
_RESOURCE_KEYS = {
    "cpu_shares": "cpuShares",
    "cpu_quota": "cpuQuota",
    "cpu_period": "cpuPeriod",
    "cpu_realtime_runtime": "cpuRealtimeRuntime",
    "cpu_realtime_period": "cpuRealtimePeriod",
    "memory_limit": "memoryLimit",
    "memory_reservation": "memoryReservation",
    "memory_swap": "memorySwap",
    "rdt_class": "rdtClass",
    "blockio_class": "blockioClass",
    "pids_limit": "pidsLimit",
}


# ---------------------------------------------------------------------- values
@attrs.frozen(kw_only=True)
class RecordedResources:
    """A container's (or pod's) Linux resources as the runtime reported them; unset fields are
    left out. ``cpus``/``mems`` are cpu lists."""

    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    cpu_realtime_runtime: int | None = None
    cpu_realtime_period: int | None = None
    cpus: CPUSet | None = None
    mems: CPUSet | None = None
    memory_limit: int | None = None
    memory_reservation: int | None = None
    memory_swap: int | None = None
    hugepage_limits: Mapping[str, int] = attrs.field(factory=dict)
    rdt_class: str | None = None
    blockio_class: str | None = None
    unified: Mapping[str, str] = attrs.field(factory=dict)
    pids_limit: int | None = None

    def domain(self) -> LinuxResources:
        return LinuxResources(
            **{name: getattr(self, name) for name in _RESOURCE_SCALARS},
            cpus=self.cpus,
            mems=self.mems,
            hugepage_limits=dict(self.hugepage_limits),
            unified=dict(self.unified),
        )


@attrs.frozen(kw_only=True)
class RecordedMount:
    destination: str
    source: str = ""
    type: str = ""
    options: tuple[str, ...] = ()

    def domain(self) -> Mount:
        return Mount(self.destination, self.source, self.type, self.options)


@attrs.frozen(kw_only=True)
class RecordedDevice:
    path: str
    type: str = "c"
    major: int = 0
    minor: int = 0

    def domain(self) -> Device:
        return Device(self.path, self.type, self.major, self.minor)


@attrs.frozen(kw_only=True)
class RecordedPod:
    """A pod sandbox as the runtime reported it (``runPodSandbox``, ``synchronize``)."""

    id: str
    name: str = ""
    uid: str = ""
    namespace: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    cgroup_parent: str = ""
    runtime_handler: str = ""
    resources: RecordedResources | None = None
    overhead: RecordedResources | None = None

    def config_problems(self) -> Iterator[Issue]:
        if not self.id:
            yield ("id",), "must not be empty"

    def domain(self) -> Pod:
        return Pod(
            id=self.id,
            name=self.name,
            uid=self.uid,
            namespace=self.namespace,
            labels=self.labels,
            annotations=self.annotations,
            cgroup_parent=self.cgroup_parent,
            runtime_handler=self.runtime_handler,
            resources=None if self.resources is None else self.resources.domain(),
            overhead=None if self.overhead is None else self.overhead.domain(),
        )

    def label(self) -> str:
        return f"{self.namespace}/{self.name}" if self.name else self.id[:12]


@attrs.frozen(kw_only=True)
class RecordedContainer:
    """A container as the runtime reported it (``createContainer``, ``synchronize``)."""

    id: str
    pod: str
    """The id of its pod sandbox."""
    name: str = ""
    state: str = ContainerState.UNKNOWN.value
    labels: Mapping[str, str] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    resources: RecordedResources = attrs.field(factory=RecordedResources)
    oom_score_adj: int | None = None
    cgroups_path: str = ""
    mounts: tuple[RecordedMount, ...] = ()
    devices: tuple[RecordedDevice, ...] = ()
    pid: int | None = None

    def config_problems(self) -> Iterator[Issue]:
        for key, value in (("id", self.id), ("pod", self.pod)):
            if not value:
                yield (key,), "must not be empty"
        if self.state not in _STATES:
            yield (
                ("state",),
                f"invalid value {quote(self.state)}: expected one of {', '.join(_STATES)}",
            )

    def domain(self) -> Container:
        return Container(
            id=self.id,
            pod_id=self.pod,
            name=self.name,
            state=_STATES[self.state],
            labels=self.labels,
            annotations=self.annotations,
            resources=self.resources.domain(),
            oom_score_adj=self.oom_score_adj,
            cgroups_path=self.cgroups_path,
            mounts=tuple(m.domain() for m in self.mounts),
            devices=tuple(d.domain() for d in self.devices),
            pid=self.pid,
        )


# ---------------------------------------------------------------------- steps
@attrs.frozen(kw_only=True)
class ObjectRef:
    """``startContainer``, ``stopContainer``, ``removeContainer``, ``stopPodSandbox``,
    ``removePodSandbox``: the id of what the runtime acted on."""

    id: str

    def config_problems(self) -> Iterator[Issue]:
        if not self.id:
            yield ("id",), "must not be empty"


@attrs.frozen(kw_only=True)
class UpdateContainerResources:
    """``updateContainerResources``: the runtime changes a container's resources to these
    (kubelet's UpdateContainerResources, as NRI's UpdateContainer reports it)."""

    id: str
    resources: RecordedResources

    def config_problems(self) -> Iterator[Issue]:
        if not self.id:
            yield ("id",), "must not be empty"


@attrs.frozen(kw_only=True)
class Synchronize:
    """``synchronize``: what the runtime ran when the plugin (re)connected."""

    pods: tuple[RecordedPod, ...] = ()
    containers: tuple[RecordedContainer, ...] = ()

    def config_problems(self) -> Iterator[Issue]:
        pods = {p.id for p in self.pods}
        for index, ctr in enumerate(self.containers):
            if ctr.pod not in pods:
                yield (("containers", index, "pod"), f"pod {quote(ctr.pod)} is not listed")


@attrs.frozen(kw_only=True)
class RecordingHeader:
    """``recording``: where a recording came from and how its node started.

    ``machine``: the node's machine spec (``docs/hardware.md``, checked when used);
    ``memory_types``: every node's memory type as ``NODE=TYPE``; ``config``: the policy's
    configuration in force when the file starts (a document; ``None``: the defaults);
    ``state``: the resource manager's saved state when the file starts (``None``: none), which
    a replay restores; ``part``: 1 for the file the daemon started, one more per rotation.
    """

    format: str
    policy: str
    machine: Any
    memory_types: tuple[str, ...] = ()
    config: Any = None
    state: Any = None
    node: str = ""
    started: str = ""
    part: int = 1

    def config_problems(self) -> Iterator[Issue]:
        if self.format != FORMAT:
            yield (
                ("format",),
                f"unsupported recording format {quote(self.format)} (this nrirp reads {FORMAT})",
            )
        if not self.policy:
            yield ("policy",), "must not be empty"
        if not isinstance(self.machine, Mapping):
            yield ("machine",), "expected a machine spec (a mapping)"
        if self.config is not None and not isinstance(self.config, Mapping):
            yield ("config",), "expected a configuration document (a mapping)"
        if self.state is not None and not isinstance(self.state, Mapping):
            yield ("state",), "expected a saved state (a mapping)"
        for index, item in enumerate(self.memory_types):
            node, _, kind = item.partition("=")
            if not node.isdigit() or not kind:
                yield (("memoryTypes", index), f"invalid value {quote(item)}: expected NODE=TYPE")


# ---------------------------------------------------------------------- domain -> data
def resources_data(res: LinuxResources) -> dict[str, Any]:
    """``res`` with the keys of :class:`RecordedResources`, unset fields left out."""
    out: dict[str, Any] = {}
    for name in _RESOURCE_SCALARS[:5]:
        value = getattr(res, name)
        if value is not None:
            out[_RESOURCE_KEYS[name]] = value
    if res.cpus is not None:
        out["cpus"] = str(res.cpus)
    if res.mems is not None:
        out["mems"] = str(res.mems)
    for name in _RESOURCE_SCALARS[5:8]:
        value = getattr(res, name)
        if value is not None:
            out[_RESOURCE_KEYS[name]] = value
    if res.hugepage_limits:
        out["hugepageLimits"] = dict(res.hugepage_limits)
    for name in _RESOURCE_SCALARS[8:10]:
        value = getattr(res, name)
        if value is not None:
            out[_RESOURCE_KEYS[name]] = value
    if res.unified:
        out["unified"] = dict(res.unified)
    if res.pids_limit is not None:
        out["pidsLimit"] = res.pids_limit
    return out


def pod_data(pod: Pod) -> dict[str, Any]:
    """``pod`` with the keys of :class:`RecordedPod` (what the cache stamps itself, the QoS
    class and the first-seen time, is left out: the runtime does not report it)."""
    out: dict[str, Any] = {"id": pod.id}
    for key, value in (("name", pod.name), ("uid", pod.uid), ("namespace", pod.namespace)):
        if value:
            out[key] = value
    if pod.labels:
        out["labels"] = dict(pod.labels)
    if pod.annotations:
        out["annotations"] = dict(pod.annotations)
    if pod.cgroup_parent:
        out["cgroupParent"] = pod.cgroup_parent
    if pod.runtime_handler:
        out["runtimeHandler"] = pod.runtime_handler
    if pod.resources is not None:
        out["resources"] = resources_data(pod.resources)
    if pod.overhead is not None:
        out["overhead"] = resources_data(pod.overhead)
    return out


def container_data(ctr: Container) -> dict[str, Any]:
    """``ctr`` with the keys of :class:`RecordedContainer` (what the cache adds, requirements,
    tags, times and pending changes, is left out: the runtime does not report it); mounts and
    devices stay attrs values (``lines.yaml_bytes`` writes them with their field names)."""
    out: dict[str, Any] = {"id": ctr.id, "pod": ctr.pod_id}
    if ctr.name:
        out["name"] = ctr.name
    out["state"] = ctr.state.value
    if ctr.labels:
        out["labels"] = dict(ctr.labels)
    if ctr.annotations:
        out["annotations"] = dict(ctr.annotations)
    resources = resources_data(ctr.resources)
    if resources:
        out["resources"] = resources
    if ctr.oom_score_adj is not None:
        out["oomScoreAdj"] = ctr.oom_score_adj
    if ctr.cgroups_path:
        out["cgroupsPath"] = ctr.cgroups_path
    # the domain's Mount and Device have the format's keys: the encoder writes them as they are
    if ctr.mounts:
        out["mounts"] = ctr.mounts
    if ctr.devices:
        out["devices"] = ctr.devices
    if ctr.pid is not None:
        out["pid"] = ctr.pid
    return out
