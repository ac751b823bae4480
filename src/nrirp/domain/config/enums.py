"""Enumerated config values, spelled as the reference spells them."""

from __future__ import annotations

import enum

# a scheduling class's policy is the Linux scheduling policy the model applies: one enum for both
from nrirp.domain.model.changes import SchedulingPolicy as SchedulingPolicy


class CPUPriority(enum.StrEnum):
    """CPU priority preference (``defaultCPUPriority``, ``allocatorPriority``)."""

    HIGH = "high"
    NORMAL = "normal"
    LOW = "low"
    NONE = "none"


class BurstableLevel(enum.StrEnum):
    """Topology level unlimited burstable containers are placed at (``unlimitedBurstable``)."""

    SYSTEM = "system"
    PACKAGE = "package"
    DIE = "die"
    NUMA = "numa"
    L3CACHE = "l3cache"


class CPUTopologyLevel(enum.StrEnum):
    """Balloons CPU tree levels (``shareIdleCPUsInSame``)."""

    SYSTEM = "system"
    PACKAGE = "package"
    DIE = "die"
    NUMA = "numa"
    L2CACHE = "l2cache"
    CORE = "core"
    THREAD = "thread"


class LoadLevel(enum.StrEnum):
    """Where a balloons load class puts its load (``loadClasses[].level``)."""

    L2CACHE = "l2cache"
    CORE = "core"


class ComponentCreation(enum.StrEnum):
    """How a composite balloon creates its component balloons."""

    ALL = "all"
    BALANCE_BALLOONS = "balance-balloons"


class CoreTypePreference(enum.StrEnum):
    """Preferred core type on hybrid CPUs (``preferCoreType``)."""

    EFFICIENT = "efficient"
    PERFORMANCE = "performance"


class IRQMode(enum.StrEnum):
    """How a balloon treats interrupts it claims (``irqMode``)."""

    SINK = "sink"
    ISOLATE = "isolate"


class TurboDomain(enum.StrEnum):
    """Scope within which only the top-priority CPU class gets turbo (``turboDomain``)."""

    PACKAGE = "package"
    SYSTEM = "system"


class MemoryKind(enum.StrEnum):
    """Memory types a balloon may use (``memoryTypes``); matched case-insensitively."""

    DRAM = "DRAM"
    PMEM = "PMEM"
    HBM = "HBM"

    @classmethod
    def _missing_(cls, value: object) -> MemoryKind | None:
        if isinstance(value, str):
            for member in cls:
                if member.value == value.upper():
                    return member
        return None


class QoSClass(enum.StrEnum):
    """Kubernetes pod QoS classes (keys of ``podQoSSchedulingClasses``)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"


class SchedulingFlag(enum.StrEnum):
    """``sched_setattr`` flags of a scheduling class."""

    RESET_ON_FORK = "reset-on-fork"
    RECLAIM = "reclaim"
    DL_OVERRUN = "dl-overrun"
    KEEP_POLICY = "keep-policy"
    KEEP_PARAMS = "keep-params"
    UTIL_CLAMP = "util-clamp"
    UTIL_CLAMP_MIN = "util-clamp-min"
    UTIL_CLAMP_MAX = "util-clamp-max"


class IOClass(enum.StrEnum):
    """I/O scheduling class (``ioClass``)."""

    NONE = "none"
    RT = "rt"
    BE = "be"
    IDLE = "idle"


class FrequencyKeyword(enum.StrEnum):
    """Symbolic CPU frequencies a CPU class may use instead of kHz."""

    MIN = "min"
    BASE = "base"
    TURBO = "turbo"


class MetricsExporter(enum.StrEnum):
    """Metrics export protocol (``instrumentation.metricsExporter``)."""

    PROMETHEUS = "prometheus"
    OTLP_HTTP = "otlp-http"
    OTLP_GRPC = "otlp-grpc"


class LogExporter(enum.StrEnum):
    """OpenTelemetry log export protocol (``instrumentation.logExporter``)."""

    OTLP_HTTP = "otlp-http"
    OTLP_GRPC = "otlp-grpc"


class KlogSeverity(enum.StrEnum):
    """klog ``stderrthreshold`` levels (numbers 0-3 are accepted too)."""

    INFO = "INFO"
    WARNING = "WARNING"
    ERROR = "ERROR"
    FATAL = "FATAL"

    @classmethod
    def _missing_(cls, value: object) -> KlogSeverity | None:
        members = list(cls)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(members):
            return members[value]
        if isinstance(value, str):
            if value.isdigit():
                return cls._missing_(int(value))
            for member in members:
                if member.value == value.upper():
                    return member
        return None
