"""What the topology-aware policy asks of the host: CPU classes on its CPUs, interrupts off
exclusive and isolated CPUs.

CPU classes, as the reference places them: ``reservedPoolCPUClass`` on the reserved CPUs,
``sharedPoolCPUClass`` on the shared CPUs (what exclusive grants left of the pools' sharable
CPUs), and on each grant's exclusive CPUs its ``cpu-class`` annotation, else
``defaultExclusiveCPUClass``; free isolated CPUs carry none. Interrupts matching
``controllableInterrupts`` are kept off every exclusive and kernel-isolated CPU.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from nrirp.domain.config import ControlConfig, TopologyAwarePolicySpec
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.assignment import NO_ASSIGNMENT, HostAssignment
from nrirp.domain.hostcontrol.classes import ClassSettings, resolve_classes
from nrirp.domain.hostcontrol.interrupts import InterruptPlan
from nrirp.domain.policies.topology_aware.allocations import Allocations
from nrirp.domain.policies.topology_aware.grants import Grant
from nrirp.domain.policies.topology_aware.preferences import CPUKind
from nrirp.domain.topology import Machine, MemoryType


class HostPlan:
    """The policy's host assignment, rebuilt only when something it depends on changed:
    the configuration, the top pool's shared CPUs, or an exclusive grant (its CPUs or class,
    told through :meth:`granted` and :meth:`released`)."""

    def __init__(self) -> None:
        self._exclusive: dict[str, tuple[str | None, CPUSet]] = {}
        self._version = 0
        self._key: tuple[object, ...] | None = None
        self._assignment = NO_ASSIGNMENT
        self._classes: tuple[int, int, Mapping[str, ClassSettings]] | None = None

    def granted(self, container_id: str, cpu_class: str | None, exclusive: CPUSet) -> None:
        """A grant was made or kept: its exclusive CPUs and their class."""
        entry = (cpu_class, exclusive)
        if not exclusive:
            self.released(container_id)
        elif self._exclusive.get(container_id) != entry:
            self._exclusive[container_id] = entry
            self._version += 1

    def released(self, container_id: str) -> None:
        if self._exclusive.pop(container_id, None) is not None:
            self._version += 1

    def snapshot(self) -> dict[str, tuple[str | None, CPUSet]]:
        """The grants told so far (to put back with :meth:`reset` if a reconfiguration is
        refused)."""
        return dict(self._exclusive)

    def reset(self, grants: Mapping[str, tuple[str | None, CPUSet]] | None = None) -> None:
        self._exclusive = dict(grants or {})
        self._version += 1

    def assignment(
        self, spec: TopologyAwarePolicySpec, control: ControlConfig, alloc: Allocations
    ) -> HostAssignment:
        shared = alloc.supply.sharable[alloc.tree.top.id]
        key = (id(spec), id(control), id(alloc), self._version, shared)
        if key == self._key:
            return self._assignment
        resources = alloc.resources
        bits: dict[str, CPUSet] = {}

        def add(name: str | None, cpus: CPUSet) -> None:
            if name is not None and cpus:
                bits[name] = bits[name] | cpus if name in bits else cpus

        add(spec.reserved_pool_cpu_class, resources.reserved)
        add(spec.shared_pool_cpu_class, shared)
        exclusive = CPUSet()
        for name, cpus in self._exclusive.values():
            add(name, cpus)
            exclusive = exclusive | cpus
        assignment = HostAssignment(
            cpu_classes=MappingProxyType(bits),
            classes=self._resolved(spec, control),
            interrupts=InterruptPlan(
                allowed=resources.available,
                controllable=spec.controllable_interrupts,
                avoid=exclusive | resources.isolated,
            ),
        )
        if assignment != self._assignment:
            self._assignment = assignment
        self._key = key
        return self._assignment

    def _resolved(
        self, spec: TopologyAwarePolicySpec, control: ControlConfig
    ) -> Mapping[str, ClassSettings]:
        cached = self._classes
        if cached is None or cached[0] != id(spec) or cached[1] != id(control):
            cached = self._classes = (
                id(spec),
                id(control),
                resolve_classes(spec.cpu_classes, control),
            )
        return cached[2]


def exported_resources(alloc: Allocations, grant: Grant, machine: Machine) -> dict[str, str]:
    """A grant as the reference exports it in ``resources.sh``: ``SHARED_CPUS`` (when it has
    a shared part: its pool's shared CPUs, or the reserved ones), ``ISOLATED_CPUS`` and
    ``EXCLUSIVE_CPUS`` (its own, split by kernel isolation), ``ALL_MEMS`` and the nodes of each
    memory type (``DRAM_MEMS``, ``PMEM_MEMS``, ``HBM_MEMS``); empty values are left out."""
    data: dict[str, str] = {}
    if grant.kind is CPUKind.RESERVED or grant.reserved:
        data["SHARED_CPUS"] = str(alloc.supply.reserved_of(grant.pool))
    elif grant.shared or grant.kind is CPUKind.SHARED:
        data["SHARED_CPUS"] = str(alloc.supply.shared_cpus(grant.pool))
    isolated = grant.exclusive & alloc.resources.isolated
    exclusive = grant.exclusive - isolated
    if isolated:
        data["ISOLATED_CPUS"] = str(isolated)
    if exclusive:
        data["EXCLUSIVE_CPUS"] = str(exclusive)
    mems = grant.memory if grant.memory is not None else grant.pool.mems
    if mems:
        data["ALL_MEMS"] = str(mems)
        for kind, key in (
            (MemoryType.DRAM, "DRAM_MEMS"),
            (MemoryType.PMEM, "PMEM_MEMS"),
            (MemoryType.HBM, "HBM_MEMS"),
        ):
            typed = CPUSet.from_ids(n for n in mems if machine.memory_type(n) is kind)
            if typed:
                data[key] = str(typed)
    return data
