"""CPU classes: frequency, uncore, C-state, EPP and priority settings for sets of CPUs."""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

import attrs

from nrirp.domain.config.enums import FrequencyKeyword
from nrirp.domain.config.errors import InvalidValue, Issue, quote
from nrirp.domain.config.keys import key_of, ref
from nrirp.domain.config.validation import at, check_range

_FREQ_EXPECTED = "expected a frequency in kHz or one of 'min', 'base', 'turbo'"


class PCTPriority(enum.StrEnum):
    """SST core-power priority of a CPU class (``pctPriority``), as the reference's CRD takes
    it: the managed high-priority class (CLOS 0) or low-priority class (CLOS 3)."""

    HIGH = "high"
    LOW = "low"


@attrs.frozen
class Frequency:
    """A CPU frequency: ``khz`` or a symbolic ``keyword`` resolved against the hardware."""

    khz: int | None = None
    keyword: FrequencyKeyword | None = None

    def __attrs_post_init__(self) -> None:
        if (self.khz is None) == (self.keyword is None):
            raise ValueError("Frequency needs exactly one of khz or keyword")

    @classmethod
    def from_config(cls, value: Any) -> Frequency:
        if isinstance(value, int) and not isinstance(value, bool):
            if value < 0:
                raise InvalidValue(value, "must not be negative")
            return cls(khz=value)
        if isinstance(value, str):
            try:
                return cls(keyword=FrequencyKeyword(value))
            except ValueError:
                pass
            if value.isdigit():
                return cls(khz=int(value))
        raise InvalidValue(value, _FREQ_EXPECTED)

    def to_config(self) -> int | str:
        return self.khz if self.khz is not None else str(self.keyword)


@attrs.frozen(kw_only=True)
class CPUClass:
    """A named CPU class (``cpuClasses[]``); frequencies in kHz unless symbolic."""

    name: str = attrs.field(metadata=ref("name"))
    min_freq: Frequency | None = attrs.field(default=None, metadata=ref("minFreq"))
    max_freq: Frequency | None = attrs.field(default=None, metadata=ref("maxFreq"))
    uncore_min_freq: int | None = attrs.field(default=None, metadata=ref("uncoreMinFreq"))
    uncore_max_freq: int | None = attrs.field(default=None, metadata=ref("uncoreMaxFreq"))
    energy_performance_preference: int | None = attrs.field(
        default=None, metadata=ref("energyPerformancePreference")
    )
    freq_governor: str | None = attrs.field(default=None, metadata=ref("freqGovernor"))
    disabled_cstates: tuple[str, ...] = attrs.field(default=(), metadata=ref("disabledCstates"))
    turbo_priority: int | None = attrs.field(default=None, metadata=ref("turboPriority"))
    pct_priority: PCTPriority | None = attrs.field(default=None, metadata=ref("pctPriority"))
    sst_clos_id: int | None = attrs.field(default=None, metadata=ref("sstClosID"))
    pct_min_freq: Frequency | None = attrs.field(default=None, metadata=ref("pctMinFreq"))
    pct_max_freq: Frequency | None = attrs.field(default=None, metadata=ref("pctMaxFreq"))
    publish_extended_resource: bool = attrs.field(
        default=False, metadata=ref("publishExtendedResource")
    )

    def config_problems(self) -> Iterator[Issue]:
        if not self.name:
            yield at(self, "name", "invalid value '': a name is required")
        yield from check_frequency_order(self, "min_freq", "max_freq")
        yield from check_frequency_order(self, "pct_min_freq", "pct_max_freq")
        yield from check_range(self, "uncore_min_freq", 0)
        yield from check_range(self, "uncore_max_freq", 0)
        yield from check_frequency_order(self, "uncore_min_freq", "uncore_max_freq")
        yield from check_range(self, "energy_performance_preference", 0, 255)
        yield from check_range(self, "turbo_priority", 0)
        yield from check_range(self, "sst_clos_id", 0, 3)


def _khz(value: Frequency | int | None) -> int | None:
    return value.khz if isinstance(value, Frequency) else value


def check_frequency_order(obj: Any, low: str, high: str) -> Iterator[Issue]:
    """``obj.low <= obj.high`` when both are numeric."""
    lo, hi = _khz(getattr(obj, low)), _khz(getattr(obj, high))
    if lo is not None and hi is not None and lo > hi:
        yield at(obj, low, f"invalid value {quote(lo)}: exceeds {key_of(type(obj), high)} ({hi})")
