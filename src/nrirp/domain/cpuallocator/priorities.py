"""CPU priority classes (high, normal, low) from base frequency, EPP and core type.

Each package is classified on its own, as the reference does:

- base frequency: when the package's CPUs have more than one base frequency, those above the
  lowest one are high priority;
- energy-performance preference: when the package's CPUs have more than one known EPP value,
  those with the highest value (the most power-saving one) are low priority and the others high;
  this overrides the frequency class;
- core kind: efficient cores (E-cores of hybrid parts) are always low priority; when the
  kernel marks some of the package's cores as performance cores and leaves others without a
  kind, the performance cores are high priority (the reference takes high-priority capacity
  from them). Both override the frequency and EPP classes.

Everything else is normal priority.
"""

from __future__ import annotations

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.topology import CPU, CoreType, Machine

_EPP_NAMES = {
    "performance": 0,
    "balance_performance": 128,
    "balance_power": 192,
    "power": 255,
}


def epp_value(epp: str | None) -> int | None:
    """The numeric energy-performance preference (0 = performance .. 255 = power).

    Accepts the names Linux shows in ``energy_performance_preference`` and raw numbers;
    ``None`` for a missing or unknown value (such as ``default``).
    """
    if epp is None:
        return None
    text = epp.strip().lower()
    if text in _EPP_NAMES:
        return _EPP_NAMES[text]
    if text.isdigit() and int(text) <= 255:
        return int(text)
    return None


def _classify_package(cpus: list[CPU]) -> dict[int, CPUPriority]:
    freqs = sorted({c.base_frequency_khz for c in cpus if c.base_frequency_khz})
    epps = sorted({v for c in cpus if (v := epp_value(c.epp)) is not None})
    kinds = {c.core_type for c in cpus}
    marked_performance = CoreType.PERFORMANCE in kinds and CoreType.NONE in kinds
    out: dict[int, CPUPriority] = {}
    for cpu in cpus:
        priority = CPUPriority.NORMAL
        if len(freqs) > 1 and (cpu.base_frequency_khz or 0) > freqs[0]:
            priority = CPUPriority.HIGH
        epp = epp_value(cpu.epp)
        if len(epps) > 1 and epp is not None:
            priority = CPUPriority.HIGH if epp < epps[-1] else CPUPriority.LOW
        if cpu.core_type is CoreType.EFFICIENT:
            priority = CPUPriority.LOW
        elif marked_performance and cpu.core_type is CoreType.PERFORMANCE:
            priority = CPUPriority.HIGH
        out[cpu.id] = priority
    return out


def classify_priorities(machine: Machine) -> dict[int, CPUPriority]:
    """The priority class of every online CPU of ``machine`` (never ``NONE``)."""
    out: dict[int, CPUPriority] = {}
    for package in machine.packages.values():
        out.update(_classify_package([machine.cpus[i] for i in package.cpus]))
    return out
