"""The placement values: a machine, the policy's groups (pools or balloons) and containers."""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.topology import Machine


@attrs.frozen
class Group:
    """A pool (topology-aware) or a balloon (balloons) of the policy.

    ``cpus`` are the CPUs it holds; ``shared_cpus`` the ones its containers share (a pool's
    shared subset) or may also use (a balloon's idle CPUs of others); ``members`` the
    ``namespace/pod/container`` labels of the containers it holds. A pool tree's ``parent``
    names its parent pool; pools nest, balloons do not (``nested``).
    """

    name: str
    kind: str
    """``balloon``, or the pool's kind (``root``, ``socket``, ``die``, ``numa node``)."""
    cpus: CPUSet
    mems: CPUSet = EMPTY
    shared_cpus: CPUSet = EMPTY
    reserved_cpus: CPUSet = EMPTY
    parent: str | None = None
    members: tuple[str, ...] = ()
    nested: bool = False
    type: str = ""
    """A balloon's type (``reserved``, ``default``, or one of the configuration's)."""


@attrs.frozen
class PlacedContainer:
    """A container where the policy put it: ``cpus``/``mems`` ``None`` when not restricted
    (it may run anywhere), ``memory`` its memory limit in bytes (``None``: no limit), ``group``
    the pool or balloon holding it (``None``: none, or a policy without groups)."""

    id: str
    namespace: str
    pod: str
    name: str
    cpus: CPUSet | None
    mems: CPUSet | None
    memory: int | None = None
    group: str | None = None
    qos: str = ""

    @property
    def label(self) -> str:
        """``namespace/pod/name``, as policies name containers."""
        return f"{self.namespace}/{self.pod}/{self.name}"


@attrs.frozen
class Placement:
    """Everything one picture or one assertion needs: the machine, the policy's groups, the
    containers, and the CPUs the policy reserves for system work."""

    machine: Machine
    policy: str
    groups: tuple[Group, ...] = ()
    containers: tuple[PlacedContainer, ...] = ()
    reserved: CPUSet = EMPTY

    def container(self, key: str) -> PlacedContainer:
        """The container with this id or ``namespace/pod/name`` label (``KeyError`` if none)."""
        for c in self.containers:
            if key in (c.id, c.label):
                return c
        raise KeyError(f"no container {key!r} (known: {', '.join(self.labels()) or 'none'})")

    def group(self, name: str) -> Group:
        """The pool or balloon called ``name`` (``KeyError`` if none)."""
        for g in self.groups:
            if g.name == name:
                return g
        known = ", ".join(g.name for g in self.groups) or "none"
        raise KeyError(f"no pool or balloon {name!r} (known: {known})")

    def labels(self) -> list[str]:
        return [c.label for c in self.containers]

    def cpus_of(self, container: PlacedContainer) -> CPUSet:
        """The CPUs the container may run on: its cpuset, or every online CPU when it is not
        restricted."""
        return self.machine.online if container.cpus is None else container.cpus

    def users_of(self, cpus: CPUSet) -> list[PlacedContainer]:
        """The containers that may run on any of ``cpus``."""
        return [c for c in self.containers if self.cpus_of(c) & cpus]


def with_groups_of(
    containers: Iterable[PlacedContainer], groups: Iterable[Group], by_id: dict[str, str]
) -> tuple[PlacedContainer, ...]:
    """``containers`` with ``group`` set from ``by_id`` (container id -> group) or, failing
    that, from the groups' member labels (the innermost group that lists it)."""
    by_label: dict[str, str] = {}
    for g in sorted(groups, key=lambda g: -len(g.cpus)):  # a smaller (inner) group wins
        for label in g.members:
            by_label[label] = g.name
    return tuple(
        c if c.group else attrs.evolve(c, group=by_id.get(c.id) or by_label.get(c.label))
        for c in containers
    )
