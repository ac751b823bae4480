"""The machine spec: a YAML description of a fake machine, in compact or explicit form.

See ``docs/hardware.md`` for every key. Sizes are bytes (an integer, or a string with a binary
suffix such as ``48K``, ``16Gi``, ``1TiB``); frequencies are kHz, as in sysfs.
"""

from __future__ import annotations

import enum
from typing import NewType

import attrs

from nrirp.adapters.fakehw.host_spec import HostSpec
from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.topology import CacheType, CoreType, MemoryType

ByteSize = NewType("ByteSize", int)
NodeIds = NewType("NodeIds", tuple[int, ...])
"""One node id (``0``) or a list of them (``[0, 1]``); read as a tuple."""


class Numbering(enum.Enum):
    """How the compact form numbers hardware threads."""

    SMT_ADJACENT = "smt-adjacent"  # siblings get consecutive ids: core 0 = cpus 0,1
    SMT_LAST = "smt-last"  # first threads of all cores, then second threads: core 0 = 0,N


class CacheScope(enum.Enum):
    """Which CPUs share one instance of a cache level."""

    CORE = "core"
    CLUSTER = "cluster"
    NODE = "node"
    DIE = "die"
    PACKAGE = "package"


@attrs.frozen
class FrequencySpec:
    """cpufreq attributes of a core: ``base_frequency``, ``cpuinfo_max_freq`` and EPP."""

    base_khz: int | None = None
    max_khz: int | None = None
    epp: str | None = None


@attrs.frozen
class CacheInstanceSpec:
    """One cache instance given by hand: the CPUs sharing it (whole cores) and its size."""

    cpus: CPUSet
    size: ByteSize | None = None  # default: the level's ``size``
    id: int | None = None  # the cache's sysfs id; default: numbered in order of the first CPU


@attrs.frozen
class CacheLevelSpec:
    """One cache level (L1d, L1i, L2, L3, ...) and which CPUs share each instance.

    Instances are one per ``shared_by`` domain; ``cores_per_instance`` splits each domain
    into instances of that many cores (an L3 per 4 cores); ``instances`` lists them by hand
    instead (any grouping, each with its own size).
    """

    level: int
    type: CacheType = CacheType.UNIFIED
    shared_by: CacheScope = CacheScope.CORE
    size: ByteSize | None = None
    efficient_size: ByteSize | None = None  # size on E-core instances; default ``size``
    cores_per_instance: int | None = None
    instances: tuple[CacheInstanceSpec, ...] = ()


DEFAULT_CACHES: tuple[CacheLevelSpec, ...] = (
    CacheLevelSpec(1, CacheType.DATA, CacheScope.CORE, ByteSize(48 << 10)),
    CacheLevelSpec(1, CacheType.INSTRUCTION, CacheScope.CORE, ByteSize(32 << 10)),
    CacheLevelSpec(2, CacheType.UNIFIED, CacheScope.CORE, ByteSize(2 << 20)),
    CacheLevelSpec(3, CacheType.UNIFIED, CacheScope.DIE, ByteSize(32 << 20)),
)


@attrs.frozen
class MemoryNodeSpec:
    """A CPU-less NUMA node (PMEM, HBM, CXL-attached memory)."""

    memory: ByteSize
    # the CPU node(s) it hangs off, equally close to each; needed without a distance matrix
    nearest: NodeIds | None = None
    id: int | None = None  # default: the next free node id
    type: MemoryType | None = None  # default: decided by the memory-type rule at discovery
    distance: int = 17  # distance to ``nearest`` when distances are computed


@attrs.frozen
class CompactTopology:
    """The machine by counts; ids are assigned in package, die, node, core order."""

    packages: int = 1
    dies_per_package: int = 1
    nodes_per_die: int = 1
    cores_per_node: int = 1
    threads_per_core: int = 1
    memory_per_node: ByteSize = ByteSize(16 << 30)
    cores_per_cluster: int = 1
    efficient_cores_per_node: int = 0
    efficient_cores_per_cluster: int = 4
    numbering: Numbering = Numbering.SMT_ADJACENT
    cpu_ids: CPUSet | None = None  # renumber onto these ids (sparse machines), in order
    frequency: FrequencySpec = FrequencySpec()
    efficient_frequency: FrequencySpec = FrequencySpec()


@attrs.frozen
class CoreSpec:
    """One physical core of the explicit form."""

    id: int
    cpus: CPUSet
    cluster: int | None = None  # default: the core id (one cluster per core)
    type: CoreType = CoreType.PERFORMANCE
    frequency: FrequencySpec | None = None  # default: the topology's value for the core type


@attrs.frozen
class NodeSpec:
    """A CPU-bearing NUMA node of the explicit form."""

    id: int
    package: int
    memory: ByteSize
    cores: tuple[CoreSpec, ...]
    die: int = 0


@attrs.frozen
class ExplicitTopology:
    """The machine core by core, for sparse or unusual numbering."""

    nodes: tuple[NodeSpec, ...]
    frequency: FrequencySpec = FrequencySpec()
    efficient_frequency: FrequencySpec = FrequencySpec()


@attrs.frozen
class DeviceSpec:
    """A PCI device (for topology hints): its sysfs directory with ``numa_node`` and
    ``local_cpulist``, and optionally a device node (``path``, ``type``, ``major``, ``minor``)
    whose ``/sys/dev/{char,block}/M:m`` link leads to it."""

    pci: str  # PCI address, e.g. 0000:3b:00.0
    node: int = -1  # numa_node; -1: unknown
    cpus: CPUSet | None = None  # local_cpulist; default: the node's online CPUs (all if -1)
    path: str = ""  # device node, e.g. /dev/dri/card0; empty: none
    type: str = "c"  # c (char) or b (block)
    major: int = 0
    minor: int = 0


@attrs.frozen
class MachineSpec:
    """A fake machine: exactly one of ``compact`` and ``explicit``, plus common parts."""

    name: str
    description: str = ""
    compact: CompactTopology | None = None
    explicit: ExplicitTopology | None = None
    memory_nodes: tuple[MemoryNodeSpec, ...] = ()
    distances: tuple[tuple[int, ...], ...] | None = None  # rows and columns in node id order
    caches: tuple[CacheLevelSpec, ...] = DEFAULT_CACHES
    isolated: CPUSet = EMPTY
    offline: CPUSet = EMPTY  # present but offline CPUs
    devices: tuple[DeviceSpec, ...] = ()  # PCI devices, for topology hints
    numa: bool = True  # False: a kernel without NUMA (one node; memory from /proc/meminfo)
    host: HostSpec | None = None  # host control files (cpufreq, cpuidle, uncore, resctrl, irq)
