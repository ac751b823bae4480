"""The ``control`` block: the cpu, rdt and blockio controllers' settings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from nrirp.domain.config.blockio import BlockIOConfig
from nrirp.domain.config.cpu_class import check_frequency_order
from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.rdt import RDTConfig
from nrirp.domain.config.validation import check_range

_EMPTY: Mapping[str, Any] = MappingProxyType({})


@attrs.frozen(kw_only=True)
class CPUControlClass:
    """A class of the (deprecated in the reference) ``control.cpu.classes``; frequencies in kHz."""

    min_freq: int | None = attrs.field(default=None, metadata=ref("minFreq"))
    max_freq: int | None = attrs.field(default=None, metadata=ref("maxFreq"))
    energy_performance_preference: int | None = attrs.field(
        default=None, metadata=ref("energyPerformancePreference")
    )
    uncore_min_freq: int | None = attrs.field(default=None, metadata=ref("uncoreMinFreq"))
    uncore_max_freq: int | None = attrs.field(default=None, metadata=ref("uncoreMaxFreq"))
    freq_governor: str | None = attrs.field(default=None, metadata=ref("freqGovernor"))
    disabled_cstates: tuple[str, ...] = attrs.field(default=(), metadata=ref("disabledCstates"))

    def config_problems(self) -> Iterator[Issue]:
        for attribute in ("min_freq", "max_freq", "uncore_min_freq", "uncore_max_freq"):
            yield from check_range(self, attribute, 0)
        yield from check_range(self, "energy_performance_preference", 0, 255)
        yield from check_frequency_order(self, "min_freq", "max_freq")
        yield from check_frequency_order(self, "uncore_min_freq", "uncore_max_freq")


@attrs.frozen(kw_only=True)
class CPUControlConfig:
    """``control.cpu``."""

    classes: Mapping[str, CPUControlClass] = attrs.field(default=_EMPTY, metadata=ref("classes"))


@attrs.frozen(kw_only=True)
class ControlConfig:
    """``control``: settings of the controllers that enforce decisions outside NRI."""

    cpu: CPUControlConfig = attrs.field(factory=CPUControlConfig, metadata=ref("cpu"))
    rdt: RDTConfig = attrs.field(factory=RDTConfig, metadata=ref("rdt"))
    blockio: BlockIOConfig = attrs.field(factory=BlockIOConfig, metadata=ref("blockio"))
