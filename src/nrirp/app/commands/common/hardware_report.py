"""Presenting a machine: the JSON document of ``nrirp hardware --json`` and the text summary.

The document is described key by key in ``docs/hardware.md``; bump ``FORMAT`` on any
incompatible change.
"""

from __future__ import annotations

from typing import Any

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheType, CoreType, Machine

FORMAT = "nrirp.hardware/v1"
_CACHE_SUFFIX = {CacheType.DATA: "d", CacheType.INSTRUCTION: "i", CacheType.UNIFIED: ""}


def machine_document(machine: Machine, source: str) -> dict[str, Any]:
    """The machine as JSON-ready data."""
    return {
        "format": FORMAT,
        "source": source,
        "cpus": str(machine.online),
        "isolated": str(machine.isolated),
        "hybrid": machine.is_hybrid,
        "symmetric_distances": machine.has_symmetric_distances(),
        "packages": [
            {
                "id": p.id,
                "cpus": str(p.cpus),
                "nodes": str(p.nodes),
                "dies": [
                    {"id": d.id, "cpus": str(d.cpus), "nodes": str(d.nodes)}
                    for d in machine.dies_of_package(p.id)
                ],
            }
            for p in machine.packages.values()
        ],
        "nodes": [
            {
                "id": n.id,
                "cpus": str(n.cpus),
                "memory_bytes": n.memory_bytes,
                "memory_type": n.memory_type.value,
                "distances": {str(m): machine.distance(n.id, m) for m in machine.nodes},
                "closest_cpu_node": _closest(machine, n.id),
                "closest_cpu_nodes": (
                    str(machine.closest_cpu_node_set(n.id)) if machine.cpu_nodes else None
                ),
            }
            for n in machine.nodes.values()
        ],
        "cores": [
            {"package": c.package_id, "id": c.id, "cpus": str(c.cpus), "type": c.core_type.value}
            for c in machine.cores.values()
        ],
        "clusters": [
            {"package": c.package_id, "die": c.die_id, "id": c.id, "cpus": str(c.cpus)}
            for c in machine.clusters.values()
        ],
        "caches": [
            {
                "level": g.level,
                "type": g.type.value,
                "id": g.id,
                "cpus": str(g.cpus),
                "size_bytes": g.size_bytes,
            }
            for g in machine.caches
        ],
        "cpu_details": [
            {
                "id": c.id,
                "package": c.package_id,
                "die": c.die_id,
                "cluster": c.cluster_id,
                "core": c.core_id,
                "node": c.node_id,
                "core_type": c.core_type.value,
                "base_frequency_khz": c.base_frequency_khz,
                "max_frequency_khz": c.max_frequency_khz,
                "epp": c.epp,
            }
            for c in machine.cpus.values()
        ],
    }


def _closest(machine: Machine, node_id: int) -> int | None:
    return machine.closest_cpu_node(node_id) if machine.cpu_nodes else None


def human_size(size: int) -> str:
    """Binary-prefixed size, e.g. ``16 GiB``, ``1.25 MiB``, ``512 B``."""
    value = float(size)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            text = f"{value:.2f}".rstrip("0").rstrip(".")
            return f"{text} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _cpus(cpus: CPUSet) -> str:
    return str(cpus) if cpus else "none"


def machine_summary(machine: Machine, source: str) -> str:
    """A readable multi-line description of the machine."""
    lines = [f"Hardware ({source})"]
    threads = sorted({len(c.cpus) for c in machine.cores.values()})
    lines.append(
        f"CPUs: {len(machine.online)} online ({machine.online}); "
        f"{_count(len(machine.cores), 'core')}, "
        f"threads per core: {'/'.join(map(str, threads))}; "
        f"{_count(len(machine.packages), 'package')}, {_count(len(machine.dies), 'die')}, "
        f"{_count(len(machine.clusters), 'cluster')}, {_count(len(machine.nodes), 'NUMA node')}"
    )
    lines.append(f"Isolated CPUs: {_cpus(machine.isolated)}")
    if machine.is_hybrid:
        p = machine.cpus_of_type(CoreType.PERFORMANCE)
        e = machine.cpus_of_type(CoreType.EFFICIENT)
        lines.append(f"Hybrid: P-core cpus {_cpus(p)}, E-core cpus {_cpus(e)}")
    unmarked = machine.cpus_of_type(CoreType.NONE)
    if unmarked:
        p = machine.cpus_of_type(CoreType.PERFORMANCE)
        lines.append(f"Core kinds: performance cpus {_cpus(p)}, no kind {_cpus(unmarked)}")
    for package in machine.packages.values():
        lines.append(f"Package {package.id}: cpus {package.cpus}, nodes {_cpus(package.nodes)}")
        for die in machine.dies_of_package(package.id):
            lines.append(f"  Die {die.id}: cpus {die.cpus}, nodes {_cpus(die.nodes)}")
            for node in machine.nodes_of_die(package.id, die.id):
                lines.append(
                    f"    Node {node.id}: cpus {node.cpus}, "
                    f"{human_size(node.memory_bytes)} {node.memory_type.value}"
                )
    memory_only = machine.memory_only_nodes
    if memory_only:
        lines.append("Memory-only nodes:")
        for node_id in memory_only:
            node = machine.nodes[node_id]
            line = f"  Node {node_id}: {human_size(node.memory_bytes)} {node.memory_type.value}"
            if machine.cpu_nodes:
                nearest = machine.closest_cpu_node_set(node_id)
                distance = machine.distance(nearest.min(), node_id)
                which = f"node {nearest}" if len(nearest) == 1 else f"nodes {nearest}"
                line += f", closest CPU {which} (distance {distance})"
            lines.append(line)
    lines.append("Caches: " + (_caches(machine) or "none reported"))
    lines.append("Frequencies: " + _frequencies(machine))
    lines.append(
        "Node distances"
        + ("" if machine.has_symmetric_distances() else " (asymmetric; rows are 'from')")
        + ":"
    )
    ids = list(machine.nodes)
    width = max(3, *(len(str(machine.distance(a, b))) + 1 for a in ids for b in ids))
    width = max(width, *(len(str(i)) + 1 for i in ids))
    lines.append("  " + " " * width + "".join(f"{b:>{width}}" for b in ids))
    for a in ids:
        row = "".join(f"{machine.distance(a, b):>{width}}" for b in ids)
        lines.append(f"  {a:>{width}}{row}")
    return "\n".join(lines)


def _caches(machine: Machine) -> str:
    parts = []
    kinds = sorted({(g.level, g.type) for g in machine.caches}, key=lambda k: (k[0], k[1].value))
    for level, kind in kinds:
        groups = machine.cache_groups(level, kind)
        sizes = sorted({g.size_bytes for g in groups if g.size_bytes is not None})
        size = "/".join(human_size(s) for s in sizes) if sizes else "size unknown"
        parts.append(f"L{level}{_CACHE_SUFFIX[kind]} {len(groups)} x {size}")
    return ", ".join(parts)


def _frequencies(machine: Machine) -> str:
    def ghz(values: set[int]) -> str:
        if not values:
            return "unknown"
        low, high = min(values) / 1e6, max(values) / 1e6
        return f"{low:.2f} GHz" if low == high else f"{low:.2f}-{high:.2f} GHz"

    cpus = machine.cpus.values()
    base = {c.base_frequency_khz for c in cpus if c.base_frequency_khz is not None}
    top = {c.max_frequency_khz for c in cpus if c.max_frequency_khz is not None}
    epp = sorted({c.epp for c in cpus if c.epp is not None})
    return f"base {ghz(base)}, max {ghz(top)}, EPP {', '.join(epp) if epp else 'unknown'}"
