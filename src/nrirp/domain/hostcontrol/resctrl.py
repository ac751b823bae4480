"""RDT (``control.rdt``): from partitions and classes to resctrl groups and their schemata.

:func:`plan_resctrl` checks the configuration against what the host's resctrl offers
(:class:`ResctrlInfo`, read from ``info/`` by the ``ResctrlControl`` port) and gives one group
per class, named after it, with its schemata lines (``L3:0=ff0;1=ff0``, ``MB:0=50;1=50``).
The layout follows goresctrl's, which the reference uses:

- a partition's cache share is a run of the cache's bits; partitions with a percentage get
  consecutive runs from bit 0 in configuration order (``20-60%`` and bitmasks place themselves);
- a class's share is relative to its partition (``60%``: the lowest 60% of the partition's
  bits; ``20-60%``; a bitmask is shifted onto the partition's lowest bit); a class without one
  gets its partition's;
- memory bandwidth: a partition's percentage, and a class's percentage of that, rounded up to
  the granularity and at least the minimum; a list names alternatives, the first one in the
  host's unit (percent, or MBps when resctrl is mounted with ``mba_MBps``) is used;
- the class ``system/default`` is the root group (its schemata are written there).

Problems are collected and raised together (:class:`RdtPlanError`), each naming the
configuration path and what the hardware lacks; a resource marked ``optional`` in
``options`` is left out with a note instead when the host does not have it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from nrirp.domain.config.rdt import (
    ALL_CACHES,
    BandwidthAllocation,
    CacheAllocation,
    CacheShare,
    RDTConfig,
)
from nrirp.domain.cpuset import CPUSet, CPUSetError

ROOT_CLASS = "system/default"
"""The class that names the root resctrl group (goresctrl's)."""


class RdtPlanError(ValueError):
    """``control.rdt`` asks for something the host's resctrl cannot do; one line per problem."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@attrs.frozen
class CacheInfo:
    """A cache allocation resource (``info/L3``, ``info/L2``): the capacity bitmask, how many
    bits a mask needs at least, the classes of service, the cache ids (from the root
    ``schemata``) and whether code and data are split (CDP: ``L3CODE``/``L3DATA``)."""

    cbm_mask: int
    min_cbm_bits: int = 1
    num_closids: int = 16
    ids: tuple[int, ...] = (0,)
    cdp: bool = False

    @property
    def bits(self) -> int:
        return self.cbm_mask.bit_length()


@attrs.frozen
class BandwidthInfo:
    """Memory bandwidth allocation (``info/MB``): minimum and granularity in percent, classes
    of service, cache ids, and whether values are MBps (``mba_MBps`` mount option)."""

    min_bandwidth: int = 10
    bandwidth_gran: int = 10
    num_closids: int = 8
    ids: tuple[int, ...] = (0,)
    mbps: bool = False


@attrs.frozen
class ResctrlInfo:
    """What the host's resctrl offers; ``None`` for a resource it does not have."""

    l2: CacheInfo | None = None
    l3: CacheInfo | None = None
    mb: BandwidthInfo | None = None


@attrs.frozen
class ResctrlPlan:
    """Schemata lines per group (``""`` is the root group), and notes about optional
    resources left out."""

    groups: Mapping[str, tuple[str, ...]] = attrs.field(default=MappingProxyType({}))
    notes: tuple[str, ...] = ()


_PERCENT = re.compile(r"(\d+)%")
_RANGE = re.compile(r"(\d+)-(\d+)%")
_MBPS = re.compile(r"(\d+)MBps")


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, text: str) -> None:
        self.items.append(f"control.rdt.{path}: {text}")


def _ids_of(key: str, ids: tuple[int, ...]) -> tuple[int, ...] | None:
    if key == ALL_CACHES:
        return ids
    try:
        wanted = CPUSet.parse(key)
    except CPUSetError:
        return None
    return tuple(i for i in ids if i in wanted)


def _per_id(allocation: Mapping[str, object], ids: tuple[int, ...]) -> dict[int, object]:
    """``all`` first, then specific ids over it."""
    out: dict[int, object] = {}
    for key, value in sorted(allocation.items(), key=lambda kv: kv[0] != ALL_CACHES):
        for cache_id in _ids_of(key, ids) or ():
            out[cache_id] = value
    return out


def _span(value: str) -> tuple[int, int] | None:
    """The percentage range of a share (``60%`` is ``0-60%``); ``None`` for a bitmask."""
    if match := _RANGE.fullmatch(value):
        return int(match[1]), int(match[2])
    if match := _PERCENT.fullmatch(value):
        return 0, int(match[1])
    return None


def _partition_mask(value: str, bits: int, next_bit: int, min_bits: int) -> int | str:
    """A partition's mask on a ``bits``-bit cache: a bitmask as given, a range where it says,
    a percentage from the first bit no earlier partition took."""
    span = _span(value)
    if span is None:
        if not value.startswith(("0x", "0X")):
            return f"unusable cache share {value!r}"
        mask = int(value, 16)
        if mask >> bits:
            return f"bitmask {value} does not fit in the cache's {bits} bits"
        return _check_mask(mask, min_bits)
    low, high = span
    count = max(min_bits, round(bits * (high - low) / 100))
    first = (bits * low) // 100 if _RANGE.fullmatch(value) else next_bit
    if first + count > bits:
        return (
            f"{value} of the cache's {bits} bits does not fit after bit {first} "
            "(earlier partitions took the rest)"
        )
    return ((1 << count) - 1) << first


def _class_mask(value: str, base: int, width: int, min_bits: int) -> int | str:
    """A class's mask within its partition's run ``[base, base+width)``."""
    span = _span(value)
    if span is None:
        if not value.startswith(("0x", "0X")):
            return f"unusable cache share {value!r}"
        mask = int(value, 16)
        if mask >> width:
            return f"bitmask {value} does not fit in the partition's {width} bits"
        return _check_mask(mask << base, min_bits)
    low, high = span
    count = max(min_bits, round(width * (high - low) / 100))
    first = base + (width * low) // 100
    if count > width:
        return f"the partition's {width} bits are fewer than the {min_bits} a mask needs"
    first = min(first, base + width - count)
    return ((1 << count) - 1) << first


def _check_mask(mask: int, min_bits: int) -> int | str:
    if not mask:
        return "empty bitmask"
    low = (mask & -mask).bit_length() - 1
    run = mask >> low
    if run & (run + 1):
        return f"bitmask {mask:#x} is not contiguous (resctrl needs one run of bits)"
    if bin(mask).count("1") < min_bits:
        return f"bitmask {mask:#x} has fewer than the {min_bits} bits a mask needs"
    return mask


def _share_parts(share: CacheShare, cdp: bool) -> dict[str, str] | str:
    if cdp:
        code = share.code or share.unified
        data = share.data or share.unified
        if code is None or data is None:
            return "give 'unified', or both 'code' and 'data'"
        return {"CODE": code, "DATA": data}
    if share.unified is None:
        return (
            "code/data shares need CDP (resctrl mounted with cdp), which is not on: give 'unified'"
        )
    return {"": share.unified}


class _Planner:
    def __init__(self, config: RDTConfig, info: ResctrlInfo) -> None:
        self.config = config
        self.info = info
        self.problems = _Problems()
        self.notes: list[str] = []
        self.lines: dict[str, list[str]] = {}

    def resource(self, name: str) -> CacheInfo | BandwidthInfo | None:
        found: CacheInfo | BandwidthInfo | None = getattr(self.info, name)
        return found

    def usable(self, name: str, path: str, used: bool) -> bool:
        """Whether resource ``name`` (l2, l3, mb) can be planned; notes or problems if not."""
        if not used:
            return False
        if self.resource(name) is not None:
            return True
        label = {"l2": "L2 cache", "l3": "L3 cache", "mb": "memory bandwidth"}[name]
        folder = {"l2": "L2", "l3": "L3", "mb": "MB"}[name]
        optional: bool = getattr(self.config.options, name).optional
        text = f"this host has no {label} allocation (no resctrl info/{folder})"
        if optional:
            self.notes.append(f"control.rdt: {text}; left out (options.{name}.optional)")
        else:
            self.problems.add(path, f"{text}; set options.{name}.optional to go without it")
        return False

    def plan(self) -> ResctrlPlan:
        partitions = self.config.partitions
        for res in ("l2", "l3"):
            key = f"{res}_allocation"
            used = any(
                getattr(p, key) is not None
                or any(getattr(c, key) is not None for c in p.classes.values())
                for p in partitions.values()
            )
            if self.usable(res, f"partitions[*].{res}Allocation", used):
                self.caches(res)
        used = any(
            p.mb_allocation is not None
            or any(c.mb_allocation is not None for c in p.classes.values())
            for p in partitions.values()
        )
        if self.usable("mb", "partitions[*].mbAllocation", used):
            self.bandwidth()
        self.check_closids()
        if self.problems.items:
            raise RdtPlanError(self.problems.items)
        groups = {name: tuple(lines) for name, lines in self.lines.items()}
        for partition in partitions.values():
            for name in partition.classes:
                groups.setdefault(_group(name), ())
        return ResctrlPlan(MappingProxyType(groups), tuple(self.notes))

    def caches(self, res: str) -> None:
        info = self.resource(res)
        assert isinstance(info, CacheInfo)
        key = f"{res}_allocation"
        folder = res.upper()
        next_bit: dict[int, int] = dict.fromkeys(info.ids, 0)
        for pname, partition in self.config.partitions.items():
            path = f"partitions.{pname}.{res}Allocation"
            alloc: CacheAllocation | None = getattr(partition, key)
            runs: dict[int, tuple[int, int]] = {}
            per_id = _per_id(alloc.by_cache_id, info.ids) if alloc is not None else {}
            for cache_id in info.ids:
                share = per_id.get(cache_id)
                if share is None:
                    runs[cache_id] = (0, info.bits)
                    continue
                assert isinstance(share, CacheShare)
                value = share.unified or share.code or share.data or "100%"
                mask = _partition_mask(value, info.bits, next_bit[cache_id], info.min_cbm_bits)
                if isinstance(mask, str):
                    self.problems.add(path, f"cache id {cache_id}: {mask}")
                    continue
                low = (mask & -mask).bit_length() - 1
                width = mask.bit_length() - low
                runs[cache_id] = (low, width)
                next_bit[cache_id] = max(next_bit[cache_id], low + width)
            for cname, cls in partition.classes.items():
                cpath = f"partitions.{pname}.classes.{cname}.{res}Allocation"
                calloc: CacheAllocation | None = getattr(cls, key)
                cper_id = _per_id(calloc.by_cache_id, info.ids) if calloc is not None else {}
                masks: dict[str, dict[int, int]] = {}
                for cache_id, (low, width) in runs.items():
                    share = cper_id.get(cache_id) or CacheShare(unified="100%")
                    assert isinstance(share, CacheShare)
                    parts = _share_parts(share, info.cdp)
                    if isinstance(parts, str):
                        self.problems.add(cpath, f"cache id {cache_id}: {parts}")
                        continue
                    for suffix, value in parts.items():
                        mask = _class_mask(value, low, width, info.min_cbm_bits)
                        if isinstance(mask, str):
                            self.problems.add(cpath, f"cache id {cache_id}: {mask}")
                            continue
                        masks.setdefault(suffix, {})[cache_id] = mask
                for suffix, by_id in masks.items():
                    text = ";".join(f"{i}={m:x}" for i, m in sorted(by_id.items()))
                    self.lines.setdefault(_group(cname), []).append(f"{folder}{suffix}:{text}")

    def bandwidth(self) -> None:
        info = self.info.mb
        assert info is not None
        for pname, partition in self.config.partitions.items():
            path = f"partitions.{pname}.mbAllocation"
            part = self.mb_values(partition.mb_allocation, info, path, None)
            for cname, cls in partition.classes.items():
                cpath = f"partitions.{pname}.classes.{cname}.mbAllocation"
                values = self.mb_values(cls.mb_allocation, info, cpath, part)
                if values:
                    text = ";".join(f"{i}={v}" for i, v in sorted(values.items()))
                    self.lines.setdefault(_group(cname), []).append(f"MB:{text}")

    def mb_values(
        self,
        alloc: BandwidthAllocation | None,
        info: BandwidthInfo,
        path: str,
        parent: dict[int, int] | None,
    ) -> dict[int, int]:
        full = 2**32 - 1 if info.mbps else 100
        base = parent if parent is not None else dict.fromkeys(info.ids, full)
        if alloc is None:
            return dict(base)
        per_id = _per_id(alloc.by_cache_id, info.ids)
        out: dict[int, int] = {}
        for cache_id in info.ids:
            choices = per_id.get(cache_id)
            if choices is None:
                out[cache_id] = base[cache_id]
                continue
            assert isinstance(choices, tuple)
            value = _bandwidth(choices, info, base[cache_id])
            if isinstance(value, str):
                self.problems.add(path, f"cache id {cache_id}: {value}")
            else:
                out[cache_id] = value
        return out

    def check_closids(self) -> None:
        groups = {_group(name) for p in self.config.partitions.values() for name in p.classes} - {
            ""
        }
        limits = []
        for name in ("l2", "l3", "mb"):
            found = self.resource(name)
            if found is not None:
                limits.append((found.num_closids, name.upper()))
        if limits:
            closids, res = min(limits)
            if len(groups) > closids - 1:
                self.problems.add(
                    "partitions",
                    f"{len(groups)} classes need {len(groups)} resctrl groups; {res} has "
                    f"{closids} classes of service, one of them the root group's",
                )


def _bandwidth(choices: tuple[str, ...], info: BandwidthInfo, parent: int) -> int | str:
    for choice in choices:
        if info.mbps and (m := _MBPS.fullmatch(choice)):
            return min(int(m[1]), parent)
        if not info.mbps and (m := _PERCENT.fullmatch(choice)):
            share = math.ceil(parent * int(m[1]) / 100)
            gran = info.bandwidth_gran or 1
            share = math.ceil(share / gran) * gran
            return max(info.min_bandwidth, min(share, 100))
    unit = "MBps (resctrl is mounted with mba_MBps)" if info.mbps else "percent"
    return f"none of {', '.join(choices)} is in this host's unit, {unit}"


def _group(name: str) -> str:
    return "" if name == ROOT_CLASS else name


def plan_resctrl(config: RDTConfig, info: ResctrlInfo) -> ResctrlPlan:
    """The resctrl groups ``config`` describes on a host offering ``info``; raises
    :class:`RdtPlanError` with every problem."""
    return _Planner(config, info).plan()
