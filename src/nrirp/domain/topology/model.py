"""The machine's hardware topology as immutable values.

Ids follow Linux: CPU ids may be sparse; core ids repeat per package (a core is identified by
``(package_id, core_id)``); die and cluster ids are per package; NUMA node and cache ids are global
(cache ids are unique per level and type).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

from nrirp.domain.cpuset import EMPTY, CPUSet


class MemoryType(enum.Enum):
    """Kind of memory a NUMA node holds."""

    DRAM = "dram"
    PMEM = "pmem"
    HBM = "hbm"


class CoreType(enum.Enum):
    """The kind the kernel gives a core; ``PERFORMANCE`` on machines that mark no kinds.

    Hybrid parts list their P-cores and E-cores (``cpu_core``/``cpu_atom``). Where the kernel
    marks some cores as performance cores and leaves others out of every list, those others are
    ``NONE`` (no kind), so "performance next to no kind" can be told apart from a machine that
    marks nothing.
    """

    PERFORMANCE = "performance"
    EFFICIENT = "efficient"
    NONE = "none"


class CacheType(enum.Enum):
    DATA = "data"
    INSTRUCTION = "instruction"
    UNIFIED = "unified"


@attrs.frozen
class CPU:
    """One online hardware thread and its place in the topology."""

    id: int
    package_id: int
    die_id: int
    cluster_id: int
    core_id: int
    node_id: int
    core_type: CoreType = CoreType.PERFORMANCE
    base_frequency_khz: int | None = None
    max_frequency_khz: int | None = None
    epp: str | None = None


@attrs.frozen
class CacheGroup:
    """A cache instance and the CPUs sharing it."""

    level: int
    type: CacheType
    id: int
    cpus: CPUSet
    size_bytes: int | None = None


@attrs.frozen
class Core:
    """A physical core: its hardware threads."""

    package_id: int
    id: int
    cpus: CPUSet
    core_type: CoreType = CoreType.PERFORMANCE


@attrs.frozen
class Cluster:
    package_id: int
    die_id: int
    id: int
    cpus: CPUSet


@attrs.frozen
class Die:
    package_id: int
    id: int
    cpus: CPUSet
    nodes: CPUSet


@attrs.frozen
class Package:
    """A socket."""

    id: int
    cpus: CPUSet
    nodes: CPUSet
    dies: tuple[int, ...]


@attrs.frozen
class NumaNode:
    """A NUMA node; ``cpus`` is empty for memory-only (PMEM, HBM, CXL) nodes."""

    id: int
    cpus: CPUSet
    memory_bytes: int
    memory_type: MemoryType = MemoryType.DRAM
    distances: Mapping[int, int] = attrs.field(factory=dict)

    @property
    def has_cpus(self) -> bool:
        return bool(self.cpus)


class TopologyError(ValueError):
    """Raised for an inconsistent machine description."""


def _frozen_map(value: Mapping[int, object]) -> dict[int, object]:
    return dict(sorted(value.items()))


@attrs.frozen(eq=True, hash=False)
class Machine:
    """A complete hardware topology.

    Build it through :func:`Machine.build`, which derives packages, dies, clusters and cores
    from the per-CPU records so that they can never disagree.
    """

    cpus: Mapping[int, CPU]
    nodes: Mapping[int, NumaNode]
    caches: tuple[CacheGroup, ...]
    isolated: CPUSet
    packages: Mapping[int, Package]
    dies: Mapping[tuple[int, int], Die]
    clusters: Mapping[tuple[int, int], Cluster]
    cores: Mapping[tuple[int, int], Core]
    online: CPUSet
    _caches_by_cpu: Mapping[int, tuple[CacheGroup, ...]] = attrs.field(
        init=False, eq=False, repr=False
    )

    def __attrs_post_init__(self) -> None:
        index: dict[int, list[CacheGroup]] = {}
        for group in self.caches:
            for cpu_id in group.cpus:
                index.setdefault(cpu_id, []).append(group)
        object.__setattr__(self, "_caches_by_cpu", {k: tuple(v) for k, v in index.items()})

    @classmethod
    def build(
        cls,
        cpus: list[CPU] | tuple[CPU, ...],
        nodes: list[NumaNode] | tuple[NumaNode, ...],
        caches: list[CacheGroup] | tuple[CacheGroup, ...] = (),
        isolated: CPUSet = EMPTY,
    ) -> Machine:
        by_id = {c.id: c for c in sorted(cpus, key=lambda c: c.id)}
        if len(by_id) != len(cpus):
            raise TopologyError("duplicate CPU ids")
        online = CPUSet.from_ids(by_id)
        node_map = {n.id: n for n in sorted(nodes, key=lambda n: n.id)}
        for c in by_id.values():
            if c.node_id not in node_map:
                raise TopologyError(f"cpu {c.id} is on unknown NUMA node {c.node_id}")
            if c.id not in node_map[c.node_id].cpus:
                raise TopologyError(f"cpu {c.id} is missing from node {c.node_id}'s cpu list")
        for n in node_map.values():
            extra = n.cpus - online
            if extra:
                raise TopologyError(f"node {n.id} lists cpus {extra} that are not online")
        if not isolated.issubset(online):
            raise TopologyError(f"isolated cpus {isolated - online} are not online")
        for n in node_map.values():
            unknown = sorted(set(n.distances) - set(node_map))
            if unknown:
                raise TopologyError(f"node {n.id} has distances to unknown nodes {unknown}")
        for g in caches:
            if not g.cpus.issubset(online):
                raise TopologyError(
                    f"L{g.level} {g.type.value} cache {g.id} lists cpus {g.cpus - online} "
                    "that are not online"
                )

        pkg_bits: dict[int, int] = {}
        die_bits: dict[tuple[int, int], int] = {}
        cluster_bits: dict[tuple[int, int], tuple[int, int]] = {}
        core_bits: dict[tuple[int, int], int] = {}
        core_types: dict[tuple[int, int], CoreType] = {}
        for c in by_id.values():
            bit = 1 << c.id
            pkg_bits[c.package_id] = pkg_bits.get(c.package_id, 0) | bit
            dkey = (c.package_id, c.die_id)
            die_bits[dkey] = die_bits.get(dkey, 0) | bit
            ckey = (c.package_id, c.cluster_id)
            prev = cluster_bits.get(ckey, (c.die_id, 0))
            if prev[0] != c.die_id:
                raise TopologyError(
                    f"cluster {c.cluster_id} of package {c.package_id} spans dies "
                    f"{prev[0]} and {c.die_id}"
                )
            cluster_bits[ckey] = (prev[0], prev[1] | bit)
            key = (c.package_id, c.core_id)
            core_bits[key] = core_bits.get(key, 0) | bit
            if core_types.setdefault(key, c.core_type) != c.core_type:
                raise TopologyError(f"core {key} mixes core types")

        def nodes_of(bits: int) -> CPUSet:
            return CPUSet.from_ids(n.id for n in node_map.values() if n.cpus.bits & bits)

        dies = {
            k: Die(package_id=k[0], id=k[1], cpus=CPUSet(b), nodes=nodes_of(b))
            for k, b in sorted(die_bits.items())
        }
        packages = {
            p: Package(
                id=p,
                cpus=CPUSet(b),
                nodes=nodes_of(b),
                dies=tuple(sorted(d for (pp, d) in dies if pp == p)),
            )
            for p, b in sorted(pkg_bits.items())
        }
        clusters = {
            k: Cluster(package_id=k[0], die_id=v[0], id=k[1], cpus=CPUSet(v[1]))
            for k, v in sorted(cluster_bits.items())
        }
        cores = {
            k: Core(package_id=k[0], id=k[1], cpus=CPUSet(b), core_type=core_types[k])
            for k, b in sorted(core_bits.items())
        }
        ordered_caches = tuple(
            sorted(
                caches, key=lambda g: (g.level, g.type.value, g.id, g.cpus.min() if g.cpus else -1)
            )
        )
        return cls(
            cpus=by_id,
            nodes=node_map,
            caches=ordered_caches,
            isolated=isolated,
            packages=packages,
            dies=dies,
            clusters=clusters,
            cores=cores,
            online=online,
        )

    # ---------------------------------------------------------------- whole-machine facts
    @property
    def all_cpus(self) -> CPUSet:
        """Every online CPU."""
        return self.online

    @property
    def is_hybrid(self) -> bool:
        return any(c.core_type is CoreType.EFFICIENT for c in self.cpus.values())

    def cpus_of_type(self, core_type: CoreType) -> CPUSet:
        return CPUSet.from_ids(c.id for c in self.cpus.values() if c.core_type is core_type)

    def nodes_across_dies(self) -> dict[int, int]:
        """NUMA nodes whose CPUs are on more than one die or package, with how many (none
        when the machine has one node: a kernel without NUMA shows one, whatever the dies)."""
        if len(self.nodes) < 2:
            return {}
        cpus = self.cpus
        spans = {
            node.id: len({(cpus[i].package_id, cpus[i].die_id) for i in node.cpus})
            for node in self.nodes.values()
        }
        return {node: dies for node, dies in spans.items() if dies > 1}

    def node_across_dies(self) -> str | None:
        """The lowest NUMA node of :meth:`nodes_across_dies`, in words ("NUMA node 0 spans 2
        dies or packages"); ``None`` when there is none."""
        across = self.nodes_across_dies()
        if not across:
            return None
        node, dies = min(across.items())
        return f"NUMA node {node} spans {dies} dies or packages"

    # ---------------------------------------------------------------- CPU sets by domain
    def package_cpus(self, package_id: int) -> CPUSet:
        return self.packages[package_id].cpus

    def die_cpus(self, package_id: int, die_id: int) -> CPUSet:
        return self.dies[(package_id, die_id)].cpus

    def cluster_cpus(self, package_id: int, cluster_id: int) -> CPUSet:
        return self.clusters[(package_id, cluster_id)].cpus

    def node_cpus(self, node_id: int) -> CPUSet:
        return self.nodes[node_id].cpus

    def core_cpus(self, package_id: int, core_id: int) -> CPUSet:
        return self.cores[(package_id, core_id)].cpus

    def cache_cpus(self, level: int, cache_id: int, type: CacheType = CacheType.UNIFIED) -> CPUSet:
        for g in self.caches:
            if g.level == level and g.id == cache_id and g.type is type:
                return g.cpus
        raise KeyError((level, type.value, cache_id))

    def caches_of_cpu(self, cpu_id: int) -> tuple[CacheGroup, ...]:
        """Every cache group ``cpu_id`` belongs to, in level order."""
        return self._caches_by_cpu.get(cpu_id, ())

    def cache_of(
        self, cpu_id: int, level: int, type: CacheType = CacheType.UNIFIED
    ) -> CacheGroup | None:
        """The cache of the given level and type that ``cpu_id`` uses, if the machine has one."""
        for g in self._caches_by_cpu.get(cpu_id, ()):
            if g.level == level and g.type is type:
                return g
        return None

    def cache_groups(
        self, level: int, type: CacheType = CacheType.UNIFIED
    ) -> tuple[CacheGroup, ...]:
        return tuple(g for g in self.caches if g.level == level and g.type is type)

    def thread_siblings(self, cpu_id: int) -> CPUSet:
        """All hardware threads of ``cpu_id``'s core, itself included."""
        c = self.cpus[cpu_id]
        return self.cores[(c.package_id, c.core_id)].cpus

    def core_of(self, cpu_id: int) -> Core:
        c = self.cpus[cpu_id]
        return self.cores[(c.package_id, c.core_id)]

    def die_of(self, cpu_id: int) -> Die:
        c = self.cpus[cpu_id]
        return self.dies[(c.package_id, c.die_id)]

    def cluster_of(self, cpu_id: int) -> Cluster:
        c = self.cpus[cpu_id]
        return self.clusters[(c.package_id, c.cluster_id)]

    def package_of(self, cpu_id: int) -> int:
        return self.cpus[cpu_id].package_id

    def node_of(self, cpu_id: int) -> int:
        return self.cpus[cpu_id].node_id

    def dies_of_package(self, package_id: int) -> tuple[Die, ...]:
        return tuple(self.dies[(package_id, d)] for d in self.packages[package_id].dies)

    def nodes_of_die(self, package_id: int, die_id: int) -> tuple[NumaNode, ...]:
        return tuple(self.nodes[n] for n in self.dies[(package_id, die_id)].nodes)

    def nodes_of_package(self, package_id: int) -> tuple[NumaNode, ...]:
        return tuple(self.nodes[n] for n in self.packages[package_id].nodes)

    # ---------------------------------------------------------------- memory
    def memory_bytes(self, node_id: int) -> int:
        return self.nodes[node_id].memory_bytes

    def memory_type(self, node_id: int) -> MemoryType:
        return self.nodes[node_id].memory_type

    def nodes_of_type(self, memory_type: MemoryType) -> CPUSet:
        return CPUSet.from_ids(n.id for n in self.nodes.values() if n.memory_type is memory_type)

    def memory_by_type(self) -> dict[MemoryType, int]:
        out: dict[MemoryType, int] = {}
        for n in self.nodes.values():
            out[n.memory_type] = out.get(n.memory_type, 0) + n.memory_bytes
        return out

    @property
    def cpu_nodes(self) -> CPUSet:
        """Nodes that have CPUs."""
        return CPUSet.from_ids(n.id for n in self.nodes.values() if n.cpus)

    @property
    def memory_only_nodes(self) -> CPUSet:
        return CPUSet.from_ids(n.id for n in self.nodes.values() if not n.cpus)

    # ---------------------------------------------------------------- distances
    def distance(self, a: int, b: int) -> int:
        """Distance between nodes ``a`` and ``b`` (10 for local, 20 for remote when unknown)."""
        d = self.nodes[a].distances.get(b)
        if d is None:
            return 10 if a == b else 20
        return d

    def distance_matrix(self) -> dict[int, dict[int, int]]:
        """``matrix[a][b]``: distance from node ``a`` to ``b`` as read (may be asymmetric)."""
        return {a: {b: self.distance(a, b) for b in self.nodes} for a in self.nodes}

    def closest_cpu_nodes(self) -> dict[int, int]:
        """For every memory-only node, the CPU-bearing node closest to it (lowest id on
        ties)."""
        return {n: self.closest_cpu_node(n) for n in self.nodes if not self.nodes[n].cpus}

    def nodes_by_distance(self, node_id: int) -> list[int]:
        """All nodes ordered by distance from ``node_id`` (itself first), ties by id."""
        return sorted(self.nodes, key=lambda n: (self.distance(node_id, n), n != node_id, n))

    def nearest_nodes(self, node_id: int, *, with_cpus: bool | None = None) -> CPUSet:
        """The other nodes at the smallest distance from ``node_id``.

        ``with_cpus`` restricts candidates to CPU-bearing (True) or memory-only (False) nodes.
        """
        cands = [
            n
            for n in self.nodes
            if n != node_id and (with_cpus is None or bool(self.nodes[n].cpus) == with_cpus)
        ]
        if not cands:
            return CPUSet()
        best = min(self.distance(node_id, n) for n in cands)
        return CPUSet.from_ids(n for n in cands if self.distance(node_id, n) == best)

    def nodes_nearest_cpu(self, cpu_id: int) -> list[int]:
        """Nodes ordered by distance from the node of ``cpu_id``."""
        return self.nodes_by_distance(self.node_of(cpu_id))

    def closest_cpu_node(self, node_id: int) -> int:
        """For a memory-only node, the closest CPU-bearing node (lowest id on ties; all of
        them: :meth:`closest_cpu_node_set`).

        For a node with CPUs, the node itself.
        """
        return self.closest_cpu_node_set(node_id).min()

    def closest_cpu_node_set(self, node_id: int) -> CPUSet:
        """For a memory-only node, every CPU-bearing node at the smallest distance from it
        (more than one when several are equally close: a CXL or PMEM node behind a socket's
        sub-NUMA nodes). Distances are compared both ways (to the node, then from it).

        For a node with CPUs, the node itself.
        """
        if self.nodes[node_id].cpus:
            return CPUSet.of(node_id)
        cands = [n for n in self.nodes if self.nodes[n].cpus]
        if not cands:
            raise TopologyError("machine has no node with CPUs")
        keys = {n: (self.distance(n, node_id), self.distance(node_id, n)) for n in cands}
        best = min(keys.values())
        return CPUSet.from_ids(n for n in cands if keys[n] == best)

    def has_symmetric_distances(self) -> bool:
        return all(
            self.distance(a, b) == self.distance(b, a) for a in self.nodes for b in self.nodes
        )
