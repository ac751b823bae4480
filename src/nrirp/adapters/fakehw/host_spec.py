"""The ``host`` part of a machine spec: the control files a host offers (cpufreq, cpuidle,
uncore, resctrl, interrupts) and which of them are read-only.

A section left out is a host without that interface (a VM without cpufreq, no resctrl
mount, no ``/proc/irq``), so each control can be tested against a missing interface too.
"""

from __future__ import annotations

import attrs

from nrirp.domain.cpuset import CPUSet


@attrs.frozen
class CpufreqSpec:
    """cpufreq beyond what discovery reads (CPUs whose spec has a ``frequency``):
    ``cpuinfo_min_freq``, the governors and EPP choices; the current limits start at the
    CPU's range."""

    min_khz: int = 800_000
    governors: tuple[str, ...] = ("performance", "powersave")
    governor: str = "powersave"
    epp_preferences: tuple[str, ...] = (
        "default",
        "performance",
        "balance_performance",
        "balance_power",
        "power",
    )


@attrs.frozen
class UncoreSpec:
    """Per-die uncore frequency control (``intel_uncore_frequency``), its range in kHz."""

    min_khz: int = 800_000
    max_khz: int = 2_400_000


@attrs.frozen
class CacheAllocationSpec:
    """An ``info/L2`` or ``info/L3`` of resctrl (``cbm_mask`` in hex)."""

    cbm_mask: str = "fff"
    min_cbm_bits: int = 1
    num_closids: int = 16
    cdp: bool = False


@attrs.frozen
class BandwidthSpec:
    """``info/MB`` of resctrl; ``mbps``: mounted with ``mba_MBps``."""

    min_bandwidth: int = 10
    bandwidth_gran: int = 10
    num_closids: int = 8
    mbps: bool = False


@attrs.frozen
class ResctrlSpec:
    """resctrl mounted at ``fs/resctrl``, with the resources given."""

    l2: CacheAllocationSpec | None = None
    l3: CacheAllocationSpec | None = None
    mb: BandwidthSpec | None = None


@attrs.frozen
class InterruptSpec:
    """An interrupt: its number, the names of its handlers (``/proc/interrupts``'s last
    column), its affinity (default every online CPU) and whether it can be moved."""

    irq: int
    names: tuple[str, ...] = ()
    cpus: CPUSet | None = None
    read_only: bool = False


@attrs.frozen
class HostSpec:
    """The host control files of a fake machine. ``read_only``: globs of paths relative to
    the tree (``sys/devices/system/cpu/cpu*/cpufreq/scaling_governor``), written without
    write bits, as sysfs shows attributes that cannot be stored."""

    cpufreq: CpufreqSpec | None = None
    cpuidle: tuple[str, ...] = ()
    uncore: UncoreSpec | None = None
    resctrl: ResctrlSpec | None = None
    interrupts: tuple[InterruptSpec, ...] = ()
    read_only: tuple[str, ...] = ()
