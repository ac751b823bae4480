"""A container's effective resources, updates to them, and the checks a real runtime makes.

Updates to existing containers (from plugins' UpdateContainers, from the updates in event
replies, and kubelet's own UpdateContainerResources) reach containerd as CRI
``LinuxContainerResources``: only CPU shares/quota/period/cpuset, memory limit/swap, hugepage
limits and unified entries survive, and a zero value means "leave as is". :func:`apply_update`
implements exactly that.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
from google.protobuf.message import Message

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.simruntime.pb import has_field


@attrs.frozen
class EffectiveResources:
    """What a container runs with after adjustments and updates (``None`` = not set).

    ``cpus``/``mems`` are ``None`` when the container is not restricted (empty cpuset).
    """

    cpus: CPUSet | None = None
    mems: CPUSet | None = None
    cpu_shares: int | None = None
    cpu_quota: int | None = None
    cpu_period: int | None = None
    cpu_realtime_runtime: int | None = None
    cpu_realtime_period: int | None = None
    memory_limit: int | None = None
    memory_reservation: int | None = None
    memory_swap: int | None = None
    memory_swappiness: int | None = None
    pids_limit: int | None = None
    hugepage_limits: Mapping[str, int] = attrs.field(factory=dict)
    unified: Mapping[str, str] = attrs.field(factory=dict)
    blockio_class: str | None = None
    rdt_class: str | None = None

    @classmethod
    def from_pb(cls, res: api_pb2.LinuxResources) -> EffectiveResources:
        """Read ``res`` (cpusets must be valid: :func:`check_resources` first)."""
        cpu, mem = res.cpu, res.memory

        def opt(msg: Message, name: str) -> int | None:
            value: int = getattr(msg, name).value
            return value if has_field(msg, name) else None

        return cls(
            cpus=CPUSet.parse(cpu.cpus) if cpu.cpus else None,
            mems=CPUSet.parse(cpu.mems) if cpu.mems else None,
            cpu_shares=opt(cpu, "shares"),
            cpu_quota=opt(cpu, "quota"),
            cpu_period=opt(cpu, "period"),
            cpu_realtime_runtime=opt(cpu, "realtime_runtime"),
            cpu_realtime_period=opt(cpu, "realtime_period"),
            memory_limit=opt(mem, "limit"),
            memory_reservation=opt(mem, "reservation"),
            memory_swap=opt(mem, "swap"),
            memory_swappiness=opt(mem, "swappiness"),
            pids_limit=res.pids.limit if res.HasField("pids") else None,
            hugepage_limits={h.page_size: h.limit for h in res.hugepage_limits},
            unified=dict(res.unified),
            blockio_class=res.blockio_class.value if res.HasField("blockio_class") else None,
            rdt_class=res.rdt_class.value if res.HasField("rdt_class") else None,
        )


@attrs.frozen
class HostLimits:
    """The node's CPUs and memory nodes: a cpuset outside them fails like runc does."""

    cpus: CPUSet | None = None
    mems: CPUSet | None = None


def check_resources(res: api_pb2.LinuxResources, host: HostLimits) -> str | None:
    """Why ``res`` cannot be applied to a cgroup, or None when it can."""
    for kind, text, allowed in (
        ("cpus", res.cpu.cpus, host.cpus),
        ("mems", res.cpu.mems, host.mems),
    ):
        if not text:
            continue
        try:
            value = CPUSet.parse(text)
        except CPUSetError as exc:
            return f"invalid cpuset.{kind} {text!r}: {exc}"
        if not value:
            return f"invalid cpuset.{kind} {text!r}: empty set"
        if allowed is not None and not value <= allowed:
            return (
                f"cpuset.{kind} {text!r} is not a subset of the node's {kind} {str(allowed)!r}: "
                f"write cpuset.{kind}: invalid argument"
            )
    return None


def cri_update(res: api_pb2.LinuxResources) -> api_pb2.LinuxResources:
    """The part of ``res`` that survives containerd's NRI -> CRI update conversion."""
    out = api_pb2.LinuxResources()
    if res.HasField("cpu"):
        cpu = res.cpu
        for name in ("shares", "quota", "period"):
            if has_field(cpu, name) and getattr(cpu, name).value != 0:
                getattr(out.cpu, name).value = getattr(cpu, name).value
        out.cpu.cpus = cpu.cpus
        out.cpu.mems = cpu.mems
    if res.HasField("memory"):
        for name in ("limit", "swap"):
            if has_field(res.memory, name) and getattr(res.memory, name).value != 0:
                getattr(out.memory, name).value = getattr(res.memory, name).value
    out.hugepage_limits.extend(res.hugepage_limits)
    out.unified.update(res.unified)
    return out


def apply_update(current: api_pb2.LinuxResources, update: api_pb2.LinuxResources) -> None:
    """Merge ``update`` into ``current`` with CRI update semantics (zero = unchanged)."""
    change = cri_update(update)
    cpu = change.cpu
    for name in ("shares", "quota", "period"):
        if has_field(cpu, name):
            getattr(current.cpu, name).value = getattr(cpu, name).value
    if cpu.cpus:
        current.cpu.cpus = cpu.cpus
    if cpu.mems:
        current.cpu.mems = cpu.mems
    for name in ("limit", "swap"):
        if has_field(change.memory, name):
            getattr(current.memory, name).value = getattr(change.memory, name).value
    for limit in change.hugepage_limits:
        for existing in current.hugepage_limits:
            if existing.page_size == limit.page_size:
                existing.limit = limit.limit
                break
        else:
            current.hugepage_limits.add(page_size=limit.page_size, limit=limit.limit)
    current.unified.update(change.unified)


def kubelet_update(res: api_pb2.LinuxResources) -> api_pb2.LinuxResources:
    """An UpdateContainerRequest's ``linux_resources`` as containerd builds it from CRI:
    every CRI field present (also zeros), like ``FromCRILinuxResources``."""
    out = api_pb2.LinuxResources()
    out.CopyFrom(res)
    for name in ("shares", "quota", "period"):
        getattr(out.cpu, name).value = getattr(res.cpu, name).value
    out.memory.limit.value = res.memory.limit.value
    return out
