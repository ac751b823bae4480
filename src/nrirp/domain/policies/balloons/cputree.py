"""The CPU tree balloons are carved from: system, package, die, NUMA node, L2 cache, core, thread.

Node names follow the reference (``reference-balloons.md`` §5.1): ``system``, ``p0``, ``p0d0``,
``p0d0n0``, ``p0d0n0$<L2 id>``, ``p0d0n0cpu<lowest thread>``, ``<core>t<cpu>``. They only break
ties; unlike the reference, which compares them as plain strings (``cpu10`` before ``cpu8``),
numbers in them compare as numbers (:attr:`Node.order`).

The spread variant (``preferSpreadOnPhysicalCores``) gives each NUMA node the children
``<numa>class<k>`` holding the k-th thread of every core of the node (threads counted by id), so
that growing one CPU at a time over a class lands each CPU on another physical core.

CPU sets are plain ``int`` bit masks (what :class:`~nrirp.domain.cpuset.CPUSet` wraps).
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterator, Mapping

import attrs

from nrirp.domain.config.enums import CPUTopologyLevel
from nrirp.domain.cpuallocator.index import bit_ids
from nrirp.domain.topology import CacheType, Machine

_NUMBERS = re.compile(r"(\d+)")


class Level(enum.IntEnum):
    """Tree levels, top first. ``CLASS`` exists only in the spread variant."""

    SYSTEM = 0
    PACKAGE = 1
    DIE = 2
    NUMA = 3
    L2CACHE = 4
    CLASS = 5
    CORE = 6
    THREAD = 7


LEVEL_OF_CONFIG = {
    CPUTopologyLevel.SYSTEM: Level.SYSTEM,
    CPUTopologyLevel.PACKAGE: Level.PACKAGE,
    CPUTopologyLevel.DIE: Level.DIE,
    CPUTopologyLevel.NUMA: Level.NUMA,
    CPUTopologyLevel.L2CACHE: Level.L2CACHE,
    CPUTopologyLevel.CORE: Level.CORE,
    CPUTopologyLevel.THREAD: Level.THREAD,
}


@attrs.define(eq=False, repr=False)
class Node:
    """One node: its CPUs (``bits``), its place (``depth`` = number of ancestors) and family."""

    name: str
    level: Level
    bits: int
    parent: Node | None = None
    children: list[Node] = attrs.field(factory=list)
    depth: int = 0
    path: tuple[Node, ...] = ()
    """The node's ancestors and itself, root first."""
    order: tuple[tuple[str, int], ...] = ()
    """The name as a sort key in which numbers compare as numbers."""

    def __attrs_post_init__(self) -> None:
        parts = _NUMBERS.split(self.name)
        self.order = tuple(
            (parts[i], int(parts[i + 1]) if i + 1 < len(parts) else -1)
            for i in range(0, len(parts), 2)
        )

    def add(self, name: str, level: Level, bits: int) -> Node:
        child = Node(name, level, bits, parent=self, depth=self.depth + 1)
        child.path = (*self.path, child)
        self.children.append(child)
        return child

    def walk(self) -> Iterator[Node]:
        """This node and its descendants, pre-order."""
        yield self
        for child in self.children:
            yield from child.walk()

    def __repr__(self) -> str:
        return f"Node({self.name!r})"


class CPUTree:
    """The tree of one machine's online CPUs (``spread``: the thread-class variant)."""

    def __init__(self, machine: Machine, *, spread: bool = False) -> None:
        self.machine = machine
        self.spread = spread
        self.root = Node("system", Level.SYSTEM, machine.online.bits)
        self.root.path = (self.root,)
        for package in machine.packages.values():
            self._package(package.id)
        self.nodes: tuple[Node, ...] = tuple(self.root.walk())
        levels: dict[Level, list[Node]] = {}
        for node in self.nodes:
            levels.setdefault(node.level, []).append(node)
        self.levels: Mapping[Level, tuple[Node, ...]] = {k: tuple(v) for k, v in levels.items()}
        sizes: dict[int, int] = {}
        for node in self.nodes:
            sizes[node.depth] = max(sizes.get(node.depth, 0), node.bits.bit_count())
        self.largest_at_depth: tuple[int, ...] = tuple(sizes[d] for d in range(len(sizes)))
        """The most CPUs a node of each depth holds (how deep a request of N CPUs can go)."""
        self._unit_of: dict[Level, dict[int, int]] = {}

    def _package(self, package_id: int) -> None:
        machine = self.machine
        pkg = self.root.add(f"p{package_id}", Level.PACKAGE, machine.packages[package_id].cpus.bits)
        for die in machine.dies_of_package(package_id):
            die_node = pkg.add(f"{pkg.name}d{die.id}", Level.DIE, die.cpus.bits)
            for numa in machine.nodes_of_die(package_id, die.id):
                bits = numa.cpus.bits & die.cpus.bits
                if bits:
                    self._numa(die_node.add(f"{die_node.name}n{numa.id}", Level.NUMA, bits))

    def _numa(self, numa: Node) -> None:
        machine = self.machine
        cores: dict[int, int] = {}  # lowest thread -> core bits
        for cpu in bit_ids(numa.bits):
            siblings = machine.thread_siblings(cpu).bits & numa.bits
            low = (siblings & -siblings).bit_length() - 1
            cores.setdefault(low, siblings)
        if self.spread:
            self._classes(numa, cores)
            return
        groups: dict[int, list[int]] = {}
        for low in sorted(cores):
            l2 = machine.cache_of(low, 2, CacheType.UNIFIED) or machine.cache_of(
                low, 2, CacheType.DATA
            )
            groups.setdefault(-1 if l2 is None else l2.id, []).append(low)
        for cache_id, lows in groups.items():
            parent = numa
            if cache_id >= 0:  # a host without L2 information gets no L2 level
                bits = 0
                for low in lows:
                    bits |= cores[low]
                parent = numa.add(f"{numa.name}${cache_id}", Level.L2CACHE, bits)
            for low in lows:
                core = parent.add(f"{numa.name}cpu{low}", Level.CORE, cores[low])
                for thread in bit_ids(cores[low]):
                    core.add(f"{core.name}t{thread}", Level.THREAD, 1 << thread)

    def _classes(self, numa: Node, cores: Mapping[int, int]) -> None:
        classes: dict[int, list[int]] = {}
        for low in sorted(cores):
            for k, thread in enumerate(bit_ids(cores[low])):
                classes.setdefault(k, []).append(thread)
        for k in sorted(classes):
            bits = 0
            for thread in classes[k]:
                bits |= 1 << thread
            node = numa.add(f"{numa.name}class{k}", Level.CLASS, bits)
            for thread in classes[k]:
                node.add(f"{node.name}t{thread}", Level.THREAD, 1 << thread)

    # ------------------------------------------------------------------ queries
    def at(self, level: Level) -> tuple[Node, ...]:
        """The nodes of ``level`` (empty when the tree has no such level)."""
        return self.levels.get(level, ())

    def reach(self, level: Level, bits: int) -> int:
        """The CPUs of every ``level`` node that overlaps ``bits``."""
        unit_of = self._unit_of.get(level)
        if unit_of is None:
            unit_of = self._unit_of[level] = {}
            for node in self.at(level):
                for cpu in bit_ids(node.bits):
                    unit_of[cpu] = node.bits
        out = 0
        for cpu in bit_ids(bits):
            out |= unit_of.get(cpu, 0)
        return out

    def names_at(self, level: Level, bits: int) -> list[str]:
        """Names of the ``level`` nodes that overlap ``bits``, in tree order."""
        return [n.name for n in self.at(level) if n.bits & bits]
