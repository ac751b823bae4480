"""Assertions about where a policy put containers, with messages that say what is wrong.

Each takes where to look (an :class:`~nrirp.testing.EngineHarness`, an
:class:`~nrirp.app.embed.Engine` or a :class:`~nrirp.app.placement.Placement`) and containers
(the neutral ``Container``, its id, or ``namespace/pod/name``). A container whose CPUs are
not restricted may run on every online CPU.
"""

from __future__ import annotations

from typing import Any

from nrirp.app.placement import PlacedContainer, Placement, placement_of
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container

Where = Any  # EngineHarness | Engine | Placement (a union would import the engine eagerly)
Ref = Container | str


def placement_from(where: Where) -> Placement:
    """The placement of an engine harness, an engine, or a placement itself."""
    if isinstance(where, Placement):
        return where
    placement = getattr(where, "placement", None)
    if callable(placement):
        found = placement()
        if isinstance(found, Placement):
            return found
    manager = getattr(where, "manager", None)
    if manager is not None:
        return placement_of(manager)
    raise TypeError(f"cannot read a placement from {type(where).__name__}")


def _find(placement: Placement, ref: Ref) -> PlacedContainer:
    key = ref.id if isinstance(ref, Container) else ref
    try:
        return placement.container(key)
    except KeyError as exc:
        raise AssertionError(exc.args[0]) from None


def _show(cpus: CPUSet | None) -> str:
    return "not restricted" if cpus is None else (str(cpus) or "(empty)")


def assert_exclusive(where: Where, container: Ref) -> CPUSet:
    """The container has CPUs and no other container may run on any of them; returns them."""
    placement = placement_from(where)
    mine = _find(placement, container)
    if mine.cpus is None or not mine.cpus:
        raise AssertionError(f"{mine.label} has no CPUs of its own: cpus {_show(mine.cpus)}")
    others = [c for c in placement.users_of(mine.cpus) if c.id != mine.id]
    if others:
        shared = "; ".join(
            f"{c.label} (cpus {_show(c.cpus)})" for c in sorted(others, key=lambda c: c.label)
        )
        raise AssertionError(f"{mine.label}'s CPUs {mine.cpus} are not exclusive: {shared}")
    return mine.cpus


def assert_on_one_node(where: Where, container: Ref, *, memory: bool = True) -> int:
    """The container's CPUs are all on one NUMA node (and, with ``memory``, its memory nodes
    are that node, or memory-only nodes closest to it); returns the node."""
    placement = placement_from(where)
    mine = _find(placement, container)
    machine = placement.machine
    cpus = placement.cpus_of(mine)
    nodes = sorted({machine.node_of(cpu) for cpu in cpus})
    if len(nodes) != 1:
        raise AssertionError(
            f"{mine.label}'s CPUs {_show(mine.cpus)} span NUMA nodes "
            f"{', '.join(map(str, nodes)) or 'none'}"
        )
    node = nodes[0]
    if memory:
        mems = mine.mems if mine.mems is not None else CPUSet.from_ids(machine.nodes)
        allowed = CPUSet.of(node) | CPUSet.from_ids(
            n for n in machine.memory_only_nodes if node in machine.closest_cpu_node_set(n)
        )
        if not mems or not mems.issubset(allowed):
            raise AssertionError(
                f"{mine.label}'s CPUs are on node {node} but its memory is on nodes "
                f"{_show(mine.mems)}"
            )
    return node


def assert_disjoint(where: Where, container: Ref, other: Ref) -> None:
    """No CPU is open to both containers."""
    placement = placement_from(where)
    a, b = _find(placement, container), _find(placement, other)
    both = placement.cpus_of(a) & placement.cpus_of(b)
    if both:
        raise AssertionError(
            f"{a.label} (cpus {_show(a.cpus)}) and {b.label} (cpus {_show(b.cpus)}) share "
            f"CPUs {both}"
        )


def assert_within_pool(where: Where, container: Ref, pool: str) -> None:
    """The container runs within pool or balloon ``pool``: its CPUs are among the group's
    CPUs (for a balloon, with the idle CPUs its containers may share) and, when the policy
    says which group holds the container, it is this one (or one nested in it)."""
    placement = placement_from(where)
    mine = _find(placement, container)
    try:
        group = placement.group(pool)
    except KeyError as exc:
        raise AssertionError(exc.args[0]) from None
    allowed = group.cpus | (group.shared_cpus if not group.nested else CPUSet())
    cpus = placement.cpus_of(mine)
    if not cpus.issubset(allowed):
        raise AssertionError(
            f"{mine.label}'s CPUs {_show(mine.cpus)} are not within {pool} ({allowed}): "
            f"{cpus - allowed} outside"
        )
    if mine.group is not None and mine.group != pool:
        ancestors = _ancestors(placement, mine.group)
        if pool not in ancestors:
            raise AssertionError(f"{mine.label} is held by {mine.group}, not {pool}")


def _ancestors(placement: Placement, name: str) -> list[str]:
    out: list[str] = []
    parent = placement.group(name).parent
    while parent is not None and parent not in out:
        out.append(parent)
        parent = placement.group(parent).parent
    return out
