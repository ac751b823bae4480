"""The memory zone allocator: places owners in zones of NUMA nodes and widens on overcommit."""

from __future__ import annotations

import bisect

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc.errors import MemoryAllocationError
from nrirp.domain.memalloc.ledger import UNION_LIMIT, DemandLedger, Overcommit
from nrirp.domain.memalloc.movable import Entry, MovableIndex, smallest_at_least
from nrirp.domain.memalloc.nodes import MemoryNodes
from nrirp.domain.memalloc.request import (
    MemoryAllocation,
    MemoryOffer,
    MemoryRequest,
    type_names,
)
from nrirp.domain.topology import Machine, MemoryType


@attrs.frozen
class _Placed:
    """An owner's allocation as the allocator keeps it (zones as bit masks)."""

    request: MemoryRequest
    preferred: int
    allowed: int
    zone: int
    seq: int


@attrs.frozen
class _Mover:
    size: int
    newest: int  # minus the allocation sequence number: newer allocations sort first
    owner: str
    target: int


def _entry(placed: _Placed) -> Entry:
    return (placed.request.size, -placed.seq, placed.request.owner)


class MemoryAllocator:
    """Accounts memory per owner in zones (sets of NUMA nodes) and keeps every zone within
    its capacity by widening allocations toward their nearest nodes ("dynamic memory
    relaxation"); widened owners return toward their preferred zones when memory is released.

    Every method either completes or raises :class:`MemoryAllocationError` having changed
    nothing. Results depend only on the sequence of calls (no hashing or timing effects).
    """

    def __init__(
        self, machine: Machine, *, nodes: CPUSet | None = None, union_limit: int = UNION_LIMIT
    ) -> None:
        known = CPUSet.from_ids(machine.nodes)
        usable = known if nodes is None else nodes
        if usable - known:
            raise ValueError(
                f"memory allocator: usable nodes {usable - known} are not NUMA nodes of the "
                f"machine (its nodes: {known})"
            )
        if not usable:
            raise ValueError("memory allocator: no usable NUMA node")
        self._machine = machine
        self._known = known.bits
        self._nodes = MemoryNodes(machine, usable)
        self._ledger = DemandLedger(self._nodes.node_capacity, union_limit=union_limit)
        self._placed: dict[str, _Placed] = {}
        self._widened: dict[str, None] = {}
        self._movable = MovableIndex()
        self._journal: list[tuple[str, _Placed | None]] = []
        self._seq = 0

    # ---------------------------------------------------------------- facts
    @property
    def machine(self) -> Machine:
        return self._machine

    @property
    def nodes(self) -> CPUSet:
        """The usable NUMA nodes."""
        return CPUSet(self._nodes.usable)

    def capacity(self, nodes: CPUSet, types: frozenset[MemoryType] | None = None) -> int:
        """Bytes of memory in the usable nodes of ``nodes`` (of ``types`` only, when given)."""
        bits = nodes.bits if types is None else nodes.bits & self._nodes.allowed(types)
        return self._nodes.capacity(bits)

    def usage(self, nodes: CPUSet) -> int:
        """Bytes accounted to zones that lie within ``nodes``."""
        return self._ledger.demand(nodes.bits)

    def zone_of(self, owner: str) -> CPUSet | None:
        placed = self._placed.get(owner)
        return None if placed is None else CPUSet(placed.zone)

    def allocation(self, owner: str) -> MemoryAllocation | None:
        """The owner's request, preferred zone and current zone."""
        placed = self._placed.get(owner)
        if placed is None:
            return None
        return MemoryAllocation(
            request=placed.request, preferred=CPUSet(placed.preferred), zone=CPUSet(placed.zone)
        )

    def owners(self) -> tuple[str, ...]:
        """Every owner with an allocation, in allocation order."""
        return tuple(sorted(self._placed, key=lambda o: self._placed[o].seq))

    def zones(self) -> dict[CPUSet, int]:
        """Bytes accounted per zone in use (the ledger the overcommit test works on)."""
        return {CPUSet(z): b for z, b in sorted(self._ledger.usage.items())}

    def widened(self) -> dict[str, CPUSet]:
        """Owners whose zone is wider than their preferred zone, with that zone."""
        return {o: CPUSet(self._placed[o].zone) for o in sorted(self._widened)}

    # ---------------------------------------------------------------- changes
    def offer(self, request: MemoryRequest) -> MemoryOffer:
        """What :meth:`allocate` would do for ``request``; nothing is changed.

        Raises :class:`MemoryAllocationError` when the request could not be allocated.
        """
        try:
            zone, moved = self._allocate(request)
            headroom = self._nodes.capacity(zone.bits) - self._ledger.demand(zone.bits)
            preferred = self._placed[request.owner].preferred
        finally:
            self._rollback()
        fits = zone.bits == preferred and not moved
        return MemoryOffer(nodes=zone, fits=fits, widened=moved, headroom=headroom)

    def allocate(self, request: MemoryRequest) -> tuple[CPUSet, dict[str, CPUSet]]:
        """Place ``request``; return its zone and ``{other owner: new zone}`` for every other
        owner whose zone changed. An owner that already has an allocation is re-placed (the old
        one stays if the new one fails)."""
        try:
            result = self._allocate(request)
        except BaseException:
            self._rollback()
            raise
        self._journal.clear()
        return result

    def release(self, owner: str) -> dict[str, CPUSet]:
        """Forget ``owner``'s allocation (no-op for an unknown owner); return the other owners
        whose zones changed (moved back toward their preferred zones)."""
        placed = self._placed.get(owner)
        if placed is None:
            return {}
        try:
            self._detach(owner)
            self._shrink_back()
            moved = self._moved(exclude=owner)
        except BaseException:
            self._rollback()
            raise
        self._journal.clear()
        return moved

    def restore(self, request: MemoryRequest, zone: CPUSet) -> None:
        """Account ``request`` in ``zone`` as it was before a restart: nobody is moved and the
        zone is not checked against capacity, only that it is usable and of allowed types."""
        preferred, allowed = self._admit(request)
        bad = zone.bits & ~self._nodes.usable
        if not zone or bad:
            what = (
                "is empty" if not zone else f"{zone} holds nodes {CPUSet(bad)} that are not usable"
            )
            raise MemoryAllocationError(request, f"the restored zone {what}")
        if zone.bits & ~allowed:
            raise MemoryAllocationError(
                request,
                f"the restored zone {zone} holds nodes {CPUSet(zone.bits & ~allowed)} of a type "
                f"other than {type_names(request.types)}",
                nodes=zone,
                capacity=self._nodes.capacity(zone.bits),
            )
        if request.owner in self._placed:
            self._detach(request.owner)
        self._attach(request, preferred, allowed, zone.bits)
        self._journal.clear()

    # ---------------------------------------------------------------- internals
    def _allocate(self, request: MemoryRequest) -> tuple[CPUSet, dict[str, CPUSet]]:
        preferred, allowed = self._admit(request)
        replaced = request.owner in self._placed
        if replaced:
            self._detach(request.owner)
        self._attach(request, preferred, allowed, preferred)
        if self._relax(request, preferred) or replaced:
            self._shrink_back()  # widening (or a smaller replacement) can leave room behind
        return CPUSet(self._placed[request.owner].zone), self._moved(exclude=request.owner)

    def _admit(self, request: MemoryRequest) -> tuple[int, int]:
        """The request's preferred zone and allowed nodes (bits), or an error."""
        unknown = request.nodes.bits & ~self._known
        if unknown:
            raise MemoryAllocationError(
                request, f"nodes {CPUSet(unknown)} are not NUMA nodes of this machine"
            )
        if not request.nodes:
            raise MemoryAllocationError(request, "the preferred zone is empty")
        allowed = self._nodes.allowed(request.types)
        if not allowed:
            raise MemoryAllocationError(
                request, f"no usable node holds {type_names(request.types)} memory"
            )
        preferred = request.nodes.bits & allowed
        if not preferred:
            if request.strict:
                raise MemoryAllocationError(
                    request,
                    f"strict, and no usable node of the zone holds {type_names(request.types)} "
                    "memory",
                )
            preferred = self._nodes.nearest(request.nodes.bits, allowed)
        return preferred, allowed

    def _relax(self, request: MemoryRequest, touched: int) -> bool:
        """Widen allocations until no node set containing ``touched`` is overcommitted;
        True when anything was widened."""
        widened = False
        while over := self._ledger.overcommit(touched):
            movers = self._movers(over)
            if movers is None:
                raise MemoryAllocationError(
                    request,
                    self._why_stuck(request, over),
                    nodes=CPUSet(over.nodes),
                    capacity=over.capacity,
                    demand=over.demand,
                )
            for mover in movers:
                self._move(mover.owner, mover.target)
            widened = True
        return widened

    def _movers(self, over: Overcommit) -> list[_Mover] | None:
        """The allocations to widen out of ``over.nodes``: the fewest (largest first), the last
        one the smallest that suffices; equal sizes move the newest first. None: not enough can
        move."""
        groups = []
        for zone, allowed, entries in self._movable.within(over.nodes):
            target = self._nodes.escape(zone, allowed, over.nodes)
            if target is not None:
                groups.append((target, entries))
        # usually one allocation suffices (the newcomer at least, when all fitted before it)
        best: tuple[Entry, int] | None = None
        for target, entries in groups:
            entry = smallest_at_least(entries, over.excess)
            if entry is not None and (best is None or entry < best[0]):
                best = (entry, target)
        if best is not None:
            (size, newest, owner), target = best
            return [_Mover(size, newest, owner, target)]
        pool = sorted(
            (size, newest, owner, target)
            for target, entries in groups
            for size, newest, owner in entries
        )
        sizes = [m[0] for m in pool]
        chosen: list[_Mover] = []
        remaining = over.excess
        while remaining > 0 and pool:
            at = bisect.bisect_left(sizes, remaining)
            if at == len(pool):  # nothing suffices alone: the largest (newest of equals)
                at = bisect.bisect_left(sizes, sizes[-1])
            chosen.append(_Mover(*pool.pop(at)))
            del sizes[at]
            remaining -= chosen[-1].size
        return chosen if remaining <= 0 else None

    def _why_stuck(self, request: MemoryRequest, over: Overcommit) -> str:
        nodes = CPUSet(over.nodes)
        allowed = self._nodes.allowed(request.types)
        if allowed & ~over.nodes == 0:
            return (
                f"all usable {type_names(request.types)} memory is on nodes {nodes}, "
                "which would be overcommitted"
            )
        return (
            f"nodes {nodes} would be overcommitted, and too little of what they hold can widen "
            "out of them (strict allocations never widen, others have no node of their types "
            "outside)"
        )

    def _shrink_back(self) -> None:
        """Move widened owners, smallest first (then oldest), to the narrowest step of their
        widening chain that keeps everything within capacity.

        A successful move only adds demand, so within one pass a step that an owner could not
        take stays out of reach for every owner of the same zone, types and preferred zone
        that is at least as large: those are skipped without testing.
        """
        nodes = self._nodes
        failed: dict[tuple[int, int, int, int], int] = {}  # (zone, pref, allowed, step) -> size
        order = sorted(
            self._widened, key=lambda o: (self._placed[o].request.size, self._placed[o].seq)
        )
        for owner in order:
            placed = self._placed[owner]
            size = placed.request.size
            for step in nodes.chain(placed.preferred, placed.allowed):
                if step == placed.zone or step & ~placed.zone:
                    break  # steps from here on are not narrower than the current zone
                key = (placed.zone, placed.preferred, placed.allowed, step)
                if size >= failed.get(key, size + 1):
                    continue
                if self._fits_move(placed, step):
                    self._move(owner, step)
                    break
                failed[key] = size

    def _fits_move(self, placed: _Placed, step: int) -> bool:
        """Would moving ``placed`` to the narrower ``step`` keep everything within capacity?"""
        fits = self._ledger.narrowing_fits(placed.zone, step, placed.request.size)
        if fits is None:  # a zone not in use yet: it adds new unions, so try the move
            self._move(placed.request.owner, step)
            fits = self._ledger.overcommit(step) is None
            self._undo_last()
        return fits

    # ---------------------------------------------------------------- bookkeeping
    def _attach(self, request: MemoryRequest, preferred: int, allowed: int, zone: int) -> None:
        self._seq += 1
        self._put(_Placed(request, preferred, allowed, zone, self._seq))
        self._journal.append((request.owner, None))

    def _detach(self, owner: str) -> None:
        self._journal.append((owner, self._take(owner)))

    def _move(self, owner: str, zone: int) -> None:
        placed = self._take(owner)
        self._journal.append((owner, placed))
        self._put(attrs.evolve(placed, zone=zone))

    def _put(self, placed: _Placed) -> None:
        owner = placed.request.owner
        self._placed[owner] = placed
        self._ledger.add(placed.zone, owner, placed.request.size)
        if placed.zone != placed.preferred:
            self._widened[owner] = None
        if placed.request.size and not placed.request.strict:
            self._movable.add(placed.zone, placed.allowed, _entry(placed))

    def _take(self, owner: str) -> _Placed:
        placed = self._placed.pop(owner)
        self._ledger.remove(placed.zone, owner, placed.request.size)
        self._widened.pop(owner, None)
        if placed.request.size and not placed.request.strict:
            self._movable.remove(placed.zone, placed.allowed, _entry(placed))
        return placed

    def _undo_last(self) -> None:
        owner, before = self._journal.pop()
        if owner in self._placed:
            self._take(owner)
        if before is not None:
            self._put(before)

    def _rollback(self) -> None:
        while self._journal:
            self._undo_last()

    def _moved(self, *, exclude: str) -> dict[str, CPUSet]:
        """Owners (other than ``exclude``) whose zone differs from before the journal began."""
        journal = self._journal
        if len(journal) == 1 and (journal[0][1] is None or journal[0][0] == exclude):
            return {}  # the usual allocation: one owner placed, nobody moved
        first: dict[str, _Placed | None] = {}
        for owner, before in self._journal:
            first.setdefault(owner, before)
        out: dict[str, CPUSet] = {}
        for owner in sorted(first):
            before, now = first[owner], self._placed.get(owner)
            if owner == exclude or before is None or now is None:
                continue
            if before.zone != now.zone:
                out[owner] = CPUSet(now.zone)
        return out
