"""``control.rdt``: Intel RDT / AMD PQoS cache and memory-bandwidth partitions and classes.

Allocations follow goresctrl's syntax: a cache allocation is a percentage (``60%``), a
percentage range (``20-60%``) or a hex bitmask (``0xff0``), per cache id (``all``, ``0``,
``0-3``) and optionally split into ``unified``/``code``/``data``; a bare value means ``all``.
Memory bandwidth is a list of ``N%`` or ``NMBps`` values per cache id.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from nrirp.domain.config.errors import InvalidValue, Issue, quote
from nrirp.domain.config.keys import ref
from nrirp.domain.cpuset import CPUSet, CPUSetError

ALL_CACHES = "all"
_PERCENT = re.compile(r"(\d{1,3})%")
_PERCENT_RANGE = re.compile(r"(\d{1,3})-(\d{1,3})%")
_BITMASK = re.compile(r"0[xX][0-9a-fA-F]+")
_MBA_PERCENT = re.compile(r"(\d{1,3})%")
_MBA_RATE = re.compile(r"(\d+)MBps")
_CAT_EXPECTED = "expected a percentage ('60%'), a percentage range ('20-60%') or a bitmask ('0xff')"
_MBA_EXPECTED = "expected a percentage ('50%') or a rate ('1000MBps')"
_EMPTY: Mapping[Any, Any] = MappingProxyType({})


def _check_cache_ids(key: str) -> None:
    if key == ALL_CACHES:
        return
    try:
        ids = CPUSet.parse(key)
    except CPUSetError:
        ids = CPUSet()
    if not ids:
        raise InvalidValue(key, "expected 'all' or a list of cache ids such as '0-3'", what="key")


def _check_cat_value(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return f"{value:#x}"  # YAML reads an unquoted 0xff0 as the number 4080
    if not isinstance(value, str):
        raise InvalidValue(value, _CAT_EXPECTED)
    if match := _PERCENT.fullmatch(value):
        if int(match[1]) <= 100:
            return value
        raise InvalidValue(value, "a percentage must be at most 100%")
    if match := _PERCENT_RANGE.fullmatch(value):
        low, high = int(match[1]), int(match[2])
        if low <= high <= 100:
            return value
        raise InvalidValue(value, "a percentage range must be 'low-high%' with low <= high <= 100")
    if _BITMASK.fullmatch(value):
        if int(value, 16) == 0:
            raise InvalidValue(value, "a cache bitmask must not be empty")
        return value
    raise InvalidValue(value, _CAT_EXPECTED)


def _check_mba_value(value: Any) -> str:
    if isinstance(value, str):
        if match := _MBA_PERCENT.fullmatch(value):
            if 0 < int(match[1]) <= 100:
                return value
            raise InvalidValue(value, "a bandwidth percentage must be 1-100%")
        if _MBA_RATE.fullmatch(value):
            return value
    raise InvalidValue(value, _MBA_EXPECTED)


@attrs.frozen(kw_only=True)
class CacheShare:
    """The cache share of one cache id: ``unified``, or separate ``code``/``data`` (CDP)."""

    unified: str | None = None
    code: str | None = None
    data: str | None = None

    @classmethod
    def from_config(cls, value: Any) -> CacheShare:
        if isinstance(value, str):
            return cls(unified=_check_cat_value(value))
        if not isinstance(value, Mapping):
            raise InvalidValue(value, _CAT_EXPECTED + " or a mapping of unified/code/data")
        unknown = [k for k in value if k not in ("unified", "code", "data")]
        if unknown:
            raise InvalidValue(
                unknown[0], "unknown field (expected unified, code, data)", what="key"
            )
        parts = {k: _check_cat_value(v) for k, v in value.items() if v is not None}
        if not parts.get("unified") and not (parts.get("code") and parts.get("data")):
            raise InvalidValue(value, "give 'unified', or both 'code' and 'data'")
        return cls(**parts)

    def to_config(self) -> str | dict[str, str]:
        if self.unified is not None and self.code is None and self.data is None:
            return self.unified
        parts = {"unified": self.unified, "code": self.code, "data": self.data}
        return {k: v for k, v in parts.items() if v is not None}


@attrs.frozen
class CacheAllocation:
    """Cache shares per cache id (``all`` or a cache id list)."""

    by_cache_id: Mapping[str, CacheShare] = _EMPTY

    @classmethod
    def from_config(cls, value: Any) -> CacheAllocation:
        if not isinstance(value, Mapping):
            return cls(MappingProxyType({ALL_CACHES: CacheShare.from_config(value)}))
        out: dict[str, CacheShare] = {}
        for key, share in value.items():
            if not isinstance(key, str):
                raise InvalidValue(key, "expected a cache id list", what="key")
            _check_cache_ids(key)
            try:
                out[key] = CacheShare.from_config(share)
            except InvalidValue as err:
                raise InvalidValue(err.value, f"{err.expected} (cache id {quote(key)})") from None
        return cls(MappingProxyType(out))

    def to_config(self) -> Any:
        if list(self.by_cache_id) == [ALL_CACHES]:
            return self.by_cache_id[ALL_CACHES].to_config()
        return {k: v.to_config() for k, v in self.by_cache_id.items()}


@attrs.frozen
class BandwidthAllocation:
    """Memory bandwidth limits per cache id (``all`` or a cache id list)."""

    by_cache_id: Mapping[str, tuple[str, ...]] = _EMPTY

    @classmethod
    def from_config(cls, value: Any) -> BandwidthAllocation:
        if isinstance(value, list):
            return cls(MappingProxyType({ALL_CACHES: tuple(_check_mba_value(v) for v in value)}))
        if not isinstance(value, Mapping):
            raise InvalidValue(
                value, "expected a list of limits or a mapping of cache id to limits"
            )
        out: dict[str, tuple[str, ...]] = {}
        for key, limits in value.items():
            if not isinstance(key, str):
                raise InvalidValue(key, "expected a cache id list", what="key")
            _check_cache_ids(key)
            if not isinstance(limits, list):
                raise InvalidValue(limits, f"expected a list of limits (cache id {quote(key)})")
            out[key] = tuple(_check_mba_value(v) for v in limits)
        return cls(MappingProxyType(out))

    def to_config(self) -> Any:
        if list(self.by_cache_id) == [ALL_CACHES]:
            return list(self.by_cache_id[ALL_CACHES])
        return {k: list(v) for k, v in self.by_cache_id.items()}


@attrs.frozen(kw_only=True)
class RDTKubernetesOptions:
    """Whether pods/containers may pick this class by annotation."""

    deny_pod_annotation: bool = attrs.field(default=False, metadata=ref("denyPodAnnotation"))
    deny_container_annotation: bool = attrs.field(
        default=False, metadata=ref("denyContainerAnnotation")
    )


@attrs.frozen(kw_only=True)
class RDTClass:
    """A class of service inside a partition; shares are relative to the partition."""

    l2_allocation: CacheAllocation | None = attrs.field(default=None, metadata=ref("l2Allocation"))
    l3_allocation: CacheAllocation | None = attrs.field(default=None, metadata=ref("l3Allocation"))
    mb_allocation: BandwidthAllocation | None = attrs.field(
        default=None, metadata=ref("mbAllocation")
    )
    kubernetes: RDTKubernetesOptions = attrs.field(
        factory=RDTKubernetesOptions, metadata=ref("kubernetes")
    )


@attrs.frozen(kw_only=True)
class RDTPartition:
    """A slice of the caches and memory bandwidth, shared by its classes."""

    l2_allocation: CacheAllocation | None = attrs.field(default=None, metadata=ref("l2Allocation"))
    l3_allocation: CacheAllocation | None = attrs.field(default=None, metadata=ref("l3Allocation"))
    mb_allocation: BandwidthAllocation | None = attrs.field(
        default=None, metadata=ref("mbAllocation")
    )
    classes: Mapping[str, RDTClass] = attrs.field(default=_EMPTY, metadata=ref("classes"))


@attrs.frozen(kw_only=True)
class RDTFeatureOptions:
    """``optional: true`` lets configuration succeed on hardware without the feature."""

    optional: bool = attrs.field(default=False, metadata=ref("optional"))


@attrs.frozen(kw_only=True)
class RDTOptions:
    l2: RDTFeatureOptions = attrs.field(factory=RDTFeatureOptions, metadata=ref("l2"))
    l3: RDTFeatureOptions = attrs.field(factory=RDTFeatureOptions, metadata=ref("l3"))
    mb: RDTFeatureOptions = attrs.field(factory=RDTFeatureOptions, metadata=ref("mb"))


@attrs.frozen(kw_only=True)
class RDTConfig:
    """``control.rdt``."""

    enable: bool = attrs.field(default=False, metadata=ref("enable"))
    use_pod_qos_as_default_class: bool = attrs.field(
        default=False, metadata=ref("usePodQoSAsDefaultClass")
    )
    options: RDTOptions = attrs.field(factory=RDTOptions, metadata=ref("options"))
    partitions: Mapping[str, RDTPartition] = attrs.field(default=_EMPTY, metadata=ref("partitions"))

    def class_names(self) -> list[str]:
        return [name for p in self.partitions.values() for name in p.classes]

    def config_problems(self) -> Iterator[Issue]:
        owner: dict[str, str] = {}
        for partition_name, partition in self.partitions.items():
            for class_name in partition.classes:
                if class_name in owner:
                    yield (
                        ("partitions", partition_name, "classes", class_name),
                        f"duplicate class name {quote(class_name)}"
                        f" (also in partition {quote(owner[class_name])})",
                    )
                else:
                    owner[class_name] = partition_name
