"""Balloons and their members: the mutable bookkeeping of the policy.

A balloon is an instance of a :class:`~nrirp.domain.policies.balloons.catalog.BalloonKind`,
named ``<type>[<index>]``. A composite balloon holds component balloons (of the types its type
lists) and no CPUs of its own: its CPUs are the union of theirs. Only top-level balloons hold
containers.
"""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from nrirp.domain.policies.balloons.catalog import BalloonKind
from nrirp.domain.topology import MemoryType


@attrs.define(eq=False)
class Member:
    """A container in a balloon and what it asked for."""

    container_id: str
    pod_id: str
    namespace: str
    label: str
    """``namespace/pod/container`` for messages and metrics."""
    request: int
    """CPU request in mCPU: what the balloon is sized by."""
    group: str | None = None
    """The expanded ``groupBy`` key (``""`` when it could not be expanded: counted under
    that name, as the reference does); ``None`` when the type groups nothing."""
    group_resolved: bool = True
    """False when ``groupBy`` could not be expanded: the container joins no group."""
    hide_hyperthreads: bool | None = None
    """The ``hide-hyperthreads`` annotation, overriding the type."""
    memory_limit: int = 0
    memory_types: frozenset[MemoryType] | None = None
    """The ``memory-type`` annotation, overriding the type's ``memoryTypes``."""
    memory_preserve: bool = False


@attrs.define(eq=False, repr=False)
class Balloon:
    """One balloon. ``cpus`` are its own CPUs (for a composite, its components' together),
    ``shared`` the idle CPUs it is offered (``shareIdleCPUsInSame``)."""

    kind: BalloonKind
    index: int
    cpus: int = 0
    shared: int = 0
    parent: Balloon | None = None
    components: list[Balloon] = attrs.field(factory=list)
    members: dict[str, Member] = attrs.field(factory=dict)
    pods: dict[str, int] = attrs.field(factory=dict)
    namespaces: dict[str, int] = attrs.field(factory=dict)
    groups: dict[str, int] = attrs.field(factory=dict)
    requested: int = 0
    """The requests of its members together, in mCPU."""
    _ordered: tuple[str, ...] | None = attrs.field(default=None, init=False)

    @property
    def name(self) -> str:
        return f"{self.kind.name}[{self.index}]"

    @property
    def is_composite(self) -> bool:
        return bool(self.components)

    @property
    def top(self) -> Balloon:
        """The top-level balloon this one belongs to (itself when it is one)."""
        node = self
        while node.parent is not None:
            node = node.parent
        return node

    def walk(self) -> Iterator[Balloon]:
        """This balloon and its components (recursively), parents first."""
        yield self
        for component in self.components:
            yield from component.walk()

    def leaves(self) -> Iterator[Balloon]:
        """The balloons that hold CPUs of their own: itself, or its components' leaves."""
        if not self.components:
            yield self
            return
        for component in self.components:
            yield from component.leaves()

    def ordered(self) -> tuple[str, ...]:
        """Its members' container ids in a canonical order (by id): what is done member by
        member does not depend on the order they joined in, so a restored balloon, whose
        members are taken back in another order, goes on exactly as before."""
        if self._ordered is None:
            self._ordered = tuple(sorted(self.members))
        return self._ordered

    def add(self, member: Member) -> None:
        self._ordered = None
        self.members[member.container_id] = member
        self.pods[member.pod_id] = self.pods.get(member.pod_id, 0) + 1
        self.namespaces[member.namespace] = self.namespaces.get(member.namespace, 0) + 1
        if member.group is not None:
            self.groups[member.group] = self.groups.get(member.group, 0) + 1
        self.requested += member.request

    def remove(self, container_id: str) -> Member | None:
        member = self.members.pop(container_id, None)
        if member is None:
            return None
        self._ordered = None
        _decrement(self.pods, member.pod_id)
        _decrement(self.namespaces, member.namespace)
        if member.group is not None:
            _decrement(self.groups, member.group)
        self.requested -= member.request
        return member

    def __repr__(self) -> str:
        return f"Balloon({self.name})"


def _decrement(counts: dict[str, int], key: str) -> None:
    left = counts.get(key, 0) - 1
    if left > 0:
        counts[key] = left
    else:
        counts.pop(key, None)
