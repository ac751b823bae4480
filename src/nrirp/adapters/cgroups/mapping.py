"""cgroup v2 setting names -> the cgroup v1 files that carry the same setting.

The domain names host settings by their v2 file (``memory.high``, ``cpu.weight``). On v1 some
map onto another file with a converted value (the inverse of runc's v1->v2 conversions), some
exist under the same name, and some have no v1 equivalent at all (an error, naming them).
"""

from __future__ import annotations

import re

from nrirp.domain.ports.host_control import HostControlError

V1Write = tuple[str, str, str]
"""(controller, file name, value)."""

_HUGETLB_MAX = re.compile(r"hugetlb\.([0-9A-Za-z]+)\.max")
_NO_V1 = {
    "memory.high": "memory.high (throttling limit)",
    "memory.min": "memory.min (hard protection)",
    "memory.swap.max": "memory.swap.max (v1 only limits memory+swap together)",
    "cpu.idle": "cpu.idle (SCHED_IDLE cgroups)",
}


def _int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise HostControlError(f"invalid value {text!r} for {name}: expected an integer") from None


def _limit(name: str, text: str) -> str:
    value = text.strip()
    return "-1" if value == "max" else str(_int(name, value))


def weight_to_shares(weight: int) -> int:
    """Inverse of runc's ``ConvertCPUSharesToCgroupV2Value`` (shares 2..262144 <-> 1..10000)."""
    if not 1 <= weight <= 10000:
        raise HostControlError(f"invalid cpu.weight {weight}: expected 1..10000")
    return 2 + -(-(weight - 1) * 262142 // 9999)  # smallest shares giving this weight


def io_weight_to_blkio(weight: int) -> int:
    """Inverse of runc's ``ConvertBlkIOToIOWeightValue`` (blkio 10..1000 <-> io 1..10000)."""
    if not 1 <= weight <= 10000:
        raise HostControlError(f"invalid io.weight {weight}: expected 1..10000")
    return 10 + -(-(weight - 1) * 990 // 9999)  # smallest blkio weight giving this weight


def _cpu_max(value: str) -> list[V1Write]:
    parts = value.split()
    if not 1 <= len(parts) <= 2:
        raise HostControlError(f"invalid cpu.max {value!r}: expected 'QUOTA [PERIOD]'")
    writes: list[V1Write] = []
    if len(parts) == 2:
        writes.append(("cpu", "cpu.cfs_period_us", str(_int("cpu.max period", parts[1]))))
    writes.append(("cpu", "cpu.cfs_quota_us", _limit("cpu.max quota", parts[0])))
    return writes


def v1_writes(name: str, value: str, available: set[str] | None = None) -> list[V1Write]:
    """The v1 writes for v2 setting ``name = value``.

    ``available`` lists the v1 controllers mounted; a setting whose controller is missing is
    an error. Raises :class:`HostControlError` naming the setting when v1 cannot carry it.
    """
    if name in _NO_V1:
        raise HostControlError(f"cgroup v1 has no equivalent of {_NO_V1[name]}")
    writes: list[V1Write]
    if name == "cpu.weight":
        writes = [("cpu", "cpu.shares", str(weight_to_shares(_int(name, value))))]
    elif name == "cpu.max":
        writes = _cpu_max(value)
    elif name == "memory.max":
        writes = [("memory", "memory.limit_in_bytes", _limit(name, value))]
    elif name == "memory.low":
        writes = [("memory", "memory.soft_limit_in_bytes", _limit(name, value))]
    elif name == "io.weight":
        text = value.split()[-1] if value.strip() else value  # "default N" or "N"
        writes = [("blkio", "blkio.weight", str(io_weight_to_blkio(_int(name, text))))]
    elif (match := _HUGETLB_MAX.fullmatch(name)) is not None:
        writes = [("hugetlb", f"hugetlb.{match.group(1)}.limit_in_bytes", _limit(name, value))]
    else:
        controller = name.split(".", 1)[0]
        writes = [(controller, name, value)]
    if available is not None:
        for controller, _, _ in writes:
            if controller not in available:
                raise HostControlError(
                    f"cannot set {name}: cgroup v1 controller {controller!r} is not mounted"
                )
    return writes
