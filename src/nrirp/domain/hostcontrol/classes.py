"""CPU classes as the host controller uses them: the policy's ``cpuClasses`` and the legacy
``control.cpu.classes``, resolved into one table of settings by name."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from nrirp.domain.config import ControlConfig
from nrirp.domain.config.cpu_class import CPUClass, Frequency


@attrs.frozen
class ClassSettings:
    """What a CPU class asks of its CPUs (``None``: leave that setting as the host had it).

    Frequencies stay symbolic (``min``, ``base``, ``turbo``) until a CPU resolves them.
    ``pct`` notes SST/PCT fields, which no adapter applies."""

    name: str
    min_freq: Frequency | None = None
    max_freq: Frequency | None = None
    uncore_min_khz: int | None = None
    uncore_max_khz: int | None = None
    epp: int | None = None
    governor: str | None = None
    disabled_cstates: tuple[str, ...] = ()
    turbo_priority: int | None = None
    pct: bool = False

    def fields(self) -> list[str]:
        """The configuration keys this class sets that act on CPUs (for notices)."""
        out = []
        for key, value in (
            ("minFreq", self.min_freq),
            ("maxFreq", self.max_freq),
            ("energyPerformancePreference", self.epp),
            ("freqGovernor", self.governor),
            ("disabledCstates", self.disabled_cstates or None),
            ("uncoreMinFreq", self.uncore_min_khz),
            ("uncoreMaxFreq", self.uncore_max_khz),
        ):
            if value is not None:
                out.append(key)
        return out


def _of_policy_class(cls: CPUClass) -> ClassSettings:
    return ClassSettings(
        name=cls.name,
        min_freq=cls.min_freq,
        max_freq=cls.max_freq,
        uncore_min_khz=cls.uncore_min_freq,
        uncore_max_khz=cls.uncore_max_freq,
        epp=cls.energy_performance_preference,
        governor=cls.freq_governor,
        disabled_cstates=cls.disabled_cstates,
        turbo_priority=cls.turbo_priority,
        pct=cls.pct_priority is not None or cls.sst_clos_id is not None,
    )


def resolve_classes(
    cpu_classes: Sequence[CPUClass], control: ControlConfig | None
) -> Mapping[str, ClassSettings]:
    """Every class by name: the policy's ``cpuClasses``, then ``control.cpu.classes`` under
    the names not used yet (as the reference appends the legacy ones)."""
    out = {c.name: _of_policy_class(c) for c in cpu_classes}
    legacy = control.cpu.classes if control is not None else {}
    for name, c in legacy.items():
        if name in out:
            continue
        out[name] = ClassSettings(
            name=name,
            min_freq=None if c.min_freq is None else Frequency(khz=c.min_freq),
            max_freq=None if c.max_freq is None else Frequency(khz=c.max_freq),
            uncore_min_khz=c.uncore_min_freq,
            uncore_max_khz=c.uncore_max_freq,
            epp=c.energy_performance_preference,
            governor=c.freq_governor,
            disabled_cstates=c.disabled_cstates,
        )
    return MappingProxyType(out)
