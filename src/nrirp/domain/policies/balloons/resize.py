"""The resize chain: which CPUs a balloon takes when it inflates and gives back when it deflates.

Stages, as the reference runs them (``reference-balloons.md`` §5.3); each may narrow the
balloon's current CPUs and the free CPUs before handing them to the next:

1. trivial cases: all free CPUs when exactly that many are asked for, all current ones when
   the balloon is emptied (and, beyond the reference, the free CPUs narrowed to those of the
   type's ``allocatorPriority`` when enough of them are free: the tree then picks among them);
2. dynamic load (a load class with ``overloadsLevelInBalloon``): one CPU at a time, each
   round marking the picked CPU's core or L2 cache as loaded, so the next avoids it;
3. device hints: growth narrows the free CPUs to each preferred set in turn (close devices,
   then everything but each far device) while enough survive; shrinking scores the current
   CPUs by the close devices holding them and releases the lowest scores;
4. one at a time: shrinking always, growth with ``preferSpreadOnPhysicalCores``;
5. max local set: the deepest tree node holding enough CPUs, ties broken by the balloon's CPUs
   along the node's ancestors, then the free CPUs (fewer when packing, more when balancing),
   then the name (numbers in names compare as numbers); the CPU allocator then picks exactly
   that many of its free CPUs.

All sets are ``int`` bit masks. Nothing here keeps state between calls.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.domain.config.enums import CPUPriority, LoadLevel
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuallocator.index import bit_ids
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.balloons.cputree import CPUTree, Node
from nrirp.domain.topology import CacheType, Machine

DeviceSets = tuple[int, ...]
"""The CPU sets of one device: alternatives, any of which counts as close to it."""


class ResizeError(Exception):
    """The CPUs cannot be found (the message says why)."""


@attrs.frozen
class Steering:
    """What steers the CPU picks of one balloon type.

    ``close`` and ``far``: the CPU sets of the devices the type prefers to be close to and
    far from, in priority order. ``overloads``: the load levels that overload the balloon's own
    units, with the index in ``far`` of the device holding that level's loaded CPUs."""

    close: tuple[DeviceSets, ...] = ()
    far: tuple[DeviceSets, ...] = ()
    balancing: bool = False
    spread: bool = False
    priority: CPUPriority = CPUPriority.NONE
    overloads: tuple[tuple[LoadLevel, int], ...] = ()


class Resizer:
    """Runs the chain on one machine (the trees are built once)."""

    def __init__(self, machine: Machine, allocator: CPUAllocator) -> None:
        self.machine = machine
        self.allocator = allocator
        self.tree = CPUTree(machine)
        self._spread_tree: CPUTree | None = None
        self._units: dict[LoadLevel, dict[int, int]] = {}
        self._classes = {p: cpus.bits for p, cpus in allocator.priorities().items()}

    @property
    def spread_tree(self) -> CPUTree:
        if self._spread_tree is None:
            self._spread_tree = CPUTree(self.machine, spread=True)
        return self._spread_tree

    # ------------------------------------------------------------------ entry points
    def grow(self, current: int, free: int, count: int, steer: Steering) -> int:
        """``count`` CPUs of ``free`` for a balloon holding ``current``."""
        if count <= 0:
            return 0
        have = free.bit_count()
        if have < count:
            raise ResizeError(f"not enough free CPUs: {count} wanted, {have} free")
        if have == count:
            return free
        priority = steer.priority
        if priority is not CPUPriority.NONE:
            free, priority = self._prioritized(free, count, priority)
            if free.bit_count() == count:
                return free
        if steer.overloads:
            return self._grow_loaded(current, free, count, steer, priority)
        return self._grow_devices(current, free, count, steer, priority, {})

    def shrink(self, current: int, free: int, count: int, steer: Steering) -> int:
        """The ``count`` CPUs of ``current`` to give back."""
        if count <= 0:
            return 0
        have = current.bit_count()
        if have < count:
            raise ResizeError(f"cannot give back {count} CPUs: the balloon holds {have}")
        if have == count:
            return current
        return self._shrink_devices(current, free, count, steer)

    # ------------------------------------------------------------------ growth
    def _prioritized(self, free: int, count: int, priority: CPUPriority) -> tuple[int, CPUPriority]:
        """The free CPUs narrowed by the type's ``allocatorPriority``: to the CPUs of that
        priority class when enough of them are free, else to those the CPU allocator lets such
        a request have; when not even those suffice, any free CPU (a preference, not a must)."""
        wanted = free & self._classes[priority] if priority in self._classes else 0
        if wanted.bit_count() >= count:
            return wanted, priority
        usable = self.allocator.usable(CPUSet(free), priority).bits
        if usable.bit_count() >= count:
            return usable, priority
        return free, CPUPriority.NONE

    def _grow_loaded(
        self, current: int, free: int, count: int, steer: Steering, priority: CPUPriority
    ) -> int:
        loaded: dict[int, int] = {}
        candidates = self._grow_devices(current, free, count, steer, priority, loaded)
        picked = 0
        while True:
            first = candidates & -candidates
            picked |= first
            if picked.bit_count() >= count:
                return picked
            for level, index in steer.overloads:
                loaded[index] = loaded.get(index, 0) | self._unit(level, first)
            candidates = self._grow_devices(
                current | picked, free & ~picked, 1, steer, priority, loaded
            )
            if picked.bit_count() + 1 == count:
                return picked | candidates

    def _grow_devices(
        self,
        current: int,
        free: int,
        count: int,
        steer: Steering,
        priority: CPUPriority,
        loaded: Mapping[int, int],
    ) -> int:
        remaining = free
        for sets in steer.close:
            for bits in sets:
                narrowed = remaining & bits
                if narrowed.bit_count() >= count:
                    remaining = narrowed
        for index, sets in enumerate(steer.far):
            extra = loaded.get(index, 0)
            for bits in sets or (0,):
                narrowed = remaining & free & ~(bits | extra)
                if narrowed.bit_count() >= count:
                    remaining = narrowed
        if steer.spread and remaining.bit_count() > count:
            picked = 0
            for _ in range(count):
                picked |= self._grow_local(
                    self.spread_tree, current | picked, remaining & ~picked, 1, steer, priority
                )
            return picked
        tree = self.spread_tree if steer.spread else self.tree
        return self._grow_local(tree, current, remaining, count, steer, priority)

    def _grow_local(
        self,
        tree: CPUTree,
        current: int,
        free: int,
        count: int,
        steer: Steering,
        priority: CPUPriority,
    ) -> int:
        node = _choose(tree, current, free, count, grow=True, balancing=steer.balancing)
        candidates = free & node.bits
        if candidates.bit_count() == count:
            return candidates
        try:
            return self.allocator.allocate(CPUSet(candidates), count, priority=priority).bits
        except CPUAllocationError as exc:
            raise ResizeError(str(exc)) from None

    # ------------------------------------------------------------------ shrinking
    def _shrink_devices(self, current: int, free: int, count: int, steer: Steering) -> int:
        groups = len(steer.close) + len(steer.far)
        if not steer.close:
            return self._shrink_one_by_one(current, free, count, steer)
        scores: dict[int, int] = {}
        for cpu in bit_ids(current):
            bit = 1 << cpu
            score = 0
            for index, sets in enumerate(steer.close):
                weight = 1 << (groups - 1 - index)
                score += weight * sum(1 for bits in sets if bits & bit)
            scores[cpu] = score
        threshold = sorted(scores.values())[count - 1]
        sure = ties = 0
        for cpu, score in scores.items():
            if score < threshold:
                sure |= 1 << cpu
            elif score == threshold:
                ties |= 1 << cpu
        need = count - sure.bit_count()
        if need == 0:
            return sure
        return sure | self._shrink_one_by_one(ties, free | sure, need, steer)

    def _shrink_one_by_one(self, current: int, free: int, count: int, steer: Steering) -> int:
        tree = self.spread_tree if steer.spread else self.tree
        released = 0
        for _ in range(count):
            keep = current & ~released
            node = _choose(tree, keep, free | released, 1, grow=False, balancing=steer.balancing)
            held = keep & node.bits
            if held.bit_count() > 1:
                held = self.allocator.release(CPUSet(held), 1).bits
            released |= held
        return released

    # ------------------------------------------------------------------ load units
    def _unit(self, level: LoadLevel, cpu_bit: int) -> int:
        """The core (``core``) or L2 cache (``l2cache``) of one CPU."""
        units = self._units.get(level)
        if units is None:
            units = self._units[level] = {}
            machine = self.machine
            for cpu in machine.online:
                bits = machine.thread_siblings(cpu).bits
                if level is LoadLevel.L2CACHE:
                    group = machine.cache_of(cpu, 2, CacheType.UNIFIED) or machine.cache_of(
                        cpu, 2, CacheType.DATA
                    )
                    if group is not None:
                        bits = group.cpus.bits
                units[cpu] = bits
        out = 0
        for cpu in bit_ids(cpu_bit):
            out |= units.get(cpu, 1 << cpu)
        return out

    def widen(self, level: LoadLevel, bits: int) -> int:
        """``bits`` widened to whole cores or L2 caches (what a load burdens)."""
        return self._unit(level, bits) if bits else 0


# ---------------------------------------------------------------------- max local set
def _choose(
    tree: CPUTree, current: int, free: int, count: int, *, grow: bool, balancing: bool
) -> Node:
    """The node of the max-local-set stage: the deepest holding ``count`` CPUs of the pool
    (free CPUs to grow, current ones to shrink), ties broken along the ancestors by the
    current CPUs (more when growing, fewer when shrinking), then by the free CPUs (growing:
    fewer when packing, more when balancing; shrinking: fewer), then by name (ascending when
    growing, descending when shrinking)."""
    pool = free if grow else current
    depth = _deepest(tree, pool, count)
    if depth < 0:
        have = pool.bit_count()
        raise ResizeError(
            f"not enough free CPUs: {count} wanted, {have} free"
            if grow
            else f"cannot give back {count} CPUs: the balloon holds {have}"
        )
    memo: dict[int, bool] = {}

    def reaches(node: Node) -> bool:
        key = id(node)
        found = memo.get(key)
        if found is None:
            if (node.bits & pool).bit_count() < count:
                found = False
            elif node.depth == depth:
                found = True
            else:
                found = any(reaches(child) for child in node.children)
            memo[key] = found
        return found

    # by the current CPUs along the path; once none of the candidates holds any, the rest of
    # their paths holds none either and they all tie
    tied: list[Node] = [tree.root]
    for _ in range(depth):
        kids = [child for node in tied for child in node.children if reaches(child)]
        counts = [(child.bits & current).bit_count() for child in kids]
        best = max(counts) if grow else min(counts)
        tied = [child for child, n in zip(kids, counts, strict=True) if n == best]
        if grow and best == 0:
            break
    allowed = {id(node) for member in tied for node in member.path}
    tied_depth = tied[0].depth
    # then by the free CPUs along the path
    kept: list[Node] = [tree.root]
    for level in range(1, depth + 1):
        kids = [
            child
            for node in kept
            for child in node.children
            if (level > tied_depth or id(child) in allowed) and reaches(child)
        ]
        counts = [(child.bits & free).bit_count() for child in kids]
        best = max(counts) if grow and balancing else min(counts)
        kept = [child for child, n in zip(kids, counts, strict=True) if n == best]
    if grow:
        return min(kept, key=lambda n: n.order)
    return max(kept, key=lambda n: n.order)


def _deepest(tree: CPUTree, pool: int, count: int) -> int:
    """The depth of the deepest node holding ``count`` CPUs of ``pool`` (-1 for none)."""
    sizes = tree.largest_at_depth
    limit = max((d for d, size in enumerate(sizes) if size >= count), default=-1)
    best = -1
    stack = [tree.root]
    while stack:
        node = stack.pop()
        if (node.bits & pool).bit_count() < count:
            continue
        if node.depth > best:
            best = node.depth
            if best == limit:
                break
        stack.extend(reversed(node.children))
    return best
