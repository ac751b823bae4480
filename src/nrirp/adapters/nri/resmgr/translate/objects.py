"""Pods and containers as NRI reports them -> domain ``Pod`` / ``Container``.

Only what the domain models is kept (identity, metadata, cgroup placement, resources, OOM
score, mounts, devices, pid). The cache stamps ``created_at`` itself.

The cache keeps these values for as long as the containers live, and a Synchronize makes
hundreds at once, so they are made small: strings are interned (label and annotation keys
and values repeat across a pod's objects and across pods: names, uids, sandbox ids, image
names), and a mount seen before (``/proc``, ``/dev``, ``/sys`` ... in every container) is the
same :class:`Mount` object, found by its wire form; mounts with the same options share them.
A new mount whose wire form without its source was seen before (a container's own mounts:
``/etc/hosts``, the service account ... differ from another pod's in the source alone) takes
its destination, type and options from there: only its source is read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from sys import intern
from types import MappingProxyType

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate.errors import TranslationError
from nrirp.adapters.nri.resmgr.translate.resources import resources_from_pb
from nrirp.domain.model import Container, ContainerState, Device, LinuxResources, Mount, Pod
from nrirp.domain.model.kubelet import qos_from_cgroup_parent
from nrirp.domain.ports.documents import label

_STATES: dict[int, ContainerState] = {
    api_pb2.CONTAINER_UNKNOWN: ContainerState.UNKNOWN,
    api_pb2.CONTAINER_CREATED: ContainerState.CREATED,
    api_pb2.CONTAINER_PAUSED: ContainerState.PAUSED,
    api_pb2.CONTAINER_RUNNING: ContainerState.RUNNING,
    api_pb2.CONTAINER_STOPPED: ContainerState.STOPPED,
}


def pod_from_pb(pb: api_pb2.PodSandbox) -> Pod:
    """The domain pod for an NRI ``PodSandbox`` (QoS class from its cgroup parent)."""
    if not pb.id:
        raise TranslationError("pod sandbox without an id")
    linux = pb.linux
    resources: LinuxResources | None = None
    overhead: LinuxResources | None = None
    try:
        if linux.HasField("pod_resources"):
            resources = resources_from_pb(linux.pod_resources)
        if linux.HasField("pod_overhead"):
            overhead = resources_from_pb(linux.pod_overhead)
    except TranslationError as exc:
        raise TranslationError(f"pod {pb.namespace}/{pb.name}: {exc}") from None
    cgroup_parent = linux.cgroup_parent
    return Pod(
        id=intern(pb.id),
        name=intern(pb.name),
        uid=intern(pb.uid),
        namespace=intern(pb.namespace),
        labels=_strings(pb.labels),
        annotations=_strings(pb.annotations),
        cgroup_parent=cgroup_parent,
        runtime_handler=intern(pb.runtime_handler),
        resources=resources,
        overhead=overhead,
        qos_class=qos_from_cgroup_parent(cgroup_parent),  # Pod's default, made cheaper
    )


def container_state_from_pb(state: int) -> ContainerState:
    """The domain state of an NRI container state (unknown values read as UNKNOWN)."""
    return _STATES.get(state, ContainerState.UNKNOWN)


def container_from_pb(pb: api_pb2.Container) -> Container:
    """The domain container for an NRI ``Container`` (requirements are estimated by the
    resource manager when it admits the container)."""
    if not pb.id:
        raise TranslationError("container without an id")
    linux = pb.linux
    try:
        resources = (
            resources_from_pb(linux.resources) if linux.HasField("resources") else LinuxResources()
        )
    except TranslationError as exc:
        raise TranslationError(f"container {label(pb.name or pb.id)}: {exc}") from None
    devices = linux.devices
    return Container(
        id=intern(pb.id),
        pod_id=intern(pb.pod_sandbox_id),
        name=intern(pb.name),
        state=container_state_from_pb(pb.state),
        labels=_strings(pb.labels),
        annotations=_strings(pb.annotations),
        resources=resources,
        oom_score_adj=linux.oom_score_adj.value if linux.HasField("oom_score_adj") else None,
        cgroups_path=linux.cgroups_path,
        mounts=_mounts(pb.mounts) if pb.mounts else (),
        devices=tuple(
            Device(path=d.path, type=d.type, major=d.major, minor=d.minor) for d in devices
        )
        if devices
        else (),
        pid=pb.pid or None,
    )


def _strings(pb: Mapping[str, str]) -> Mapping[str, str]:
    """A read-only copy of labels or annotations, keys and values interned."""
    if not pb:
        return _EMPTY
    # by key: a protobuf map's items() is a Python generator, its keys and lookups are not
    return MappingProxyType({intern(key): intern(pb[key]) for key in pb})


_EMPTY: Mapping[str, str] = MappingProxyType({})

_MOUNTS: dict[bytes, Mount] = {}
_OPTIONS: dict[tuple[str, ...], tuple[str, ...]] = {}
_SHAPES: dict[bytes, tuple[str, str, tuple[str, ...]]] = {}
"""Destination, type and options by the wire form of a mount without its source."""
_MOUNTS_KEPT = 2048
"""Mounts remembered by wire form; forgotten all at once when there are more (those of every
container, such as ``/proc``, are back after the next one)."""


def _mounts(mounts: Iterable[api_pb2.Mount]) -> tuple[Mount, ...]:
    known = _MOUNTS
    get = known.get
    serialize = _SERIALIZE
    out = []
    for m in mounts:
        key = serialize(m)
        mount = get(key)
        if mount is None:
            shape = _without_source(key)
            parts = _SHAPES.get(shape) if shape is not None else None
            if parts is None:
                options = tuple(m.options)
                shared = _OPTIONS.get(options)  # a few dozen kinds in all
                if shared is None:
                    shared = _OPTIONS[options] = tuple(map(intern, options))
                parts = (intern(m.destination), intern(m.type), shared)
                if shape is not None:
                    _SHAPES[shape] = parts
            mount = Mount(parts[0], m.source, parts[1], parts[2])
            if len(known) >= _MOUNTS_KEPT:
                known.clear()
                _OPTIONS.clear()
                _SHAPES.clear()
            known[key] = mount
        out.append(mount)
    return tuple(out)


_SERIALIZE = api_pb2.Mount.SerializeToString


def _without_source(wire: bytes) -> bytes | None:
    """A mount's wire form (as ``_SERIALIZE`` writes it: fields in number order, unset ones
    left out) without its ``source`` field, or ``None`` when the source is not where that
    order puts it (after ``destination`` (1) and ``type`` (2), both under 128 bytes; a
    source under 16 KiB). Two mounts with the same form without it differ in the source
    alone."""
    end = len(wire)
    at = 0
    if end and wire[0] == 0x0A:  # destination
        size = wire[1]
        if size & 0x80:
            return None
        at = 2 + size
    if at < end and wire[at] == 0x12:  # type
        size = wire[at + 1]
        if size & 0x80:
            return None
        at += 2 + size
    if at + 1 >= end or wire[at] != 0x1A:  # source
        return None
    size = wire[at + 1]
    if not size & 0x80:
        return wire[:at] + wire[at + 2 + size :]
    high = wire[at + 2] if at + 2 < end else 0x80
    if high & 0x80:
        return None
    return wire[:at] + wire[at + 3 + ((size & 0x7F) | (high << 7)) :]
