"""Settings of a simulated runtime."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model.kubelet import CgroupDriver
from nrirp.simruntime.emulation import HEAD, NriVersion
from nrirp.simruntime.errors import InvalidRequest
from nrirp.simruntime.objects import NodeSettings, ObjectStyle
from nrirp.simruntime.resources import HostLimits

DEFAULT_REGISTRATION_TIMEOUT = 5.0
DEFAULT_REQUEST_TIMEOUT = 2.0


def _version(value: NriVersion | str) -> NriVersion:
    return value if isinstance(value, NriVersion) else NriVersion.parse(value)


def _path(value: str | os.PathLike[str] | None) -> str | None:
    return None if value is None else os.fspath(value)


def _positive(_instance: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not value > 0:
        raise InvalidRequest(f"{attribute.name} must be positive, got {value!r}")


@attrs.frozen
class RuntimeOptions:
    """How the simulated runtime behaves (all optional).

    - ``socket_path``: listen here for external plugins; ``None`` accepts plugins only through
      :meth:`SimRuntime.open_plugin_socket` and :meth:`SimRuntime.spawn_plugin`.
    - ``nri_version``: the runtime-side NRI release to behave like, e.g. ``"v0.6.1"``
      (containerd 1.7.24) or ``"v0.12.2"`` (the default, containerd main).
    - ``runtime_name``/``runtime_version``: sent in Configure; the version defaults to the
      containerd release that embeds ``nri_version``.
    - ``registration_timeout``/``request_timeout``: seconds (containerd's 5 s / 2 s).
    - ``sync_size_limit``: refuse Synchronize messages above this many bytes as if they exceeded
      the 4 MiB ttRPC limit (forces split synchronization with small tests).
    - ``cgroup_driver``, ``memory_capacity`` (node memory, for kubelet's OOM score adjustment),
      ``host_cpus``/``host_mems`` (a cpuset outside them fails like runc), ``style`` (how
      detailed the pod/container objects are).
    - ``journal_limit``/``keep_messages``: how much the journal keeps.
    - ``clock``: wall clock in nanoseconds (creation times, kubelet's config.seen).
    """

    socket_path: str | None = attrs.field(default=None, converter=_path)
    nri_version: NriVersion = attrs.field(default=HEAD, converter=_version)
    runtime_name: str = "containerd"
    runtime_version: str = ""
    registration_timeout: float = attrs.field(
        default=DEFAULT_REGISTRATION_TIMEOUT, validator=_positive
    )
    request_timeout: float = attrs.field(default=DEFAULT_REQUEST_TIMEOUT, validator=_positive)
    sync_size_limit: int | None = None
    cgroup_driver: CgroupDriver = CgroupDriver.CGROUPFS
    memory_capacity: int = 64 << 30
    host_cpus: CPUSet | None = None
    host_mems: CPUSet | None = None
    style: ObjectStyle = attrs.field(factory=ObjectStyle)
    journal_limit: int | None = 100_000
    keep_messages: bool = True
    clock: Callable[[], int] = time.time_ns

    @property
    def effective_runtime_version(self) -> str:
        return self.runtime_version or self.nri_version.default_runtime_version

    @property
    def node(self) -> NodeSettings:
        return NodeSettings(self.nri_version, self.cgroup_driver, self.memory_capacity, self.style)

    @property
    def host(self) -> HostLimits:
        return HostLimits(self.host_cpus, self.host_mems)
