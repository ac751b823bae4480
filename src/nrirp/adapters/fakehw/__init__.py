"""Fake machines: specs (YAML), a sysfs tree writer, a catalogue, a discovery adapter and
topology hints for the spec's devices."""

from nrirp.adapters.fakehw.catalogue import (
    UnknownMachineError,
    load_machine,
    load_machine_or_file,
    machine_names,
)
from nrirp.adapters.fakehw.discovery import FakeHardwareDiscovery
from nrirp.adapters.fakehw.errors import MachineSpecError
from nrirp.adapters.fakehw.expected import machine_of
from nrirp.adapters.fakehw.from_machine import check_describable, spec_of_machine
from nrirp.adapters.fakehw.hints import FakeTopologyHints, device_hints
from nrirp.adapters.fakehw.host_writer import FakeHostTree, write_host
from nrirp.adapters.fakehw.layout import Layout, resolve
from nrirp.adapters.fakehw.loading import (
    spec_from_data,
    spec_from_file,
    spec_from_yaml,
    spec_to_data,
)
from nrirp.adapters.fakehw.spec import MachineSpec
from nrirp.adapters.fakehw.writer import SysfsTreeError, write_procfs, write_sysfs
from nrirp.domain.topology import Machine


def expected_machine(spec: MachineSpec) -> Machine:
    """The machine ``spec`` describes, built without sysfs (the oracle for discovery)."""
    return machine_of(resolve(spec, f"machine {spec.name}"))


__all__ = [
    "FakeHardwareDiscovery",
    "FakeHostTree",
    "FakeTopologyHints",
    "Layout",
    "MachineSpec",
    "MachineSpecError",
    "SysfsTreeError",
    "UnknownMachineError",
    "check_describable",
    "device_hints",
    "expected_machine",
    "load_machine",
    "load_machine_or_file",
    "machine_names",
    "machine_of",
    "resolve",
    "spec_from_data",
    "spec_from_file",
    "spec_from_yaml",
    "spec_of_machine",
    "spec_to_data",
    "write_host",
    "write_procfs",
    "write_sysfs",
]
