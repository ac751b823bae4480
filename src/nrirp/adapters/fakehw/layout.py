"""Resolving a spec into a layout: every present CPU, node and cache with its final ids.

The layout is what both the sysfs writer and the expected machine are made from, so the
spec's meaning is defined in one place (this module and the ones it calls).
"""

from __future__ import annotations

import attrs

from nrirp.adapters.fakehw.cache_layout import cache_layout, check_cache_levels
from nrirp.adapters.fakehw.compact import compact_layout
from nrirp.adapters.fakehw.device_layout import device_layout
from nrirp.adapters.fakehw.distances import node_distances
from nrirp.adapters.fakehw.errors import MachineSpecError
from nrirp.adapters.fakehw.explicit import explicit_layout
from nrirp.adapters.fakehw.host_checks import check_host
from nrirp.adapters.fakehw.records import (
    CacheLayout,
    CpuLayout,
    Layout,
    NodeLayout,
    Problems,
    check_memory,
)
from nrirp.adapters.fakehw.spec import MachineSpec
from nrirp.domain.cpuset import CPUSet

__all__ = ["CacheLayout", "CpuLayout", "Layout", "NodeLayout", "resolve"]


def resolve(spec: MachineSpec, source: str = "<spec>") -> Layout:
    """Resolve ``spec``; raises MachineSpecError listing every problem found."""
    problems = Problems()
    if (spec.compact is None) == (spec.explicit is None):
        problems.add("$", "exactly one of 'compact' and 'explicit' must be given")
    elif spec.compact is not None:
        cpus, nodes = compact_layout(spec.compact, problems)
    else:
        assert spec.explicit is not None
        cpus, nodes = explicit_layout(spec.explicit, problems)
    layout = None if problems.items else _finish(spec, cpus, nodes, problems)
    if problems.items or layout is None:
        raise MachineSpecError(f"{source}: invalid machine spec:\n  " + "\n  ".join(problems.items))
    return layout


def _finish(
    spec: MachineSpec, cpus: list[CpuLayout], cpu_nodes: list[NodeLayout], problems: Problems
) -> Layout | None:
    cpus.sort(key=lambda c: c.id)
    present = CPUSet.from_ids(c.id for c in cpus)
    nodes = list(cpu_nodes)
    used = {n.id for n in nodes}
    next_id = max(used) + 1
    for index, m in enumerate(spec.memory_nodes):
        path = f"$.memory_nodes[{index}]"
        node_id = m.id
        if node_id is None:
            while next_id in used:
                next_id += 1
            node_id = next_id
        elif node_id < 0 or node_id in used:
            problems.add(f"{path}.id", f"node id {node_id} is negative or already used")
        used.add(node_id)
        check_memory(m.memory, f"{path}.memory", problems)
        cpu_node_ids = {n.id for n in cpu_nodes}
        for near in m.nearest or ():
            if near not in cpu_node_ids:
                problems.add(f"{path}.nearest", f"{near} is not a node with CPUs")
        if m.nearest is not None and len(set(m.nearest)) != len(m.nearest):
            problems.add(f"{path}.nearest", f"lists a node twice: {list(m.nearest)}")
        if m.nearest is None and spec.distances is None:
            problems.add(f"{path}.nearest", "required when no distance matrix is given")
        if not 10 < m.distance <= 255:
            problems.add(f"{path}.distance", f"must be in 11..255, got {m.distance}")
        nodes.append(
            NodeLayout(
                id=node_id,
                cpus=CPUSet(),
                memory_bytes=m.memory,
                declared_type=m.type,
                nearest=tuple(sorted(m.nearest or ())),
                nearest_distance=m.distance,
            )
        )
    nodes.sort(key=lambda n: n.id)
    if not spec.offline.issubset(present):
        problems.add("$.offline", f"cpus {spec.offline - present} do not exist")
    online = present - spec.offline
    if not online:
        problems.add("$.offline", "at least one CPU must stay online")
    if not spec.isolated.issubset(online):
        problems.add("$.isolated", f"cpus {spec.isolated - online} are not online CPUs")
    for index, cache in enumerate(spec.caches):
        path = f"$.caches[{index}]"
        if cache.level < 1:
            problems.add(f"{path}.level", f"must be at least 1, got {cache.level}")
        for name in ("size", "efficient_size"):
            value = getattr(cache, name)
            if value is not None and (value <= 0 or value % 1024):
                problems.add(f"{path}.{name}", f"must be a positive multiple of 1K, got {value}")
    check_cache_levels(spec, cpus, problems)
    kinds = [(c.level, c.type) for c in spec.caches]
    for index, kind in enumerate(kinds):
        if kinds.index(kind) != index:
            problems.add(f"$.caches[{index}]", f"L{kind[0]} {kind[1].value} is listed twice")
    if not spec.numa:
        _check_without_numa(spec, problems)
    devices = device_layout(spec.devices, nodes, online, problems)
    if spec.host is not None:
        check_host(spec.host, online, problems)
    if problems.items:
        return None
    caches = cache_layout(spec, cpus)  # the hardware's, whatever the kernel makes of NUMA
    if not spec.numa:
        cpus, nodes = _without_numa(cpus, nodes)
    distances = node_distances(spec, nodes, problems)
    return Layout(
        name=spec.name,
        cpus=tuple(cpus),
        nodes=tuple(nodes),
        caches=tuple(caches),
        distances=distances,
        online=online,
        isolated=spec.isolated,
        devices=tuple(devices),
        numa=spec.numa,
        host=spec.host,
    )


def _check_without_numa(spec: MachineSpec, problems: Problems) -> None:
    if spec.memory_nodes:
        problems.add("$.memory_nodes", "a kernel without NUMA ('numa: false') has none")
    if spec.distances is not None:
        problems.add("$.distances", "a kernel without NUMA ('numa: false') has none")
    for index, device in enumerate(spec.devices):
        if device.node != -1:
            problems.add(
                f"$.devices[{index}].node",
                f"a kernel without NUMA ('numa: false') reports -1, got {device.node}",
            )


def _without_numa(
    cpus: list[CpuLayout], nodes: list[NodeLayout]
) -> tuple[list[CpuLayout], list[NodeLayout]]:
    """What a kernel without NUMA shows: one node 0 with every CPU and all the memory."""
    whole = NodeLayout(
        id=0,
        cpus=CPUSet.from_ids(c.id for c in cpus),
        memory_bytes=sum(n.memory_bytes for n in nodes),
    )
    return [attrs.evolve(c, node=0) for c in cpus], [whole]
