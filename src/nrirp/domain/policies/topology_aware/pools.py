"""The pool tree: the machine's topology as nested pools of CPUs and memory nodes.

Levels, top down: a virtual ``root`` (only with more than one socket), ``socket #N``,
``die #P/N``, ``NUMA node #N`` and ``<parent>/L3 cache #N``. A level is left out where it would
add nothing: a die that is the only one of its package or that equals a cluster, a NUMA node that
is the only child of its parent (or has no memory), an L3 level unless a pool holds more than one
L3 cache. A parent holds the union of its children's CPUs and memory. CPU-less memory nodes
(PMEM, HBM, CXL) belong to the pools holding the CPUs of their closest CPU node (of each, when
several are equally close; also when that node has no memory, hence no pool, of its own);
CPU-less DRAM nodes to the top.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator

import attrs

from nrirp.domain.config.enums import BurstableLevel
from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.topology import CacheType, Machine, MemoryType


class PoolKind(enum.Enum):
    ROOT = "root"
    SOCKET = "socket"
    DIE = "die"
    NUMA = "numa node"
    L3 = "L3 cache"


class PoolTreeError(ValueError):
    """The machine cannot be arranged into pools (asymmetric distances, no CPUs)."""


@attrs.define(eq=False, repr=False)
class Pool:
    """A node of the pool tree. Identity is the object; ``id`` orders pools (pre-order)."""

    id: int
    name: str
    kind: PoolKind
    depth: int
    cpus: CPUSet
    parent: Pool | None
    children: list[Pool] = attrs.field(factory=list)
    mems: CPUSet = EMPTY
    """Memory nodes of the pool (its CPUs' nodes plus attached CPU-less nodes)."""
    levels: frozenset[BurstableLevel] = frozenset()
    """Topology levels whose unit this pool is exactly (for ``unlimitedBurstable``)."""
    packages: CPUSet = EMPTY
    ancestors: tuple[Pool, ...] = ()
    """Parent first, up to the top."""
    descendants: tuple[Pool, ...] = ()
    related: frozenset[int] = frozenset()
    """Ids of this pool, its ancestors and descendants."""

    def __repr__(self) -> str:
        return f"Pool({self.name!r})"

    def walk(self) -> Iterator[Pool]:
        """This pool and its descendants, pre-order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def hops_to(self, other: Pool) -> int | None:
        """Hops between this pool and an ancestor or descendant; ``None`` when unrelated."""
        if other.id not in self.related:
            return None
        return abs(self.depth - other.depth)


@attrs.frozen
class PoolTree:
    pools: tuple[Pool, ...]
    top: Pool

    def by_name(self, name: str) -> Pool | None:
        for pool in self.pools:
            if pool.name == name:
                return pool
        return None

    def leaves(self) -> list[Pool]:
        return [p for p in self.pools if not p.children]


def build_pool_tree(machine: Machine, available: CPUSet) -> PoolTree:
    """The pools of ``machine`` restricted to the ``available`` CPUs."""
    if not machine.has_symmetric_distances():
        raise PoolTreeError(
            "the machine's NUMA distances are asymmetric; the topology-aware policy needs "
            "symmetric distances"
        )
    if not available:
        raise PoolTreeError("no CPUs are available to the policy")
    builder = _Builder(machine, available)
    return builder.build()


class _Builder:
    def __init__(self, machine: Machine, available: CPUSet) -> None:
        self.machine = machine
        self.available = available
        self.pools: list[Pool] = []

    def add(self, name: str, kind: PoolKind, cpus: CPUSet, parent: Pool | None) -> Pool:
        pool = Pool(
            id=len(self.pools),
            name=name,
            kind=kind,
            depth=0 if parent is None else parent.depth + 1,
            cpus=cpus,
            parent=parent,
        )
        if parent is not None:
            parent.children.append(pool)
        self.pools.append(pool)
        return pool

    def build(self) -> PoolTree:
        m, avail = self.machine, self.available
        packages = [p for p in m.packages.values() if p.cpus & avail]
        root = self.add("root", PoolKind.ROOT, avail, None) if len(packages) > 1 else None
        for package in packages:
            self.add_socket(package.id, root)
        top = self.pools[0]
        self.pools = list(top.walk())  # ids in pre-order
        for index, pool in enumerate(self.pools):
            pool.id = index
        self.attach_memory(top)
        self.finish(top)
        return PoolTree(tuple(self.pools), top)

    def add_socket(self, package_id: int, root: Pool | None) -> None:
        m, avail = self.machine, self.available
        socket = self.add(
            f"socket #{package_id}", PoolKind.SOCKET, m.package_cpus(package_id) & avail, root
        )
        cluster_cpus = {c.cpus for c in m.clusters.values() if c.package_id == package_id}
        dies = [d for d in m.dies_of_package(package_id) if d.cpus & avail]
        # NUMA nodes by the pool they hang under once single or cluster-sized dies are folded
        groups: list[tuple[Pool, list[int]]] = []
        for die in dies:
            if len(dies) == 1 or die.cpus in cluster_cpus:
                parent = socket
            else:
                parent = self.add(
                    f"die #{package_id}/{die.id}", PoolKind.DIE, die.cpus & avail, socket
                )
            nodes = [
                n.id
                for n in m.nodes_of_die(package_id, die.id)
                if n.cpus & avail and n.memory_bytes > 0
            ]
            for known, ids in groups:
                if known is parent:
                    ids.extend(nodes)
                    break
            else:
                groups.append((parent, nodes))
        for parent, node_ids in groups:
            if len(node_ids) > 1:
                for node_id in node_ids:
                    node = self.add(
                        f"NUMA node #{node_id}", PoolKind.NUMA, m.node_cpus(node_id) & avail, parent
                    )
                    self.add_l3(node)
            else:
                self.add_l3_under(parent)

    def add_l3_under(self, pool: Pool) -> None:
        # the parent may already have die children (then it is not a leaf)
        if not pool.children:
            self.add_l3(pool)

    def add_l3(self, pool: Pool) -> None:
        groups = [
            g
            for g in self.machine.cache_groups(3, CacheType.UNIFIED)
            if g.cpus & pool.cpus and (g.cpus & self.available).issubset(pool.cpus)
        ]
        covered = CPUSet().union(*(g.cpus & self.available for g in groups))
        if len(groups) > 1 and covered == pool.cpus:
            for g in sorted(groups, key=lambda g: g.id):
                self.add(
                    f"{pool.name}/L3 cache #{g.id}", PoolKind.L3, g.cpus & self.available, pool
                )

    def attach_memory(self, top: Pool) -> None:
        m = self.machine
        cpu_nodes = {n.id: n for n in m.nodes.values() if n.cpus}
        extra_top: list[int] = []
        attached: dict[int, list[int]] = {}
        for node in m.nodes.values():
            if node.cpus or node.memory_bytes <= 0:
                continue
            if node.memory_type is MemoryType.DRAM:
                extra_top.append(node.id)
                continue
            # equally close to several CPU nodes: it joins each of their pools (the reference)
            closest = [
                n for n in m.closest_cpu_node_set(node.id) if cpu_nodes[n].cpus & self.available
            ]
            if not closest:
                extra_top.append(node.id)
                continue
            for cpu_node in closest:
                attached.setdefault(cpu_node, []).append(node.id)
        for pool in self.pools:
            own: list[int] = []
            behind: list[int] = []
            for node in cpu_nodes.values():
                if node.cpus & pool.cpus:
                    if node.memory_bytes > 0:
                        own.append(node.id)
                    # attached even when the CPU node has no memory of its own (its CPUs
                    # are then in its parent's pools), or that memory would be in no pool
                    behind.extend(attached.get(node.id, ()))
            ids = own + behind
            if not ids:
                # CPUs only on memory-less nodes: use the closest node that has memory
                ids = self._nearest_memory(pool.cpus)
            pool.mems = CPUSet.from_ids(ids)
        top.mems = top.mems | CPUSet.from_ids(extra_top)

    def _nearest_memory(self, cpus: CPUSet) -> list[int]:
        m = self.machine
        node = m.node_of(cpus.min())
        return [n for n in m.nodes_by_distance(node) if n != node and m.nodes[n].memory_bytes > 0][
            :1
        ]

    def finish(self, top: Pool) -> None:
        m = self.machine
        units: dict[BurstableLevel, set[CPUSet]] = {
            BurstableLevel.PACKAGE: {p.cpus & self.available for p in m.packages.values()},
            BurstableLevel.DIE: {d.cpus & self.available for d in m.dies.values()},
            BurstableLevel.NUMA: {n.cpus & self.available for n in m.nodes.values() if n.cpus},
            BurstableLevel.L3CACHE: {
                g.cpus & self.available for g in m.cache_groups(3, CacheType.UNIFIED)
            },
        }
        for pool in self.pools:
            levels = {level for level, sets in units.items() if pool.cpus in sets}
            if pool is top:
                levels.add(BurstableLevel.SYSTEM)
            pool.levels = frozenset(levels)
            pool.packages = CPUSet.from_ids(k.id for k in m.packages.values() if k.cpus & pool.cpus)
            ancestors: list[Pool] = []
            up = pool.parent
            while up is not None:
                ancestors.append(up)
                up = up.parent
            pool.ancestors = tuple(ancestors)
            pool.descendants = tuple(list(pool.walk())[1:])
            pool.related = frozenset(p.id for p in (pool, *pool.ancestors, *pool.descendants))
