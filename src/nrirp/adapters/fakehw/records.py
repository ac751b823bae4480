"""The resolved layout of a fake machine: every present CPU, node and cache with final ids."""

from __future__ import annotations

import attrs

from nrirp.adapters.fakehw.host_spec import HostSpec
from nrirp.adapters.fakehw.spec import FrequencySpec
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheType, CoreType, MemoryType


@attrs.frozen
class CpuLayout:
    id: int
    package: int
    die: int
    cluster: int
    core: int
    node: int
    core_type: CoreType
    frequency: FrequencySpec


@attrs.frozen
class NodeLayout:
    id: int
    cpus: CPUSet  # present CPUs
    memory_bytes: int
    declared_type: MemoryType | None = None
    nearest: tuple[int, ...] = ()  # for memory-only nodes: the CPU node(s) it hangs off
    nearest_distance: int = 10  # distance to each ``nearest`` node when distances are computed
    package: int | None = None
    die: int | None = None


@attrs.frozen
class CacheLayout:
    level: int
    type: CacheType
    id: int
    cpus: CPUSet  # present CPUs
    size_bytes: int | None


@attrs.frozen
class DeviceLayout:
    """A PCI device: ``sysfs_dir`` relative to the sysfs root (``/devices/pci0000:3b/...``)."""

    pci: str
    sysfs_dir: str
    node: int  # -1: unknown
    cpus: CPUSet  # local_cpulist
    path: str = ""
    type: str = "c"
    major: int = 0
    minor: int = 0


@attrs.frozen
class Layout:
    """A resolved machine; ``cpus`` holds every present CPU, online or not."""

    name: str
    cpus: tuple[CpuLayout, ...]
    nodes: tuple[NodeLayout, ...]
    caches: tuple[CacheLayout, ...]
    distances: dict[int, dict[int, int]]
    online: CPUSet
    isolated: CPUSet
    devices: tuple[DeviceLayout, ...] = ()
    numa: bool = True
    """False: a kernel without NUMA (no node directories; ``nodes`` is the one node 0)."""
    host: HostSpec | None = None
    """The host control files (:mod:`~nrirp.adapters.fakehw.host_writer`)."""

    @property
    def memory_bytes(self) -> int:
        """The machine's memory: ``MemTotal`` of ``/proc/meminfo``."""
        return sum(n.memory_bytes for n in self.nodes)

    @property
    def present(self) -> CPUSet:
        return CPUSet.from_ids(c.id for c in self.cpus)

    @property
    def declared_memory_types(self) -> dict[int, MemoryType]:
        """Memory types the spec states (sysfs cannot carry them: discovery gets them as config)."""
        return {n.id: n.declared_type for n in self.nodes if n.declared_type is not None}


class Problems:
    """Problems found while resolving a spec, each with its path (``$.compact.packages``)."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{message} @ {path}")


def check_memory(value: int, path: str, problems: Problems) -> None:
    """Memory sizes must be whole kB: sysfs reports them in kB."""
    if value % 1024:
        problems.add(path, f"must be a multiple of 1K (sysfs reports kB), got {value}")
