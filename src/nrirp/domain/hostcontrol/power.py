"""CPU classes on the host: from the classes assigned to CPUs to what each CPU and die runs with.

:func:`plan_power` takes the class of every CPU (the policy's :class:`HostAssignment`), the
classes' settings and what the host offers (:class:`PowerCaps`, from the ``CPUPowerControl``
port) and gives the :class:`PowerTarget`: per CPU the cpufreq limits, governor, EPP and the
C-states to disable; per die the uncore limits. A value left ``None`` is the host's own (the
adapter restores what it found there). The rules are the reference's:

- ``min``/``base``/``turbo`` resolve per CPU (``cpuinfo_min_freq``, ``base_frequency``,
  ``cpuinfo_max_freq``); kHz values are kept within the CPU's range;
- within a turbo domain (a package, or the system), when an active class has
  ``turboPriority``, only the classes of the highest priority keep turbo: the others' maximum
  frequency is capped at the CPU's base frequency;
- settings of one shared domain take the highest value among the active classes in it: per die
  the uncore minimum and maximum; per cpufreq policy (CPUs sharing one, ``affected_cpus``) the
  frequency limits (and, as nrirp's choice for what the reference leaves open, the lowest EPP
  value and the governor of the class with the highest maximum).
"""

from __future__ import annotations

import enum
from collections import defaultdict
from collections.abc import Mapping
from types import MappingProxyType

import attrs

from nrirp.domain.config.cpu_class import Frequency
from nrirp.domain.config.enums import FrequencyKeyword, TurboDomain
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.classes import ClassSettings
from nrirp.domain.topology import Machine

_EMPTY_MAP: Mapping[object, object] = MappingProxyType({})


class Knob(enum.StrEnum):
    """A per-CPU setting a class may change."""

    MIN_FREQ = "scaling_min_freq"
    MAX_FREQ = "scaling_max_freq"
    GOVERNOR = "scaling_governor"
    EPP = "energy_performance_preference"
    CSTATES = "cpuidle"
    UNCORE = "uncore"


ALL_KNOBS = frozenset(Knob) - {Knob.UNCORE}


@attrs.frozen(cache_hash=True)
class CPUCaps:
    """What one CPU offers: its frequency range (kHz), the governors and C-states it has and
    the knobs that can be written (CPUs alike may share one value)."""

    min_khz: int | None = None
    max_khz: int | None = None
    base_khz: int | None = None
    governors: tuple[str, ...] = ()
    cstates: tuple[str, ...] = ()
    knobs: frozenset[Knob] = frozenset()


@attrs.frozen
class UncoreCaps:
    """A die's uncore frequency range (its initial limits, kHz)."""

    min_khz: int
    max_khz: int


@attrs.frozen
class PowerCaps:
    """What the host offers for CPU classes, and why what is missing is missing
    (``unavailable``: a knob -> one line naming the file and the cause, for notices);
    ``policies``: the cpufreq policy of each CPU that shares one with others (its id)."""

    cpus: Mapping[int, CPUCaps] = attrs.field(default=_EMPTY_MAP)
    policies: Mapping[int, int] = attrs.field(default=_EMPTY_MAP)
    uncore: Mapping[tuple[int, int], UncoreCaps] = attrs.field(default=_EMPTY_MAP)
    unavailable: Mapping[Knob, str] = attrs.field(default=_EMPTY_MAP)

    def cpus_with(self, knob: Knob) -> CPUSet:
        return CPUSet.from_ids(cpu for cpu, caps in self.cpus.items() if knob in caps.knobs)


NO_CAPS = PowerCaps()


@attrs.frozen
class CPUTarget:
    """What one CPU should run with (``None``: the host's own value)."""

    min_khz: int | None = None
    max_khz: int | None = None
    governor: str | None = None
    epp: int | None = None
    disabled_cstates: frozenset[str] | None = None

    def is_empty(self) -> bool:
        return self == _NO_TARGET


_NO_TARGET = CPUTarget()


@attrs.frozen
class UncoreTarget:
    min_khz: int | None = None
    max_khz: int | None = None


@attrs.frozen
class PowerTarget:
    """Per CPU and per die ``(package, die)``; a CPU or die not listed gets the host's own
    values back. ``classes``: the class of each CPU (what the target was made from)."""

    cpus: Mapping[int, CPUTarget] = attrs.field(default=_EMPTY_MAP)
    uncore: Mapping[tuple[int, int], UncoreTarget] = attrs.field(default=_EMPTY_MAP)
    classes: Mapping[int, str] = attrs.field(default=_EMPTY_MAP)


NO_TARGET = PowerTarget()


def resolve_frequency(value: Frequency | None, caps: CPUCaps) -> int | None:
    """A class frequency on one CPU (kHz), kept within the CPU's range; ``None`` when it
    cannot be resolved there (``base`` on a CPU whose base frequency is unknown)."""
    if value is None:
        return None
    if value.keyword is FrequencyKeyword.MIN:
        return caps.min_khz
    if value.keyword is FrequencyKeyword.TURBO:
        return caps.max_khz
    if value.keyword is FrequencyKeyword.BASE:
        return caps.base_khz
    khz = value.khz
    assert khz is not None
    if caps.max_khz is not None:
        khz = min(khz, caps.max_khz)
    if caps.min_khz is not None:
        khz = max(khz, caps.min_khz)
    return khz


def plan_power(
    assignment: Mapping[str, CPUSet],
    classes: Mapping[str, ClassSettings],
    caps: PowerCaps,
    machine: Machine,
    turbo_domain: TurboDomain = TurboDomain.PACKAGE,
) -> PowerTarget:
    """The target for CPUs carrying ``assignment``'s classes (class name -> CPUs; a CPU in
    two sets keeps the first class; names not in ``classes`` are skipped)."""
    class_of: dict[int, ClassSettings] = {}
    for name, cpus in assignment.items():
        settings = classes.get(name)
        if settings is None:
            continue
        for cpu in cpus:
            class_of.setdefault(cpu, settings)
    if not class_of:
        return NO_TARGET
    capped = _turbo_capped(class_of, machine, turbo_domain)
    targets: dict[int, CPUTarget] = {}
    made: dict[tuple[str, int, bool], CPUTarget] = {}  # most CPUs share their caps
    for cpu, settings in class_of.items():
        cpu_caps = caps.cpus.get(cpu)
        if cpu_caps is None:
            continue
        key = (settings.name, id(cpu_caps), settings.name in capped.get(cpu, ()))
        target = made.get(key)
        if target is None:
            target = made[key] = _cpu_target(settings, cpu_caps, key[2])
        if not target.is_empty():
            targets[cpu] = target
    if caps.policies:
        _share_policies(targets, class_of, caps)
    return PowerTarget(
        cpus=MappingProxyType(targets),
        uncore=MappingProxyType(_uncore(class_of, caps, machine)),
        classes=MappingProxyType({cpu: s.name for cpu, s in sorted(class_of.items())}),
    )


def _turbo_capped(
    class_of: Mapping[int, ClassSettings], machine: Machine, turbo_domain: TurboDomain
) -> dict[int, frozenset[str]]:
    """Per CPU, the classes that lose turbo in its domain (lower ``turboPriority`` than the
    highest active one there)."""
    domains: dict[int, list[int]] = defaultdict(list)
    for cpu in class_of:
        cpu_info = machine.cpus.get(cpu)
        key = 0 if turbo_domain is TurboDomain.SYSTEM or cpu_info is None else cpu_info.package_id
        domains[key].append(cpu)
    out: dict[int, frozenset[str]] = {}
    for cpus in domains.values():
        active = {class_of[cpu].name: class_of[cpu] for cpu in cpus}
        if all(c.turbo_priority is None for c in active.values()):
            continue
        top = max(c.turbo_priority or 0 for c in active.values())
        losers = frozenset(n for n, c in active.items() if (c.turbo_priority or 0) < top)
        if losers:
            for cpu in cpus:
                out[cpu] = losers
    return out


def _cpu_target(settings: ClassSettings, caps: CPUCaps, no_turbo: bool) -> CPUTarget:
    knobs = caps.knobs
    low = resolve_frequency(settings.min_freq, caps) if Knob.MIN_FREQ in knobs else None
    high = resolve_frequency(settings.max_freq, caps) if Knob.MAX_FREQ in knobs else None
    if no_turbo and Knob.MAX_FREQ in knobs and caps.base_khz is not None:
        high = caps.base_khz if high is None else min(high, caps.base_khz)
    if low is not None and high is not None and low > high:
        low = high
    governor = settings.governor if Knob.GOVERNOR in knobs else None
    if governor is not None and caps.governors and governor not in caps.governors:
        governor = None
    epp = settings.epp if Knob.EPP in knobs else None
    cstates = None
    if settings.disabled_cstates and Knob.CSTATES in knobs:
        cstates = frozenset(settings.disabled_cstates) & frozenset(caps.cstates)
    return CPUTarget(
        min_khz=low, max_khz=high, governor=governor, epp=epp, disabled_cstates=cstates or None
    )


def _share_policies(
    targets: dict[int, CPUTarget], class_of: Mapping[int, ClassSettings], caps: PowerCaps
) -> None:
    """CPUs of one cpufreq policy get one setting: the highest limits among their classes."""
    members: dict[int, list[int]] = defaultdict(list)
    for cpu, policy in caps.policies.items():
        members[policy].append(cpu)
    for cpus in members.values():
        classed = [cpu for cpu in cpus if cpu in class_of]
        if len(cpus) < 2 or not classed:
            continue
        own = [targets.get(cpu, _NO_TARGET) for cpu in classed]
        lows = [t.min_khz for t in own if t.min_khz is not None]
        highs = [t.max_khz for t in own]
        epps = [t.epp for t in own if t.epp is not None]
        by_max = sorted(
            (t for t in own if t.governor is not None),
            key=lambda t: -(t.max_khz if t.max_khz is not None else 1 << 62),
        )
        low = max(lows) if lows else None
        high = None if None in highs else max(h for h in highs if h is not None)
        epp = min(epps) if epps else None
        governor = by_max[0].governor if by_max else None
        for cpu in cpus:
            target = attrs.evolve(
                targets.get(cpu, _NO_TARGET), min_khz=low, max_khz=high, epp=epp, governor=governor
            )
            if target.is_empty():
                targets.pop(cpu, None)
            else:
                targets[cpu] = target


def _uncore(
    class_of: Mapping[int, ClassSettings], caps: PowerCaps, machine: Machine
) -> dict[tuple[int, int], UncoreTarget]:
    out: dict[tuple[int, int], UncoreTarget] = {}
    for key, die_caps in caps.uncore.items():
        die = machine.dies.get(key)
        if die is None:
            continue
        active = {class_of[cpu].name: class_of[cpu] for cpu in die.cpus if cpu in class_of}
        lows = [c.uncore_min_khz for c in active.values() if c.uncore_min_khz is not None]
        highs = [c.uncore_max_khz for c in active.values() if c.uncore_max_khz is not None]
        low = _within(max(lows), die_caps) if lows else None
        high = _within(max(highs), die_caps) if highs else None
        if low is not None and high is not None and high < low:
            high = low
        if low is not None or high is not None:
            out[key] = UncoreTarget(low, high)
    return out


def _within(khz: int, caps: UncoreCaps) -> int:
    return max(caps.min_khz, min(caps.max_khz, khz))
