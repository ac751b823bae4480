"""Machines an engine plans for without the host: a fake machine by catalogue name or spec
file, and the topology hints that belong to a machine that is not this host's."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine, MemoryType


@attrs.frozen
class NamedMachine:
    """A catalogue machine (or spec file): the machine itself, or the discovery of its written
    sysfs tree when memory types are overridden, and the hints of its devices."""

    machine: Machine | None
    hardware: HardwareDiscovery | None
    hints: TopologyHintSource


def named_machine(name: str, memory_types: Mapping[int, MemoryType] | None) -> NamedMachine:
    """The catalogue machine ``name`` (``nrirp hardware --list-machines``) or the machine spec
    file it names. Raises ``UnknownMachineError`` or ``MachineSpecError``."""
    # imported here: an engine on a real node never loads the fake-machine catalogue
    from nrirp.adapters.fakehw import (
        FakeHardwareDiscovery,
        FakeTopologyHints,
        load_machine_or_file,
        machine_of,
    )

    discovery = FakeHardwareDiscovery(load_machine_or_file(name), memory_types)
    hints = FakeTopologyHints.from_layout(discovery.layout)
    if memory_types:  # the overrides apply where discovery reads the types
        return NamedMachine(None, discovery, hints)
    return NamedMachine(machine_of(discovery.layout), None, hints)  # no tree written


def hints_without_host(hardware: HardwareDiscovery | None) -> TopologyHintSource:
    """Topology hints for an engine on a given machine: the devices of a fake machine's spec,
    the sysfs tree a :class:`~nrirp.adapters.sysfs.SysfsDiscovery` reads, else none; never
    the host's ``/sys``."""
    from nrirp.adapters.fakehw import FakeHardwareDiscovery, FakeTopologyHints
    from nrirp.adapters.sysfs import SysfsDiscovery, SysfsTopologyHints

    if isinstance(hardware, FakeHardwareDiscovery):
        return FakeTopologyHints.from_layout(hardware.layout)
    if isinstance(hardware, SysfsDiscovery):
        return SysfsTopologyHints(hardware.root)
    return FakeTopologyHints()
