"""Pods and containers as a kubelet describes them to its runtime.

The simulated runtime takes them as its input; the embedding API reads them from pod manifests.
Bad values raise :class:`~nrirp.domain.model.kubelet.InvalidSpec` naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.model.kubelet import InvalidSpec, QOSClass, Resources, pod_qos

DEFAULT_IMAGE = "docker.io/library/busybox:1.36"


def _names(value: str) -> str:
    if not value or "/" in value or "\x00" in value:
        raise InvalidSpec(f"invalid name {value!r}: must be non-empty, without '/'")
    return value


def _str_map(value: Mapping[str, str] | None) -> dict[str, str]:
    out = dict(value or {})
    for key, item in out.items():
        if not isinstance(key, str) or not isinstance(item, str):
            raise InvalidSpec(f"labels/annotations/env must map str to str, got {key!r}")
    return out


def _resources(_instance: object, _attribute: object, value: object) -> None:
    if not isinstance(value, Resources):
        raise InvalidSpec(f"resources must be Resources (use Resources.of), got {value!r}")


def _cpuset(_instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    try:
        CPUSet.parse(value)
    except CPUSetError as exc:
        raise InvalidSpec(f"{attribute.name} {value!r}: {exc}") from None


def _device_type(_instance: object, _attribute: object, value: str) -> None:
    if value not in ("c", "b", "u"):
        raise InvalidSpec(f"device type {value!r}: expected 'c', 'b' or 'u'")


def _absolute(_instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value.startswith("/") or "\x00" in value:
        raise InvalidSpec(f"{attribute.name} {value!r}: must be an absolute path")


def _device_number(_instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidSpec(f"device {attribute.name} {value!r}: expected an integer >= 0")


@attrs.frozen
class DeviceSpec:
    """A device node the container gets (the OCI ``linux.devices`` entry)."""

    path: str = attrs.field(validator=_absolute)
    type: str = attrs.field(default="c", validator=_device_type)
    major: int = attrs.field(default=0, validator=_device_number)
    minor: int = attrs.field(default=0, validator=_device_number)


DEFAULT_VOLUME_OPTIONS = ("rbind", "rprivate", "rw")
"""Options containerd gives a kubelet volume bind mount."""


def _options(value: Iterable[str]) -> tuple[str, ...]:
    items = tuple(value)
    if not all(isinstance(item, str) for item in items):
        raise InvalidSpec(f"mount options must be strings, got {items!r}")
    return items


@attrs.frozen
class MountSpec:
    """A volume: host path ``source`` bind-mounted at ``destination`` in the container."""

    destination: str = attrs.field(validator=_absolute)
    source: str = attrs.field(validator=_absolute)
    options: tuple[str, ...] = attrs.field(default=DEFAULT_VOLUME_OPTIONS, converter=_options)


def _typed_tuple(value: Iterable[Any], kind: type[Any], what: str) -> tuple[Any, ...]:
    items = tuple(value)
    for item in items:
        if not isinstance(item, kind):
            raise InvalidSpec(f"{what} must be {kind.__name__}, got {type(item).__name__}")
    return items


def _devices(value: Iterable[DeviceSpec]) -> tuple[DeviceSpec, ...]:
    return _typed_tuple(value, DeviceSpec, "devices")


def _mounts(value: Iterable[MountSpec]) -> tuple[MountSpec, ...]:
    items: tuple[MountSpec, ...] = _typed_tuple(value, MountSpec, "mounts")
    destinations = [m.destination for m in items]
    for destination in destinations:
        if destinations.count(destination) > 1:
            raise InvalidSpec(f"two mounts at {destination!r}")
    return items


@attrs.frozen
class ContainerSpec:
    """A container of a pod spec.

    ``cpuset_cpus``/``cpuset_mems`` are what CRI asks for (kubelet's CPU manager sets them);
    empty means "not restricted". ``annotations`` are the container's own CRI annotations;
    kubelet's standard ones are added by the runtime. ``devices`` and ``mounts`` (volumes)
    come after the runtime's default mounts; a volume replaces a default mount at the same
    destination.
    """

    name: str = attrs.field(converter=_names)
    resources: Resources = attrs.field(factory=Resources, validator=_resources)
    image: str = DEFAULT_IMAGE
    command: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    args: tuple[str, ...] = attrs.field(default=(), converter=tuple)
    env: Mapping[str, str] = attrs.field(factory=dict, converter=_str_map)
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=_str_map)
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=_str_map)
    cpuset_cpus: str = attrs.field(default="", validator=_cpuset)
    cpuset_mems: str = attrs.field(default="", validator=_cpuset)
    devices: tuple[DeviceSpec, ...] = attrs.field(default=(), converter=_devices)
    mounts: tuple[MountSpec, ...] = attrs.field(default=(), converter=_mounts)


def _containers(value: Iterable[ContainerSpec]) -> tuple[ContainerSpec, ...]:
    items = tuple(value)
    seen: set[str] = set()
    for item in items:
        if not isinstance(item, ContainerSpec):
            raise InvalidSpec(f"containers must be ContainerSpec, got {type(item).__name__}")
        if item.name in seen:
            raise InvalidSpec(f"duplicate container name {item.name!r} in pod spec")
        seen.add(item.name)
    return items


@attrs.frozen
class PodSpec:
    """A pod: metadata plus its containers, from which the QoS class and cgroup parent follow.

    ``uid`` empty lets the runtime choose one (deterministically). ``ips`` are reported in the
    pod sandbox where the emulated NRI version has the field.
    """

    name: str = attrs.field(converter=_names)
    namespace: str = attrs.field(default="default", converter=_names)
    containers: tuple[ContainerSpec, ...] = attrs.field(default=(), converter=_containers)
    uid: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict, converter=_str_map)
    annotations: Mapping[str, str] = attrs.field(factory=dict, converter=_str_map)
    runtime_handler: str = ""
    host_network: bool = False
    ips: tuple[str, ...] = attrs.field(default=(), converter=tuple)

    @property
    def qos(self) -> QOSClass:
        """The pod's QoS class, as kubelet derives it from its containers."""
        return pod_qos(c.resources for c in self.containers)

    def container(self, name: str) -> ContainerSpec:
        """The spec of container ``name``."""
        for spec in self.containers:
            if spec.name == name:
                return spec
        raise InvalidSpec(f"pod {self.namespace}/{self.name} has no container {name!r}")
