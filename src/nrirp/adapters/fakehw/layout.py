"""Resolving a spec into a layout: every present CPU, node and cache with its final ids.

The layout is what both the sysfs writer and the expected machine are made from, so the
spec's meaning is defined in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import attrs

from nrirp.adapters.fakehw.spec import (
    CacheScope,
    CompactTopology,
    ExplicitTopology,
    FrequencySpec,
    MachineSpec,
    Numbering,
)
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
    nearest: int | None = None  # for memory-only nodes
    nearest_distance: int = 10  # distance to ``nearest`` when distances are computed
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
class Layout:
    """A resolved machine; ``cpus`` holds every present CPU, online or not."""

    name: str
    cpus: tuple[CpuLayout, ...]
    nodes: tuple[NodeLayout, ...]
    caches: tuple[CacheLayout, ...]
    distances: dict[int, dict[int, int]]
    online: CPUSet
    isolated: CPUSet

    @property
    def present(self) -> CPUSet:
        return CPUSet.from_ids(c.id for c in self.cpus)

    @property
    def declared_memory_types(self) -> dict[int, MemoryType]:
        """Memory types the spec states (sysfs cannot carry them: discovery gets them as config)."""
        return {n.id: n.declared_type for n in self.nodes if n.declared_type is not None}


class _Problems:
    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, path: str, message: str) -> None:
        self.items.append(f"{message} @ {path}")


def resolve(spec: MachineSpec, source: str = "<spec>") -> Layout:
    """Resolve ``spec``; raises MachineSpecError listing every problem found."""
    from nrirp.adapters.fakehw.loading import MachineSpecError

    problems = _Problems()
    if (spec.compact is None) == (spec.explicit is None):
        problems.add("$", "exactly one of 'compact' and 'explicit' must be given")
        raise MachineSpecError(f"{source}: invalid machine spec:\n  " + problems.items[0])
    if spec.compact is not None:
        cpus, nodes = _compact(spec.compact, problems)
    else:
        assert spec.explicit is not None
        cpus, nodes = _explicit(spec.explicit, problems)
    layout = None
    if not problems.items:
        layout = _finish(spec, cpus, nodes, problems)
    if problems.items or layout is None:
        raise MachineSpecError(f"{source}: invalid machine spec:\n  " + "\n  ".join(problems.items))
    return layout


# ------------------------------------------------------------------------- compact form


def _compact(t: CompactTopology, problems: _Problems) -> tuple[list[CpuLayout], list[NodeLayout]]:
    for name in ("packages", "dies_per_package", "nodes_per_die", "cores_per_node"):
        if getattr(t, name) < 1:
            problems.add(f"$.compact.{name}", f"must be at least 1, got {getattr(t, name)}")
    for name in ("threads_per_core", "cores_per_cluster", "efficient_cores_per_cluster"):
        if getattr(t, name) < 1:
            problems.add(f"$.compact.{name}", f"must be at least 1, got {getattr(t, name)}")
    if t.efficient_cores_per_node < 0:
        problems.add("$.compact.efficient_cores_per_node", "must not be negative")
    _check_memory(t.memory_per_node, "$.compact.memory_per_node", problems)
    total = t.packages * t.dies_per_package * t.nodes_per_die
    p_cores = total * t.cores_per_node
    e_cores = total * max(t.efficient_cores_per_node, 0)
    n_cpus = p_cores * t.threads_per_core + e_cores
    if problems.items:
        return [], []
    if n_cpus > 65536:
        problems.add("$.compact", f"{n_cpus} CPUs is more than the 65536 supported")
        return [], []
    ids: list[int] = list(range(n_cpus))
    if t.cpu_ids is not None:
        if len(t.cpu_ids) != n_cpus:
            problems.add(
                "$.compact.cpu_ids", f"has {len(t.cpu_ids)} ids but the machine has {n_cpus} CPUs"
            )
            return [], []
        ids = t.cpu_ids.ids()

    def cpu_id(dense: int) -> int:
        return ids[dense]

    cpus: list[CpuLayout] = []
    nodes: list[NodeLayout] = []
    g_p = g_e = 0  # global P-core / E-core index
    for pkg in range(t.packages):
        core_id = cluster_id = 0
        for die in range(t.dies_per_package):
            for local_node in range(t.nodes_per_die):
                node_id = (pkg * t.dies_per_package + die) * t.nodes_per_die + local_node
                node_cpus: list[int] = []
                for kind, count, per_cluster in (
                    (CoreType.PERFORMANCE, t.cores_per_node, t.cores_per_cluster),
                    (CoreType.EFFICIENT, t.efficient_cores_per_node, t.efficient_cores_per_cluster),
                ):
                    for i in range(count):
                        if i and i % per_cluster == 0:
                            cluster_id += 1
                        if kind is CoreType.PERFORMANCE:
                            threads = [
                                g_p * t.threads_per_core + th
                                if t.numbering is Numbering.SMT_ADJACENT
                                else th * p_cores + g_p
                                for th in range(t.threads_per_core)
                            ]
                            g_p += 1
                            freq = t.frequency
                        else:
                            threads = [p_cores * t.threads_per_core + g_e]
                            g_e += 1
                            freq = t.efficient_frequency
                        for dense in threads:
                            cpus.append(
                                CpuLayout(
                                    cpu_id(dense),
                                    pkg,
                                    die,
                                    cluster_id,
                                    core_id,
                                    node_id,
                                    kind,
                                    freq,
                                )
                            )
                            node_cpus.append(cpu_id(dense))
                        core_id += 1
                    if count:
                        cluster_id += 1
                nodes.append(
                    NodeLayout(
                        id=node_id,
                        cpus=CPUSet.from_ids(node_cpus),
                        memory_bytes=t.memory_per_node,
                        package=pkg,
                        die=die,
                    )
                )
    return cpus, nodes


# ------------------------------------------------------------------------ explicit form


def _explicit(t: ExplicitTopology, problems: _Problems) -> tuple[list[CpuLayout], list[NodeLayout]]:
    cpus: list[CpuLayout] = []
    nodes: list[NodeLayout] = []
    owner: dict[int, str] = {}
    node_paths: dict[int, str] = {}
    core_paths: dict[tuple[int, int], str] = {}
    if not t.nodes:
        problems.add("$.explicit.nodes", "at least one node is needed")
    for n_index, node in enumerate(t.nodes):
        npath = f"$.explicit.nodes[{n_index}]"
        if node.id in node_paths:
            problems.add(
                f"{npath}.id", f"node {node.id} is already defined at {node_paths[node.id]}"
            )
        node_paths[node.id] = npath
        for name in ("id", "package", "die"):
            if getattr(node, name) < 0:
                problems.add(f"{npath}.{name}", f"must not be negative, got {getattr(node, name)}")
        _check_memory(node.memory, f"{npath}.memory", problems)
        if not node.cores:
            problems.add(f"{npath}.cores", "a CPU node needs at least one core")
        node_cpus = CPUSet()
        for c_index, core in enumerate(node.cores):
            cpath = f"{npath}.cores[{c_index}]"
            key = (node.package, core.id)
            if core.id < 0:
                problems.add(f"{cpath}.id", f"must not be negative, got {core.id}")
            if key in core_paths:
                problems.add(
                    f"{cpath}.id",
                    f"core {core.id} of package {node.package} is already defined at "
                    f"{core_paths[key]}",
                )
            core_paths[key] = cpath
            if not core.cpus:
                problems.add(f"{cpath}.cpus", "a core needs at least one CPU")
            for cpu in core.cpus:
                if cpu in owner:
                    problems.add(f"{cpath}.cpus", f"cpu {cpu} already belongs to {owner[cpu]}")
                owner[cpu] = cpath
            cluster = core.id if core.cluster is None else core.cluster
            if cluster < 0:
                problems.add(f"{cpath}.cluster", f"must not be negative, got {cluster}")
            default = t.efficient_frequency if core.type is CoreType.EFFICIENT else t.frequency
            freq = default if core.frequency is None else core.frequency
            for cpu in core.cpus:
                cpus.append(
                    CpuLayout(
                        cpu, node.package, node.die, cluster, core.id, node.id, core.type, freq
                    )
                )
            node_cpus |= core.cpus
        nodes.append(
            NodeLayout(
                id=node.id,
                cpus=node_cpus,
                memory_bytes=node.memory,
                package=node.package,
                die=node.die,
            )
        )
    clusters: dict[tuple[int, int], tuple[int, str]] = {}
    for record in cpus:
        where = clusters.setdefault(
            (record.package, record.cluster), (record.die, owner[record.id])
        )
        if where[0] != record.die:
            problems.add(
                owner[record.id] + ".cluster",
                f"cluster {record.cluster} of package {record.package} is on die {where[0]} "
                f"at {where[1]}, this core is on die {record.die}",
            )
    return cpus, nodes


# ------------------------------------------------------------------------- common parts


def _finish(
    spec: MachineSpec, cpus: list[CpuLayout], cpu_nodes: list[NodeLayout], problems: _Problems
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
        _check_memory(m.memory, f"{path}.memory", problems)
        if m.nearest is not None and m.nearest not in {n.id for n in cpu_nodes}:
            problems.add(f"{path}.nearest", f"{m.nearest} is not a node with CPUs")
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
                nearest=m.nearest,
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
    kinds = [(c.level, c.type) for c in spec.caches]
    for index, kind in enumerate(kinds):
        if kinds.index(kind) != index:
            problems.add(f"$.caches[{index}]", f"L{kind[0]} {kind[1].value} is listed twice")
    if problems.items:
        return None
    distances = _distances(spec, nodes, problems)
    return Layout(
        name=spec.name,
        cpus=tuple(cpus),
        nodes=tuple(nodes),
        caches=tuple(_caches(spec, cpus, nodes)),
        distances=distances,
        online=online,
        isolated=spec.isolated,
    )


def _check_memory(value: int, path: str, problems: _Problems) -> None:
    if value % 1024:
        problems.add(path, f"must be a multiple of 1K (sysfs reports kB), got {value}")


def _distances(
    spec: MachineSpec, nodes: list[NodeLayout], problems: _Problems
) -> dict[int, dict[int, int]]:
    ids = [n.id for n in nodes]
    if spec.distances is not None:
        matrix = spec.distances
        if len(matrix) != len(ids) or any(len(row) != len(ids) for row in matrix):
            problems.add("$.distances", f"must be a {len(ids)}x{len(ids)} matrix (nodes {ids})")
            return {}
        for i, row in enumerate(matrix):
            for j, value in enumerate(row):
                ok = value == 10 if i == j else 10 < value <= 255
                if not ok:
                    want = "10 on the diagonal" if i == j else "in 11..255 off the diagonal"
                    problems.add(f"$.distances[{i}][{j}]", f"must be {want}, got {value}")
        result = {a: dict(zip(ids, matrix[i], strict=True)) for i, a in enumerate(ids)}
        cpu_ids = [n.id for n in nodes if n.cpus]
        for n in nodes:
            if n.cpus or n.nearest is None:
                continue
            closest = min(cpu_ids, key=lambda c: (result[c][n.id], result[n.id][c], c))
            if closest != n.nearest:
                problems.add(
                    "$.distances",
                    f"node {n.id} is declared nearest to node {n.nearest} but the matrix puts "
                    f"node {closest} closest",
                )
        return result
    by_id = {n.id: n for n in nodes}

    def cpu_distance(a: NodeLayout, b: NodeLayout) -> int:
        if a.id == b.id:
            return 10
        if a.package != b.package:
            return 21
        return 11 if a.die == b.die else 12

    def distance(a: NodeLayout, b: NodeLayout) -> int:
        if a.id == b.id:
            return 10
        anchor_a = by_id[a.nearest] if a.nearest is not None else a
        anchor_b = by_id[b.nearest] if b.nearest is not None else b
        base = 10 if anchor_a.id == anchor_b.id else cpu_distance(anchor_a, anchor_b)
        return min(base + a.nearest_distance - 10 + b.nearest_distance - 10, 255)

    return {a.id: {b.id: distance(a, b) for b in nodes} for a in nodes}


_SCOPE_KEYS: dict[CacheScope, Callable[[CpuLayout], Hashable]] = {
    CacheScope.CORE: lambda c: (c.package, c.core),
    CacheScope.CLUSTER: lambda c: (c.package, c.cluster),
    CacheScope.NODE: lambda c: c.node,
    CacheScope.DIE: lambda c: (c.package, c.die),
    CacheScope.PACKAGE: lambda c: c.package,
}


def _caches(spec: MachineSpec, cpus: list[CpuLayout], nodes: list[NodeLayout]) -> list[CacheLayout]:
    out = []
    for level in spec.caches:
        key_of = _SCOPE_KEYS[level.shared_by]
        groups: dict[Hashable, list[CpuLayout]] = {}
        for cpu in cpus:
            groups.setdefault(key_of(cpu), []).append(cpu)
        ordered = sorted(groups.values(), key=lambda members: members[0].id)
        for cache_id, members in enumerate(ordered):
            efficient = all(c.core_type is CoreType.EFFICIENT for c in members)
            size = level.size
            if efficient and level.efficient_size is not None:
                size = level.efficient_size
            out.append(
                CacheLayout(
                    level=level.level,
                    type=level.type,
                    id=cache_id,
                    cpus=CPUSet.from_ids(c.id for c in members),
                    size_bytes=size,
                )
            )
    return out
