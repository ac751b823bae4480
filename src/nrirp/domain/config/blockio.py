"""``control.blockio``: block I/O classes (weights and throttling per device pattern).

Device parameter keys are goresctrl's (``Devices``, ``ThrottleReadBps``, ``Weight``...); the
lowerCamelCase spellings are accepted too, as the reference's case-insensitive decoder does.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from nrirp.domain.config.errors import InvalidValue, Issue, quote
from nrirp.domain.config.keys import ref
from nrirp.domain.config.quantity import Quantity
from nrirp.domain.config.validation import at

WEIGHT_RANGE = (10, 1000)
_EMPTY: Mapping[str, Any] = MappingProxyType({})


@attrs.frozen
class IOWeight:
    """A proportional I/O weight (cgroup v1 ``blkio.weight`` scale, 10-1000)."""

    value: int

    @classmethod
    def from_config(cls, value: Any) -> IOWeight:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and value.strip().isdigit():
            number = int(value)
        if number is None:
            raise InvalidValue(value, "expected a weight such as '100'")
        low, high = WEIGHT_RANGE
        if not low <= number <= high:
            raise InvalidValue(value, f"a weight must be between {low} and {high}")
        return cls(number)

    def to_config(self) -> str:
        return str(self.value)


@attrs.frozen(kw_only=True)
class DeviceParameters:
    """Weight and throttling for the devices matching ``Devices`` (globs like ``/dev/sd*``)."""

    devices: tuple[str, ...] = attrs.field(default=(), metadata=ref("Devices", "devices"))
    throttle_read_bps: Quantity | None = attrs.field(
        default=None, metadata=ref("ThrottleReadBps", "throttleReadBps")
    )
    throttle_write_bps: Quantity | None = attrs.field(
        default=None, metadata=ref("ThrottleWriteBps", "throttleWriteBps")
    )
    throttle_read_iops: Quantity | None = attrs.field(
        default=None, metadata=ref("ThrottleReadIOPS", "throttleReadIOPS")
    )
    throttle_write_iops: Quantity | None = attrs.field(
        default=None, metadata=ref("ThrottleWriteIOPS", "throttleWriteIOPS")
    )
    weight: IOWeight | None = attrs.field(default=None, metadata=ref("Weight", "weight"))

    def config_problems(self) -> Iterator[Issue]:
        for index, pattern in enumerate(self.devices):
            if not pattern.startswith("/"):
                yield at(
                    self,
                    "devices",
                    f"invalid value {quote(pattern)}: expected a device path",
                    index,
                )
        for attribute in (
            "throttle_read_bps",
            "throttle_write_bps",
            "throttle_read_iops",
            "throttle_write_iops",
        ):
            limit: Quantity | None = getattr(self, attribute)
            if limit is not None and limit.is_negative():
                yield at(
                    self, attribute, f"invalid value {quote(str(limit))}: must not be negative"
                )


@attrs.frozen(kw_only=True)
class BlockIOConfig:
    """``control.blockio``: named classes, each a list of device parameter sets."""

    enable: bool = attrs.field(default=False, metadata=ref("enable"))
    use_pod_qos_as_default_class: bool = attrs.field(
        default=False, metadata=ref("usePodQoSAsDefaultClass")
    )
    classes: Mapping[str, tuple[DeviceParameters, ...]] = attrs.field(
        default=_EMPTY, metadata=ref("classes")
    )
