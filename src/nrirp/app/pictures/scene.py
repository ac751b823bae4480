"""What a picture shows on each CPU and memory node, and what changed since the previous
picture: computed from a :class:`~nrirp.app.placement.Placement`, drawn by ``svg.py``."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from nrirp.app.placement import Group, PlacedContainer, Placement
from nrirp.domain.cpuset import CPUSet


@attrs.frozen
class CpuState:
    """One CPU: the pool or balloon it shows (``None``: free), the containers that may run
    on it (labels, in placement order), and whether it is reserved or isolated."""

    group: str | None
    containers: tuple[str, ...]
    reserved: bool
    isolated: bool

    def shown(self) -> tuple[str | None, frozenset[str]]:
        """What a change is judged by: the group and the set of containers."""
        return self.group, frozenset(self.containers)


@attrs.frozen
class MemoryUse:
    """One NUMA node: its capacity and the memory limits of the containers placed on it
    (a container's limit spread evenly over its memory nodes)."""

    capacity: int
    by_container: tuple[tuple[str, int], ...]

    @property
    def used(self) -> int:
        return sum(size for _, size in self.by_container)


@attrs.frozen
class Scene:
    """Per-CPU and per-node state of a placement, and the group of each pool or balloon."""

    cpus: dict[int, CpuState]
    memory: dict[int, MemoryUse]
    groups: dict[str, Group]
    unrestricted: tuple[str, ...]
    """Containers whose CPUs are not restricted (they may run on every CPU)."""


def _group_of_cpus(groups: Iterable[Group]) -> dict[int, str]:
    """For groups that do not nest (balloons): the smallest group holding each CPU (a
    composite balloon's component before the composite)."""
    out: dict[int, str] = {}
    for group in sorted(groups, key=lambda g: -len(g.cpus)):
        for cpu in group.cpus:
            out[cpu] = group.name
    return out


def scene_of(placement: Placement) -> Scene:
    machine = placement.machine
    users: dict[int, list[PlacedContainer]] = {cpu: [] for cpu in machine.online}
    unrestricted = []
    for c in placement.containers:
        if c.cpus is None:
            unrestricted.append(c.label)
        for cpu in placement.cpus_of(c):
            if cpu in users:
                users[cpu].append(c)
    flat = _group_of_cpus(g for g in placement.groups if not g.nested)
    nested = {g.name for g in placement.groups if g.nested}
    sizes = {g.name: len(g.cpus) for g in placement.groups}
    reserved_groups = {
        g.name for g in placement.groups if g.type == "reserved" or g.name == "reserved"
    }
    cpus: dict[int, CpuState] = {}
    for cpu, here in users.items():
        group = flat.get(cpu)
        if group is None:
            held = [c.group for c in here if c.group in nested]
            if held:  # the pool holding most of its containers; the innermost on a tie
                group = min(set(held), key=lambda g: (-held.count(g), sizes.get(g, 0), g))
        reserved = cpu in placement.reserved or group in reserved_groups
        cpus[cpu] = CpuState(group, tuple(c.label for c in here), reserved, cpu in machine.isolated)
    return Scene(
        cpus=cpus,
        memory=_memory(placement),
        groups={g.name: g for g in placement.groups},
        unrestricted=tuple(unrestricted),
    )


def _memory(placement: Placement) -> dict[int, MemoryUse]:
    machine = placement.machine
    placed: dict[int, dict[str, int]] = {n: {} for n in machine.nodes}
    for c in placement.containers:
        if not c.memory or c.mems is None or not c.mems:
            continue
        nodes = [n for n in c.mems if n in placed]
        for n in nodes:
            placed[n][c.label] = placed[n].get(c.label, 0) + c.memory // len(nodes)
    return {
        n: MemoryUse(machine.nodes[n].memory_bytes, tuple(placed[n].items())) for n in machine.nodes
    }


@attrs.frozen
class Changes:
    """What differs from the previous picture: CPUs whose group or containers changed,
    nodes whose memory use changed, containers new or moved, and those gone."""

    cpus: CPUSet
    nodes: frozenset[int]
    new: frozenset[str]
    moved: frozenset[str]
    gone: tuple[str, ...]

    @staticmethod
    def none() -> Changes:
        return Changes(CPUSet(), frozenset(), frozenset(), frozenset(), ())


def changes_between(
    before: Placement | None, scene_before: Scene | None, now: Placement, scene: Scene
) -> Changes:
    if before is None or scene_before is None:
        return Changes.none()
    cpus = CPUSet.from_ids(
        cpu
        for cpu, state in scene.cpus.items()
        if cpu not in scene_before.cpus or scene_before.cpus[cpu].shown() != state.shown()
    )
    nodes = frozenset(
        n
        for n, use in scene.memory.items()
        if n not in scene_before.memory or scene_before.memory[n] != use
    )
    old = {c.label: c for c in before.containers}
    current = {c.label for c in now.containers}
    new = frozenset(label for label in current if label not in old)
    moved = frozenset(
        c.label
        for c in now.containers
        if c.label in old and (old[c.label].cpus, old[c.label].mems) != (c.cpus, c.mems)
    )
    gone = tuple(label for label in old if label not in current)
    return Changes(cpus, nodes, new, moved, gone)
