"""Materialising a layout as a sysfs tree, in the file names and formats Linux uses.

Only what discovery and the usual tools read is written: the ``*_list`` forms of cpu masks
(not the hex masks), ``cpuN/cache/indexM/{level,type,shared_cpu_list,id,size}``,
``cpu/cpufreq/policyN`` with ``cpuN/cpufreq`` symlinks, node ``cpulist``/``meminfo``/``distance``
(no node directory for a kernel without NUMA, whose memory is in procfs' ``meminfo``:
:func:`write_procfs`), the ``cpu_core``/``cpu_atom`` PMU cpu lists of machines that mark core
kinds, and PCI devices (``numa_node``, ``local_cpulist``, device nodes linked from
``dev/{char,block}/M:m``). Offline CPUs keep their ``cpuN/online`` (``0``) but, as on Linux,
lose their topology, cache and cpufreq entries and vanish from every sibling, cache and node
list.
"""

from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path

from nrirp.adapters.fakehw.layout import Layout
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CoreType

_CACHE_TYPE_NAMES = {"data": "Data", "instruction": "Instruction", "unified": "Unified"}


class SysfsTreeError(Exception):
    """The target directory cannot take a sysfs tree."""


def write_sysfs(layout: Layout, root: str | Path) -> None:
    """Write the layout's sysfs tree under ``root`` (created; must be empty if it exists)."""
    root = Path(root)
    _check_empty(root)
    _Writer(str(root)).write(layout)


def write_procfs(layout: Layout, root: str | Path) -> None:
    """Write what discovery reads from procfs under ``root`` (created; must be empty if it
    exists): ``meminfo``, whose ``MemTotal`` is the machine's memory (read on kernels
    without NUMA)."""
    root = Path(root)
    _check_empty(root)
    kb = layout.memory_bytes // 1024
    _Writer(str(root)).file(
        "/meminfo",
        f"MemTotal:       {kb:8d} kB\nMemFree:        {kb:8d} kB\nMemAvailable:   {kb:8d} kB",
    )


def _check_empty(root: Path) -> None:
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise SysfsTreeError(f"{root}: exists and is not an empty directory")


class _Writer:
    def __init__(self, root: str) -> None:
        self.root = root
        self.made: set[str] = set()

    def file(self, rel: str, content: str) -> None:
        path = self.root + rel
        parent = path.rpartition("/")[0]
        if parent not in self.made:
            os.makedirs(parent, exist_ok=True)
            self.made.add(parent)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, (content + "\n").encode())
        finally:
            os.close(fd)

    def write(self, layout: Layout) -> None:
        online = layout.online
        present = layout.present
        cpu_dir = "/devices/system/cpu"
        self.file(f"{cpu_dir}/online", str(online))
        self.file(f"{cpu_dir}/present", str(present))
        self.file(f"{cpu_dir}/possible", str(present))
        self.file(f"{cpu_dir}/offline", str(present - online))
        self.file(f"{cpu_dir}/isolated", str(layout.isolated))
        self.file(f"{cpu_dir}/kernel_max", "8191")
        self._write_cpus(layout)
        self._write_caches(layout)
        if layout.numa:
            self._write_nodes(layout)
        self._write_devices(layout)
        self._write_core_kinds(layout)

    def _write_cpus(self, layout: Layout) -> None:
        online = layout.online
        groups: dict[str, dict[object, int]] = {
            name: defaultdict(int) for name in ("core", "package", "die", "cluster")
        }
        for c in layout.cpus:
            if c.id in online:
                bit = 1 << c.id
                groups["core"][(c.package, c.core)] |= bit
                groups["package"][c.package] |= bit
                groups["die"][(c.package, c.die)] |= bit
                groups["cluster"][(c.package, c.cluster)] |= bit
        text = {name: {k: str(CPUSet(v)) for k, v in g.items()} for name, g in groups.items()}
        for c in layout.cpus:
            base = f"/devices/system/cpu/cpu{c.id}"
            if c.id != 0:
                self.file(f"{base}/online", "1" if c.id in online else "0")
            if c.id not in online:
                continue
            core = text["core"][(c.package, c.core)]
            package = text["package"][c.package]
            topo = f"{base}/topology"
            self.file(f"{topo}/physical_package_id", str(c.package))
            self.file(f"{topo}/die_id", str(c.die))
            self.file(f"{topo}/cluster_id", str(c.cluster))
            self.file(f"{topo}/core_id", str(c.core))
            self.file(f"{topo}/thread_siblings_list", core)
            self.file(f"{topo}/core_cpus_list", core)
            self.file(f"{topo}/core_siblings_list", package)
            self.file(f"{topo}/package_cpus_list", package)
            self.file(f"{topo}/die_cpus_list", text["die"][(c.package, c.die)])
            self.file(f"{topo}/cluster_cpus_list", text["cluster"][(c.package, c.cluster)])
            freq = c.frequency
            if freq.base_khz is None and freq.max_khz is None and freq.epp is None:
                continue
            policy = f"/devices/system/cpu/cpufreq/policy{c.id}"
            if freq.base_khz is not None:
                self.file(f"{policy}/base_frequency", str(freq.base_khz))
            if freq.max_khz is not None:
                self.file(f"{policy}/cpuinfo_max_freq", str(freq.max_khz))
            if freq.epp is not None:
                self.file(f"{policy}/energy_performance_preference", freq.epp)
            self.file(f"{policy}/affected_cpus", str(c.id))
            os.symlink(f"../cpufreq/policy{c.id}", f"{self.root}{base}/cpufreq")

    def _write_core_kinds(self, layout: Layout) -> None:
        """The PMU cpu lists, where some online CPU is not a plain performance core: P-cores
        in ``cpu_core``, E-cores in ``cpu_atom`` (only if there are some); a CPU of no kind is
        in neither."""
        online = layout.online
        kinds = {c.id: c.core_type for c in layout.cpus if c.id in online}
        if all(kind is CoreType.PERFORMANCE for kind in kinds.values()):
            return
        performance = CPUSet.from_ids(i for i, k in kinds.items() if k is CoreType.PERFORMANCE)
        efficient = CPUSet.from_ids(i for i, k in kinds.items() if k is CoreType.EFFICIENT)
        self.file("/devices/cpu_core/cpus", str(performance))
        if efficient:
            self.file("/devices/cpu_atom/cpus", str(efficient))

    def _write_caches(self, layout: Layout) -> None:
        online = layout.online
        per_cpu: dict[int, list[tuple[str, str, str, str, str]]] = defaultdict(list)
        for g in layout.caches:
            cpus = g.cpus & online
            if not cpus:
                continue
            size = "" if g.size_bytes is None else f"{g.size_bytes // 1024}K"
            entry = (str(g.level), _CACHE_TYPE_NAMES[g.type.value], str(cpus), str(g.id), size)
            for cpu in cpus:
                per_cpu[cpu].append(entry)
        for cpu, entries in per_cpu.items():
            for index, (level, type_name, shared, cache_id, size) in enumerate(entries):
                base = f"/devices/system/cpu/cpu{cpu}/cache/index{index}"
                self.file(f"{base}/level", level)
                self.file(f"{base}/type", type_name)
                self.file(f"{base}/shared_cpu_list", shared)
                self.file(f"{base}/id", cache_id)
                if size:
                    self.file(f"{base}/size", size)

    def _write_devices(self, layout: Layout) -> None:
        for d in layout.devices:
            self.file(f"{d.sysfs_dir}/numa_node", str(d.node))
            self.file(f"{d.sysfs_dir}/local_cpulist", str(d.cpus))
            if not d.path:
                continue
            kind = "block" if d.type == "b" else "char"
            node_dir = (
                f"{d.sysfs_dir}/{'block' if d.type == 'b' else 'dev'}/{d.path.rpartition('/')[2]}"
            )
            self.file(f"{node_dir}/dev", f"{d.major}:{d.minor}")
            os.makedirs(f"{self.root}/dev/{kind}", exist_ok=True)
            os.symlink(f"../..{node_dir}", f"{self.root}/dev/{kind}/{d.major}:{d.minor}")

    def _write_nodes(self, layout: Layout) -> None:
        online = layout.online
        node_dir = "/devices/system/node"
        ids = CPUSet.from_ids(n.id for n in layout.nodes)
        self.file(f"{node_dir}/online", str(ids))
        self.file(f"{node_dir}/possible", str(ids))
        self.file(
            f"{node_dir}/has_cpu",
            str(CPUSet.from_ids(n.id for n in layout.nodes if n.cpus & online)),
        )
        self.file(
            f"{node_dir}/has_memory",
            str(CPUSet.from_ids(n.id for n in layout.nodes if n.memory_bytes)),
        )
        for n in layout.nodes:
            base = f"{node_dir}/node{n.id}"
            kb = n.memory_bytes // 1024
            self.file(f"{base}/cpulist", str(n.cpus & online))
            self.file(
                f"{base}/meminfo",
                f"Node {n.id} MemTotal:       {kb:8d} kB\n"
                f"Node {n.id} MemFree:        {kb:8d} kB\n"
                f"Node {n.id} MemUsed:        {0:8d} kB",
            )
            self.file(f"{base}/distance", " ".join(str(layout.distances[n.id][m]) for m in ids))
