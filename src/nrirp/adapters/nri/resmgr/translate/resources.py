"""LinuxResources both ways: NRI ``api_pb2.LinuxResources`` <-> domain ``LinuxResources``.

NRI marks presence with wrapper messages (``OptionalInt64`` ...): a present wrapper holding 0
is "set to 0", an absent one is "not set". The domain keeps the same distinction with ``None``.
``cpus``/``mems`` are plain strings in NRI, where the empty string means "not set"; an empty
domain CPU set therefore cannot be carried and is sent as "not set".
"""

from __future__ import annotations

from typing import Any

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate.errors import TranslationError
from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.model import LinuxResources

_UINT64_MAX = (1 << 64) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


def _optional(message: Any, field: str) -> int | None:
    return message.__getattribute__(field).value if message.HasField(field) else None


def _cpuset(text: str, field: str) -> CPUSet | None:
    if not text:
        return None
    try:
        return CPUSet.parse(text)
    except CPUSetError as exc:
        raise TranslationError(f"invalid {field} {text!r}: {exc}") from None


_KNOWN: dict[bytes, LinuxResources] = {}
_KNOWN_KEPT = 1024
"""Resources remembered by wire form; forgotten all at once when there are more. A runtime
reports the same few settings (one per QoS class and size) for hundreds of containers: they
share one immutable value, made once."""


def resources_from_pb(pb: api_pb2.LinuxResources) -> LinuxResources:
    """The domain view of NRI resources (fields the domain does not model are dropped)."""
    key = pb.SerializeToString()
    known = _KNOWN.get(key)
    if known is None:
        known = _translated(pb)  # raises TranslationError: nothing remembered
        if len(_KNOWN) >= _KNOWN_KEPT:
            _KNOWN.clear()
        _KNOWN[key] = known
    return known


def _translated(pb: api_pb2.LinuxResources) -> LinuxResources:
    fields: dict[str, Any] = {}
    if pb.HasField("cpu"):
        cpu = pb.cpu
        fields.update(
            cpu_shares=_optional(cpu, "shares"),
            cpu_quota=_optional(cpu, "quota"),
            cpu_period=_optional(cpu, "period"),
            cpu_realtime_runtime=_optional(cpu, "realtime_runtime"),
            cpu_realtime_period=_optional(cpu, "realtime_period"),
            cpus=_cpuset(cpu.cpus, "cpu.cpus"),
            mems=_cpuset(cpu.mems, "cpu.mems"),
        )
    if pb.HasField("memory"):
        memory = pb.memory
        fields.update(
            memory_limit=_optional(memory, "limit"),
            memory_reservation=_optional(memory, "reservation"),
            memory_swap=_optional(memory, "swap"),
        )
    if pb.hugepage_limits:
        fields["hugepage_limits"] = {h.page_size: h.limit for h in pb.hugepage_limits}
    if pb.HasField("blockio_class"):
        fields["blockio_class"] = pb.blockio_class.value
    if pb.HasField("rdt_class"):
        fields["rdt_class"] = pb.rdt_class.value
    if pb.unified:
        fields["unified"] = dict(pb.unified)
    if pb.HasField("pids"):
        fields["pids_limit"] = pb.pids.limit
    return LinuxResources(**fields)


def _check(value: int, field: str, low: int, high: int) -> int:
    if not low <= value <= high:
        raise TranslationError(f"{field} {value} does not fit the NRI field (range {low}..{high})")
    return value


def _signed(value: int, field: str) -> int:
    return _check(value, field, _INT64_MIN, _INT64_MAX)


def _unsigned(value: int, field: str) -> int:
    return _check(value, field, 0, _UINT64_MAX)


def resources_to_pb(res: LinuxResources) -> api_pb2.LinuxResources:
    """NRI resources carrying exactly the fields ``res`` sets."""
    pb = api_pb2.LinuxResources()
    fill_resources_pb(pb, res)
    return pb


def fill_resources_pb(pb: api_pb2.LinuxResources, res: LinuxResources) -> None:
    """Set the fields of the (empty) NRI resources ``pb`` that ``res`` sets."""
    if res.only_cpusets():  # the usual update: a new cpuset (an empty set is "not set")
        cpus, mems = res.cpus, res.mems
        if cpus:
            pb.cpu.cpus = str(cpus)
        if mems:
            pb.cpu.mems = str(mems)
        return
    _cpu_to_pb(res, pb)
    _memory_to_pb(res, pb)
    for page_size, limit in res.hugepage_limits.items():
        pb.hugepage_limits.add(
            page_size=page_size, limit=_unsigned(limit, f"hugepage limit {page_size}")
        )
    if res.blockio_class is not None:
        pb.blockio_class.value = res.blockio_class
    if res.rdt_class is not None:
        pb.rdt_class.value = res.rdt_class
    for key, value in res.unified.items():
        pb.unified[key] = value
    if res.pids_limit is not None:
        pb.pids.limit = _signed(res.pids_limit, "pids limit")


def _cpu_to_pb(res: LinuxResources, pb: api_pb2.LinuxResources) -> None:
    cpu = pb.cpu
    if res.cpu_shares is not None:
        cpu.shares.value = _unsigned(res.cpu_shares, "cpu shares")
    if res.cpu_quota is not None:
        cpu.quota.value = _signed(res.cpu_quota, "cpu quota")
    if res.cpu_period is not None:
        cpu.period.value = _unsigned(res.cpu_period, "cpu period")
    if res.cpu_realtime_runtime is not None:
        cpu.realtime_runtime.value = _signed(res.cpu_realtime_runtime, "cpu realtime runtime")
    if res.cpu_realtime_period is not None:
        cpu.realtime_period.value = _unsigned(res.cpu_realtime_period, "cpu realtime period")
    if res.cpus:
        cpu.cpus = str(res.cpus)
    if res.mems:
        cpu.mems = str(res.mems)
    if cpu.ByteSize() == 0:
        pb.ClearField("cpu")  # reading the sub-message must not make it present


def _memory_to_pb(res: LinuxResources, pb: api_pb2.LinuxResources) -> None:
    memory = pb.memory
    if res.memory_limit is not None:
        memory.limit.value = _signed(res.memory_limit, "memory limit")
    if res.memory_reservation is not None:
        memory.reservation.value = _signed(res.memory_reservation, "memory reservation")
    if res.memory_swap is not None:
        memory.swap.value = _signed(res.memory_swap, "memory swap")
    if memory.ByteSize() == 0:
        pb.ClearField("memory")
