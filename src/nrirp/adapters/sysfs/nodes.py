"""NUMA nodes from ``devices/system/node``: cpus, memory capacity and distances."""

from __future__ import annotations

import re

import attrs

from nrirp.adapters.sysfs.files import SysfsFiles
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.ports.hardware import HardwareDiscoveryError

NODE_DIR = "/devices/system/node"
_NODE_NAME = re.compile(r"node(\d+)", re.ASCII)
_MEM_TOTAL = re.compile(r"^Node\s+(\d+)\s+MemTotal:\s+(\d+)\s+kB\s*$", re.ASCII | re.MULTILINE)
_PROC_MEM_TOTAL = re.compile(r"^MemTotal:\s+(\d+)\s+kB\s*$", re.ASCII | re.MULTILINE)
MEMINFO = "/meminfo"


@attrs.frozen
class NodeInfo:
    """What sysfs says about one node (the memory type is decided later)."""

    id: int
    cpus: CPUSet
    memory_bytes: int
    distances: dict[int, int]


def read_nodes(files: SysfsFiles, online_cpus: CPUSet, proc: SysfsFiles) -> list[NodeInfo]:
    """Every online node.

    A kernel without NUMA support has no ``devices/system/node`` directory: that is one node 0
    with every CPU and the machine's memory, ``MemTotal`` of ``meminfo`` under the procfs
    root ``proc``.
    """
    node_ids = _node_ids(files)
    if node_ids is None:
        memory = _machine_memory(files, proc)
        return [NodeInfo(id=0, cpus=online_cpus, memory_bytes=memory, distances={0: 10})]
    nodes = []
    for node_id in node_ids:
        base = f"{NODE_DIR}/node{node_id}"
        cpus = files.cpuset(base + "/cpulist", files.require(base + "/cpulist")) & online_cpus
        nodes.append(
            NodeInfo(
                id=node_id,
                cpus=cpus,
                memory_bytes=_memory_bytes(files, base + "/meminfo", node_id),
                distances=_distances(files, base + "/distance", node_ids),
            )
        )
    return nodes


def _node_ids(files: SysfsFiles) -> list[int] | None:
    online = files.read_cpuset(NODE_DIR + "/online")
    if online is not None:
        return online.ids()
    names = files.list_dir(NODE_DIR)
    if names is None:
        return None
    ids = sorted(int(m.group(1)) for name in names if (m := _NODE_NAME.fullmatch(name)))
    if not ids:
        raise HardwareDiscoveryError(f"{files.path(NODE_DIR)}: no node directories")
    return ids


def _machine_memory(files: SysfsFiles, proc: SysfsFiles) -> int:
    try:
        text = proc.require(MEMINFO)
    except HardwareDiscoveryError as err:
        why = str(err).removeprefix(proc.path(MEMINFO) + ": ")
        raise HardwareDiscoveryError(
            f"{files.path(NODE_DIR)} is missing (a kernel without NUMA), so the memory size "
            f"comes from {proc.path(MEMINFO)}: {why}"
        ) from None
    match = _PROC_MEM_TOTAL.search(text)
    if match is None:
        raise proc.error(MEMINFO, "no 'MemTotal: X kB' line", text)
    return int(match.group(1)) * 1024


def _memory_bytes(files: SysfsFiles, rel: str, node_id: int) -> int:
    text = files.read(rel)
    if text is None:
        return 0
    match = _MEM_TOTAL.search(text)
    if match is None:
        raise files.error(rel, "no 'Node N MemTotal: X kB' line", text)
    if int(match.group(1)) != node_id:
        raise files.error(rel, f"MemTotal line is not for node {node_id}", text)
    return int(match.group(2)) * 1024


def _distances(files: SysfsFiles, rel: str, node_ids: list[int]) -> dict[int, int]:
    text = files.read(rel)
    if text is None:
        return {}
    fields = text.split()
    if len(fields) != len(node_ids):
        raise files.error(rel, f"expected {len(node_ids)} distances (one per online node)", text)
    try:
        values = [int(f, 10) for f in fields]
    except ValueError:
        raise files.error(rel, "distances are not integers", text) from None
    if any(v <= 0 for v in values):
        raise files.error(rel, "distances must be positive", text)
    return dict(zip(node_ids, values, strict=True))
