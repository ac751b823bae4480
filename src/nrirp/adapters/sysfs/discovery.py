"""The sysfs hardware discovery adapter."""

from __future__ import annotations

import os
from collections.abc import Mapping

from nrirp.adapters.sysfs.caches import read_caches
from nrirp.adapters.sysfs.cpus import read_core_types, read_cpus, read_isolated, read_online
from nrirp.adapters.sysfs.files import SysfsFiles
from nrirp.adapters.sysfs.nodes import NODE_DIR, read_nodes
from nrirp.domain.ports.hardware import HardwareDiscoveryError
from nrirp.domain.topology import (
    Machine,
    MemoryType,
    NumaNode,
    TopologyError,
    classify_memory_types,
)


def default_procfs_root(sysfs_root: str) -> str:
    """The ``proc`` directory beside a sysfs root: ``/proc`` for ``/sys``, ``X/proc`` for a
    tree at ``X/sys`` (as fake machines are written)."""
    parent = os.path.dirname(os.path.normpath(sysfs_root))
    return os.path.join(parent, "proc")


class SysfsDiscovery:
    """Discovers the machine from a sysfs tree mounted at ``root`` (``/sys`` by default).

    ``memory_types`` maps NUMA node ids to a memory type and wins over the built-in rule
    (CPU-less nodes smaller than the average DRAM node are HBM, other CPU-less nodes PMEM).
    ``procfs_root`` (default: the ``proc`` directory beside ``root``) is read only on kernels
    without NUMA, for the memory size (``meminfo``). Offline CPUs are ignored. Malformed files
    raise :class:`~nrirp.domain.ports.hardware.HardwareDiscoveryError` naming the file and
    quoting it.
    """

    def __init__(
        self,
        root: str = "/sys",
        memory_types: Mapping[int, MemoryType] | None = None,
        procfs_root: str | None = None,
    ):
        self.root = str(root)
        self.memory_types = dict(memory_types or {})
        self.procfs_root = str(procfs_root) if procfs_root else default_procfs_root(self.root)

    def discover(self) -> Machine:
        if not os.path.isdir(self.root):
            raise HardwareDiscoveryError(f"{self.root}: no such directory (sysfs root)")
        files = SysfsFiles(self.root)
        online = read_online(files)
        nodes = read_nodes(files, online, SysfsFiles(self.procfs_root))
        node_of: dict[int, int] = {}
        for node in nodes:
            for cpu in node.cpus:
                if cpu in node_of:
                    raise HardwareDiscoveryError(
                        f"{files.path(NODE_DIR)}: cpu {cpu} is listed by node{node_of[cpu]} "
                        f"and node{node.id}"
                    )
                node_of[cpu] = node.id
        homeless = online.remove(*node_of)
        if homeless:
            raise HardwareDiscoveryError(
                f"{files.path(NODE_DIR)}: online cpus {homeless} are in no node's cpulist"
            )
        cpus = read_cpus(files, online, node_of, read_core_types(files, online))
        try:
            types = classify_memory_types(
                {n.id: n.memory_bytes for n in nodes},
                {n.id for n in nodes if n.cpus},
                self.memory_types,
            )
            return Machine.build(
                cpus=cpus,
                nodes=[
                    NumaNode(
                        id=n.id,
                        cpus=n.cpus,
                        memory_bytes=n.memory_bytes,
                        memory_type=types[n.id],
                        distances=n.distances,
                    )
                    for n in nodes
                ],
                caches=read_caches(files, online),
                isolated=read_isolated(files, online),
            )
        except TopologyError as err:
            raise HardwareDiscoveryError(
                f"inconsistent hardware under {self.root}: {err}"
            ) from None
