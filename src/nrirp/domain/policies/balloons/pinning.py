"""What the members of a balloon run with (``reference-balloons.md`` §6, §7).

A member's cpuset is the balloon's CPUs plus the idle CPUs it is offered (only the lowest
thread of each core with ``hide-hyperthreads``), its CPU shares follow its request, its memory
nodes are its zone (:mod:`~nrirp.domain.policies.balloons.memory`). With ``pinCPU`` off no
cpuset or shares are set; with the type's ``pinMemory`` off no memory nodes.
"""

from __future__ import annotations

import attrs

from nrirp.domain.cpuallocator.index import bit_ids
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import shares_from_millis
from nrirp.domain.policies.balloons.balloon import Balloon, Member
from nrirp.domain.policies.balloons.memory import MemoryPlacer, Placed
from nrirp.domain.topology import Machine


@attrs.frozen
class Target:
    """What one container should run with (``None``: leave that setting alone)."""

    cpus: CPUSet | None
    mems: CPUSet | None
    shares: int | None


@attrs.frozen
class MemoryRecord:
    """A member's accounted memory: its zone, the zone it asked for, and when (allocation
    order, which decides ties when the allocator has to widen someone)."""

    zone: int
    preferred: int
    order: int
    size: int = -1
    """The bytes accounted (-1: not known, as in a saved record before it is restored)."""


class Pinning:
    """Targets of balloon members, and the memory placements behind them."""

    def __init__(self, machine: Machine, memory: MemoryPlacer, *, pin_cpu: bool) -> None:
        self.machine = machine
        self.memory = memory
        self.pin_cpu = pin_cpu
        self.records: dict[str, MemoryRecord] = {}
        self._order = 0
        self._hidden: dict[int, int] = {}
        self._sets: dict[int, CPUSet] = {}

    # ------------------------------------------------------------------ CPUs
    def cpus_of(self, balloon: Balloon, member: Member) -> CPUSet | None:
        if not self.pin_cpu:
            return None
        pinnable = balloon.cpus | balloon.shared
        if not pinnable:
            return None
        hide = member.hide_hyperthreads
        if hide is None:
            hide = balloon.kind.hide_hyperthreads
        return self.node_set(self.hidden(pinnable) if hide else pinnable)

    def node_set(self, bits: int) -> CPUSet:
        """One :class:`CPUSet` object per value (members of a balloon share it)."""
        found = self._sets.get(bits)
        if found is None:
            if len(self._sets) >= 4096:
                self._sets.clear()
            found = self._sets[bits] = CPUSet(bits)
        return found

    def hidden(self, cpus: int) -> int:
        """The lowest thread of each core among ``cpus``."""
        found = self._hidden.get(cpus)
        if found is None:
            found = 0
            for cpu in bit_ids(cpus):
                siblings = self.machine.thread_siblings(cpu).bits & cpus
                found |= siblings & -siblings
            if len(self._hidden) > 4096:
                self._hidden.clear()
            self._hidden[cpus] = found
        return found

    def shares_of(self, member: Member) -> int | None:
        if not self.pin_cpu or member.request <= 0:
            return None
        return shares_from_millis(member.request)

    # ------------------------------------------------------------------ memory
    def place(self, balloon: Balloon, member: Member) -> tuple[int | None, dict[str, CPUSet]]:
        """The member's memory nodes (``None``: not pinned) and other owners moved by it."""
        if not balloon.kind.pin_memory or member.memory_preserve:
            return None, {}
        pinnable = balloon.cpus | balloon.shared
        if not pinnable:
            return None, {}
        types = self.memory.types(member.memory_types or balloon.kind.memory_types)
        zone = self.memory.zone(self.memory.nodes_of(pinnable), types)
        record = self.records.get(member.container_id)
        if (
            record is not None
            and zone & ~record.preferred == 0
            and record.size == member.memory_limit
        ):
            return record.zone, {}
        placed, moved = self.memory.place(member.container_id, member.memory_limit, zone, types)
        self._note(member.container_id, placed, member.memory_limit)
        for owner, widened in moved.items():
            self._moved(owner, widened.bits)
        return placed.zone, moved

    def _note(self, owner: str, placed: Placed, size: int) -> None:
        if not placed.accounted:
            self.records.pop(owner, None)
            return
        allocation = self.memory.allocator.allocation(owner)
        preferred = allocation.preferred.bits if allocation is not None else placed.zone
        self._order += 1
        self.records[owner] = MemoryRecord(placed.zone, preferred, self._order, size)

    def _moved(self, owner: str, zone: int) -> None:
        record = self.records.get(owner)
        if record is not None:
            self.records[owner] = attrs.evolve(record, zone=zone)

    def release(self, owner: str) -> dict[str, CPUSet]:
        """Forget the owner's memory; returns the owners whose zones narrowed back."""
        self.records.pop(owner, None)
        moved = self.memory.release(owner)
        for other, zone in moved.items():
            self._moved(other, zone.bits)
        return moved

    def preserve(self, owner: str, size: int, mems: CPUSet | None) -> None:
        self.memory.preserve(owner, size, mems)

    @property
    def order(self) -> int:
        """The order number of the last memory allocation."""
        return self._order

    def restore(self, owner: str, record: MemoryRecord) -> None:
        """Take back a saved record whose allocation was restored (callers go by ``order``,
        which only ranks the allocations: the numbers after a restart may differ from those
        a policy that never restarted would give, their order does not)."""
        self.records[owner] = record
        self._order = max(self._order, record.order)

    # ------------------------------------------------------------------ targets
    def target(self, balloon: Balloon, member: Member) -> Target:
        mems, _ = self.place(balloon, member)
        return Target(
            cpus=self.cpus_of(balloon, member),
            mems=None if mems is None else CPUSet(mems),
            shares=self.shares_of(member),
        )
