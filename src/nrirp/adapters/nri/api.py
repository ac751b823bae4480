"""Helpers for NRI API messages: event masks with names, adjustment and update builders.

The Python counterpart of the Go ``pkg/api`` conveniences. Everything works on the generated
``api_pb2`` messages (this is adapter code; the domain never sees protobuf types).

- :class:`EventMask` -- subscription bits (``1 << (event - 1)``), with Go's event names,
  :func:`parse_event_mask` (``"CreateContainer,stop_container"``, ``"all"``, ``"pod"``, ...)
  and :meth:`EventMask.pretty`.
- Resource setters shared by :class:`ContainerAdjustment` and :class:`ContainerUpdate`
  (``set_cpuset_cpus(msg, "0-3")``, ``set_memory_limit(msg, 1 << 30)``, ...), adjustment-only
  helpers (annotations, env, mounts, devices, hooks, rlimits, args, cgroups path, OOM score) and
  the keyword builders :func:`container_update` and :func:`container_adjustment`.
- Removal marks: a key prefixed with ``-`` removes the entry (:func:`mark_for_removal`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence

from nrirp.adapters.nri.gen import api_pb2

PLUGIN_SERVICE = "nri.pkg.api.v1alpha1.Plugin"
"""ttRPC service the plugin serves on connection 1."""
RUNTIME_SERVICE = "nri.pkg.api.v1alpha1.Runtime"
"""ttRPC service the runtime serves on connection 2."""

DEFAULT_SOCKET_PATH = "/var/run/nri/nri.sock"
PLUGIN_SOCKET_ENV = "NRI_PLUGIN_SOCKET"
PLUGIN_NAME_ENV = "NRI_PLUGIN_NAME"
PLUGIN_IDX_ENV = "NRI_PLUGIN_IDX"

ContainerAdjustment = api_pb2.ContainerAdjustment
ContainerUpdate = api_pb2.ContainerUpdate
Adjustable = api_pb2.ContainerAdjustment | api_pb2.ContainerUpdate
"""Messages carrying ``linux.resources``: resource setters accept either."""

# --------------------------------------------------------------------------- events


class EventMask(enum.IntFlag):
    """A set of NRI events, one bit per event (``1 << (event - 1)``), as sent in Configure."""

    RUN_POD_SANDBOX = 1 << 0
    STOP_POD_SANDBOX = 1 << 1
    REMOVE_POD_SANDBOX = 1 << 2
    CREATE_CONTAINER = 1 << 3
    POST_CREATE_CONTAINER = 1 << 4
    START_CONTAINER = 1 << 5
    POST_START_CONTAINER = 1 << 6
    UPDATE_CONTAINER = 1 << 7
    POST_UPDATE_CONTAINER = 1 << 8
    STOP_CONTAINER = 1 << 9
    REMOVE_CONTAINER = 1 << 10
    UPDATE_POD_SANDBOX = 1 << 11
    POST_UPDATE_POD_SANDBOX = 1 << 12
    VALIDATE_CONTAINER_ADJUSTMENT = 1 << 13

    @classmethod
    def of(cls, *events: int) -> EventMask:
        """The mask holding the given ``api_pb2.Event`` values."""
        mask = cls(0)
        for event in events:
            if not api_pb2.RUN_POD_SANDBOX <= event < api_pb2.LAST:
                raise ValueError(f"not an NRI event: {event}")
            mask |= cls(1 << (event - 1))
        return mask

    def events(self) -> tuple[int, ...]:
        """The ``api_pb2.Event`` values in the mask, ascending (unknown bits skipped)."""
        return tuple(e for e in range(1, api_pb2.LAST) if self & (1 << (e - 1)))

    def pretty(self) -> str:
        """Comma-separated Go event names, e.g. ``"CreateContainer,StopContainer"``."""
        names = [EVENT_NAMES[e] for e in self.events()]
        unknown = int(self) & ~int(ALL_EVENTS)
        if unknown:
            names.append(f"unknown(0x{unknown:x})")
        return ",".join(names)


EVENT_NAMES: dict[int, str] = {
    api_pb2.RUN_POD_SANDBOX: "RunPodSandbox",
    api_pb2.STOP_POD_SANDBOX: "StopPodSandbox",
    api_pb2.REMOVE_POD_SANDBOX: "RemovePodSandbox",
    api_pb2.CREATE_CONTAINER: "CreateContainer",
    api_pb2.POST_CREATE_CONTAINER: "PostCreateContainer",
    api_pb2.START_CONTAINER: "StartContainer",
    api_pb2.POST_START_CONTAINER: "PostStartContainer",
    api_pb2.UPDATE_CONTAINER: "UpdateContainer",
    api_pb2.POST_UPDATE_CONTAINER: "PostUpdateContainer",
    api_pb2.STOP_CONTAINER: "StopContainer",
    api_pb2.REMOVE_CONTAINER: "RemoveContainer",
    api_pb2.UPDATE_POD_SANDBOX: "UpdatePodSandbox",
    api_pb2.POST_UPDATE_POD_SANDBOX: "PostUpdatePodSandbox",
    api_pb2.VALIDATE_CONTAINER_ADJUSTMENT: "ValidateContainerAdjustment",
}
"""Event value -> the Go name (also the name of its dedicated ttRPC method)."""

ALL_EVENTS = EventMask((1 << (api_pb2.LAST - 1)) - 1)
"""Every event of the v0.12 API (0x3FFF): what runtimes with NRI >= 0.10 accept."""
LEGACY_EVENTS = EventMask((1 << 11) - 1)
"""Events 1..11 (0x7FF): all that runtimes with NRI <= 0.9 accept; anything more is refused."""
POD_EVENTS = EventMask.of(
    api_pb2.RUN_POD_SANDBOX,
    api_pb2.STOP_POD_SANDBOX,
    api_pb2.REMOVE_POD_SANDBOX,
    api_pb2.UPDATE_POD_SANDBOX,
    api_pb2.POST_UPDATE_POD_SANDBOX,
)
CONTAINER_EVENTS = ALL_EVENTS & ~POD_EVENTS & ~EventMask.VALIDATE_CONTAINER_ADJUSTMENT


def _normalise(name: str) -> str:
    return name.strip().replace("_", "").replace("-", "").lower()


_BY_NAME: dict[str, EventMask] = {
    _normalise(name): EventMask.of(event) for event, name in EVENT_NAMES.items()
}
_GROUPS: dict[str, EventMask] = {
    "all": ALL_EVENTS,
    "pod": POD_EVENTS,
    "podsandbox": POD_EVENTS,
    "container": CONTAINER_EVENTS,
}


def parse_event_mask(*specs: str) -> EventMask:
    """Parse event names into a mask.

    Each spec is a comma-separated list of Go names (``CreateContainer``), snake case
    (``create_container``) or groups: ``all``, ``pod``/``podsandbox``, ``container``. Case,
    ``_`` and ``-`` are ignored. Raises ValueError naming an unknown event.
    """
    mask = EventMask(0)
    for spec in specs:
        for raw in spec.split(","):
            key = _normalise(raw)
            if not key:
                continue
            bits = _GROUPS.get(key) or _BY_NAME.get(key)
            if bits is None:
                raise ValueError(f"unknown NRI event {raw.strip()!r}")
            mask |= bits
    return mask


def event_name(event: int) -> str:
    """The Go name of an ``api_pb2.Event`` value (``"Event(99)"`` for unknown values)."""
    return EVENT_NAMES.get(event, f"Event({event})")


# --------------------------------------------------------------------------- removal marks


def mark_for_removal(key: str) -> str:
    """The key that removes ``key`` (an annotation, env name, mount destination, device path)."""
    return "-" + key


def is_marked_for_removal(key: str) -> tuple[str, bool]:
    """Split a possibly removal-marked key into ``(key, marked)``."""
    if key.startswith("-"):
        return key[1:], True
    return key, False


# --------------------------------------------------------------------------- resources
# Setters shared by ContainerAdjustment (linux.resources) and ContainerUpdate (linux.resources).
# Writing an optional wrapper's value marks it present, even for 0.


def resources(target: Adjustable) -> api_pb2.LinuxResources:
    """The (mutable) ``linux.resources`` of an adjustment or update."""
    return target.linux.resources


def set_cpuset_cpus(target: Adjustable, cpus: str) -> None:
    """Set ``cpuset.cpus`` (Linux list syntax, e.g. ``"0-3,8"``)."""
    target.linux.resources.cpu.cpus = cpus


def set_cpuset_mems(target: Adjustable, mems: str) -> None:
    """Set ``cpuset.mems`` (Linux list syntax)."""
    target.linux.resources.cpu.mems = mems


def set_cpu_shares(target: Adjustable, shares: int) -> None:
    """Set CPU shares (cgroup v1 units; the runtime converts for v2)."""
    target.linux.resources.cpu.shares.value = shares


def set_cpu_quota(target: Adjustable, quota: int) -> None:
    """Set the CFS quota in microseconds per period (-1 = unlimited)."""
    target.linux.resources.cpu.quota.value = quota


def set_cpu_period(target: Adjustable, period: int) -> None:
    """Set the CFS period in microseconds."""
    target.linux.resources.cpu.period.value = period


def set_cpu_realtime_runtime(target: Adjustable, runtime: int) -> None:
    """Set the realtime runtime in microseconds."""
    target.linux.resources.cpu.realtime_runtime.value = runtime


def set_cpu_realtime_period(target: Adjustable, period: int) -> None:
    """Set the realtime period in microseconds."""
    target.linux.resources.cpu.realtime_period.value = period


def set_memory_limit(target: Adjustable, limit: int) -> None:
    """Set the memory limit in bytes."""
    target.linux.resources.memory.limit.value = limit


def set_memory_reservation(target: Adjustable, reservation: int) -> None:
    """Set the memory reservation (soft limit) in bytes."""
    target.linux.resources.memory.reservation.value = reservation


def set_memory_swap(target: Adjustable, swap: int) -> None:
    """Set the memory + swap limit in bytes."""
    target.linux.resources.memory.swap.value = swap


def set_memory_kernel(target: Adjustable, limit: int) -> None:
    """Set the kernel memory limit in bytes (cgroup v1 only)."""
    target.linux.resources.memory.kernel.value = limit


def set_memory_kernel_tcp(target: Adjustable, limit: int) -> None:
    """Set the kernel TCP buffer limit in bytes (cgroup v1 only)."""
    target.linux.resources.memory.kernel_tcp.value = limit


def set_memory_swappiness(target: Adjustable, swappiness: int) -> None:
    """Set memory swappiness (0..100)."""
    target.linux.resources.memory.swappiness.value = swappiness


def set_memory_disable_oom_killer(target: Adjustable) -> None:
    """Disable the OOM killer for the container."""
    target.linux.resources.memory.disable_oom_killer.value = True


def set_memory_use_hierarchy(target: Adjustable) -> None:
    """Enable hierarchical memory accounting (cgroup v1)."""
    target.linux.resources.memory.use_hierarchy.value = True


def add_hugepage_limit(target: Adjustable, page_size: str, limit: int) -> None:
    """Add a hugepage limit, e.g. ``("2MB", 1 << 30)``."""
    target.linux.resources.hugepage_limits.add(page_size=page_size, limit=limit)


def set_blockio_class(target: Adjustable, blockio_class: str) -> None:
    """Set the block I/O class."""
    target.linux.resources.blockio_class.value = blockio_class


def set_rdt_class(target: Adjustable, rdt_class: str) -> None:
    """Set the RDT (cache/memory bandwidth) class."""
    target.linux.resources.rdt_class.value = rdt_class


def add_unified(target: Adjustable, key: str, value: str) -> None:
    """Set a cgroup v2 unified key, e.g. ``("memory.high", "1G")``."""
    target.linux.resources.unified[key] = value


def set_pids_limit(target: Adjustable, limit: int) -> None:
    """Set the pids limit (NRI >= 0.7 runtimes; containerd applies it from 2.0)."""
    target.linux.resources.pids.limit = limit


# --------------------------------------------------------------------------- adjustments only


def add_annotation(adjust: api_pb2.ContainerAdjustment, key: str, value: str) -> None:
    """Add or set an annotation."""
    adjust.annotations[key] = value


def remove_annotation(adjust: api_pb2.ContainerAdjustment, key: str) -> None:
    """Remove an annotation (and claim it, so touching it afterwards is not a conflict)."""
    adjust.annotations[mark_for_removal(key)] = ""


def add_mount(adjust: api_pb2.ContainerAdjustment, mount: api_pb2.Mount) -> None:
    """Add a mount."""
    adjust.mounts.append(mount)


def remove_mount(adjust: api_pb2.ContainerAdjustment, destination: str) -> None:
    """Remove the mount at ``destination``."""
    adjust.mounts.add(destination=mark_for_removal(destination))


def add_env(adjust: api_pb2.ContainerAdjustment, key: str, value: str) -> None:
    """Add or set an environment variable."""
    adjust.env.add(key=key, value=value)


def remove_env(adjust: api_pb2.ContainerAdjustment, key: str) -> None:
    """Remove an environment variable."""
    adjust.env.add(key=mark_for_removal(key))


def add_hooks(adjust: api_pb2.ContainerAdjustment, hooks: api_pb2.Hooks) -> None:
    """Append OCI hooks (hooks accumulate across plugins and never conflict)."""
    adjust.hooks.MergeFrom(hooks)


def add_rlimit(adjust: api_pb2.ContainerAdjustment, kind: str, hard: int, soft: int) -> None:
    """Add a POSIX rlimit, e.g. ``("RLIMIT_NOFILE", 4096, 1024)``."""
    adjust.rlimits.add(type=kind, hard=hard, soft=soft)


def add_device(adjust: api_pb2.ContainerAdjustment, device: api_pb2.LinuxDevice) -> None:
    """Add a device node."""
    adjust.linux.devices.append(device)


def remove_device(adjust: api_pb2.ContainerAdjustment, path: str) -> None:
    """Remove the device node at ``path``."""
    adjust.linux.devices.add(path=mark_for_removal(path))


def add_cdi_device(adjust: api_pb2.ContainerAdjustment, name: str) -> None:
    """Inject a CDI device by fully qualified name (NRI >= 0.7 runtimes)."""
    adjust.CDI_devices.add(name=name)


def set_args(adjust: api_pb2.ContainerAdjustment, args: Sequence[str]) -> None:
    """Replace the container's args (NRI >= 0.10 runtimes)."""
    del adjust.args[:]
    adjust.args.extend(args)


def set_cgroups_path(adjust: api_pb2.ContainerAdjustment, path: str) -> None:
    """Set the container's cgroups path."""
    adjust.linux.cgroups_path = path


def set_oom_score_adj(adjust: api_pb2.ContainerAdjustment, score: int) -> None:
    """Set the OOM score adjustment (NRI >= 0.7 runtimes; containerd applies it from 2.0)."""
    adjust.linux.oom_score_adj.value = score


# --------------------------------------------------------------------------- builders


def _apply_resources(
    target: Adjustable,
    cpus: str | None,
    mems: str | None,
    shares: int | None,
    quota: int | None,
    period: int | None,
    memory_limit: int | None,
) -> None:
    if cpus is not None:
        set_cpuset_cpus(target, cpus)
    if mems is not None:
        set_cpuset_mems(target, mems)
    if shares is not None:
        set_cpu_shares(target, shares)
    if quota is not None:
        set_cpu_quota(target, quota)
    if period is not None:
        set_cpu_period(target, period)
    if memory_limit is not None:
        set_memory_limit(target, memory_limit)


def container_update(
    container_id: str,
    *,
    cpus: str | None = None,
    mems: str | None = None,
    shares: int | None = None,
    quota: int | None = None,
    period: int | None = None,
    memory_limit: int | None = None,
    ignore_failure: bool = False,
) -> api_pb2.ContainerUpdate:
    """An update of a running container's resources; ``None`` leaves a value untouched."""
    if not container_id:
        raise ValueError("a container update needs a container id")
    update = api_pb2.ContainerUpdate(container_id=container_id, ignore_failure=ignore_failure)
    update.linux.resources.SetInParent()
    _apply_resources(update, cpus, mems, shares, quota, period, memory_limit)
    return update


def container_adjustment(
    *,
    cpus: str | None = None,
    mems: str | None = None,
    shares: int | None = None,
    quota: int | None = None,
    period: int | None = None,
    memory_limit: int | None = None,
    annotations: dict[str, str] | None = None,
    env: Iterable[tuple[str, str]] = (),
) -> api_pb2.ContainerAdjustment:
    """An adjustment of a container being created; ``None`` leaves a value untouched."""
    adjust = api_pb2.ContainerAdjustment()
    _apply_resources(adjust, cpus, mems, shares, quota, period, memory_limit)
    for key, value in (annotations or {}).items():
        add_annotation(adjust, key, value)
    for key, value in env:
        add_env(adjust, key, value)
    return adjust


def set_ignore_failure(update: api_pb2.ContainerUpdate, ignore: bool = True) -> None:
    """Let the runtime skip this update quietly if it fails or conflicts."""
    update.ignore_failure = ignore
