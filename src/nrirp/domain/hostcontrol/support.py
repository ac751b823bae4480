"""What of the configured CPU classes this host can apply, and where.

:func:`class_support` gives the CPUs on which every setting of a class takes effect (the
topology-aware policy prefers pools that have them); :func:`power_notices` says, once per
configuration, what cannot be applied and why (a VM without cpufreq, a read-only file, a
C-state or governor the CPUs do not have, the SST fields no adapter drives), and which
frequencies lie outside the host's range and are clamped to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from nrirp.domain.config.enums import FrequencyKeyword
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.classes import ClassSettings
from nrirp.domain.hostcontrol.power import CPUCaps, Knob, PowerCaps, UncoreCaps

_FIELD_KNOBS = (
    ("minFreq", "min_freq", Knob.MIN_FREQ),
    ("maxFreq", "max_freq", Knob.MAX_FREQ),
    ("turboPriority", "turbo_priority", Knob.MAX_FREQ),
    ("freqGovernor", "governor", Knob.GOVERNOR),
    ("energyPerformancePreference", "epp", Knob.EPP),
    ("disabledCstates", "disabled_cstates", Knob.CSTATES),
)


def _set(settings: ClassSettings, attribute: str) -> bool:
    value = getattr(settings, attribute)
    return bool(value) if isinstance(value, tuple) else value is not None


def _cpu_lacks(settings: ClassSettings, attribute: str, knob: Knob, caps: CPUCaps) -> str | None:
    """Why one CPU cannot take one field of a class (``None``: it can)."""
    if knob not in caps.knobs:
        return "unavailable"
    if attribute in ("min_freq", "max_freq"):
        value = getattr(settings, attribute)
        if value.keyword is FrequencyKeyword.BASE and caps.base_khz is None:
            return "base frequency unknown"
    if attribute == "governor" and caps.governors and settings.governor not in caps.governors:
        return f"governor {settings.governor} not available ({', '.join(caps.governors)})"
    if attribute == "disabled_cstates":
        missing = [s for s in settings.disabled_cstates if s not in caps.cstates]
        if missing:
            return f"no C-state {', '.join(missing)} ({', '.join(caps.cstates) or 'none'})"
    return None


def class_support(settings: ClassSettings, caps: PowerCaps, cpus: Iterable[int]) -> CPUSet:
    """The CPUs among ``cpus`` on which every per-CPU setting of the class takes effect."""
    out = []
    for cpu in cpus:
        cpu_caps = caps.cpus.get(cpu)
        if cpu_caps is None:
            continue
        if all(
            _cpu_lacks(settings, attribute, knob, cpu_caps) is None
            for _, attribute, knob in _FIELD_KNOBS
            if _set(settings, attribute)
        ):
            out.append(cpu)
    return CPUSet.from_ids(out)


def power_notices(
    classes: Mapping[str, ClassSettings], caps: PowerCaps, cpus: CPUSet, has_uncore: bool
) -> list[str]:
    """One line per class that cannot be applied in full on ``cpus``, saying what and why."""
    out = []
    for settings in classes.values():
        problems = []
        for key, attribute, knob in _FIELD_KNOBS:
            if not _set(settings, attribute):
                continue
            reasons: dict[str, list[int]] = {}
            for cpu in cpus:
                cpu_caps = caps.cpus.get(cpu, CPUCaps())
                why = _cpu_lacks(settings, attribute, knob, cpu_caps)
                if why == "unavailable":
                    why = caps.unavailable.get(knob, f"{knob.value} unavailable")
                if why is not None:
                    reasons.setdefault(why, []).append(cpu)
            for why, lacking in reasons.items():
                problems.append(f"{key}{_where(lacking, cpus)}: {why}")
            if attribute in ("min_freq", "max_freq"):
                value = getattr(settings, attribute)
                problems.extend(_clamped_cpus(key, knob, value.khz, caps, cpus))
        uncore = settings.uncore_min_khz is not None or settings.uncore_max_khz is not None
        if uncore and not has_uncore:
            why = caps.unavailable.get(Knob.UNCORE, "no uncore frequency control")
            problems.append(f"uncoreMinFreq/uncoreMaxFreq: {why}")
        elif uncore:
            for key, khz in (
                ("uncoreMinFreq", settings.uncore_min_khz),
                ("uncoreMaxFreq", settings.uncore_max_khz),
            ):
                problems.extend(_clamped_dies(key, khz, caps.uncore))
        if settings.pct:
            problems.append(
                "pctPriority/sstClosID/pctMinFreq/pctMaxFreq: no adapter drives Intel SST"
            )
        if problems:
            out.append(
                f"CPU class {settings.name} cannot be applied in full: " + "; ".join(problems)
            )
    return out


def _where(some: list[int], cpus: CPUSet) -> str:
    """`` on CPUs ...`` for a problem of some of ``cpus``; nothing when it is all of them."""
    return "" if len(some) == len(cpus) else f" on CPUs {CPUSet.from_ids(some)}"


def _clamped_cpus(
    key: str, knob: Knob, khz: int | None, caps: PowerCaps, cpus: CPUSet
) -> list[str]:
    """``key``'s frequency (``None``: a keyword, always within range) on the CPUs whose
    range it lies outside of, one line per side and limit: it is clamped there."""
    if khz is None:
        return []
    outside: dict[tuple[str, int], list[int]] = {}
    for cpu in cpus:
        cpu_caps = caps.cpus.get(cpu)
        if cpu_caps is None or knob not in cpu_caps.knobs:
            continue  # said already: the knob is unavailable there
        if cpu_caps.max_khz is not None and khz > cpu_caps.max_khz:
            outside.setdefault(("above the highest", cpu_caps.max_khz), []).append(cpu)
        elif cpu_caps.min_khz is not None and khz < cpu_caps.min_khz:
            outside.setdefault(("below the lowest", cpu_caps.min_khz), []).append(cpu)
    out = []
    for (side, limit), found in sorted(outside.items()):
        clamped = f"{khz} kHz is {side} frequency ({limit} kHz): clamped to it"
        out.append(f"{key}{_where(found, cpus)}: {clamped}")
    return out


def _clamped_dies(
    key: str, khz: int | None, dies: Mapping[tuple[int, int], UncoreCaps]
) -> list[str]:
    """``key``'s uncore frequency on the dies whose range it lies outside of."""
    if khz is None:
        return []
    out = []
    for (package, die), die_caps in sorted(dies.items()):
        if khz > die_caps.max_khz:
            side, limit = "above the highest", die_caps.max_khz
        elif khz < die_caps.min_khz:
            side, limit = "below the lowest", die_caps.min_khz
        else:
            continue
        out.append(
            f"{key} on package {package} die {die}: {khz} kHz is {side} uncore frequency "
            f"({limit} kHz): clamped to it"
        )
    return out
