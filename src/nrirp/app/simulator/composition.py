"""The simulator's composition (``nrirp simulate``, fast end-to-end tests): fake hardware,
in-memory adapters, and our NRI plugin connected to the simulated runtime."""

from __future__ import annotations

from collections.abc import Mapping

from dependency_injector import containers, providers

from nrirp.adapters.fakehw import (
    FakeHardwareDiscovery,
    FakeTopologyHints,
    load_machine_or_file,
)
from nrirp.adapters.memory import InMemoryHostControl, RecordingDecisionLog
from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.sysfs import SysfsDiscovery, SysfsTopologyHints
from nrirp.app.composition import Adapters, core_over
from nrirp.app.simulator.host import (
    cpu_power_of,
    interrupts_of,
    resctrl_of,
    resource_export_of,
    simulated_host,
)
from nrirp.app.simulator.simulation import Simulation, simulated_runtime
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import MemoryType


def simulator_hardware(
    machine: str | None,
    sysfs_root: str | None,
    memory_types: Mapping[int, MemoryType] | None,
) -> HardwareDiscovery:
    """A fake machine (catalogue name or spec file), else the sysfs tree at ``sysfs_root``."""
    if machine:
        return FakeHardwareDiscovery(load_machine_or_file(machine), memory_types)
    if sysfs_root:
        return SysfsDiscovery(sysfs_root, memory_types)
    raise ValueError("the simulator needs a machine (config key 'machine') or 'sysfs_root'")


def simulator_topology_hints(
    hardware: HardwareDiscovery, sysfs_root: str | None
) -> TopologyHintSource:
    """Hints for the simulator: the devices of its machine spec (``FakeHardwareDiscovery``),
    else the sysfs tree it reads (``SysfsDiscovery``'s root, or ``sysfs_root``; device
    numbers only: mount sources are not host paths there), else none."""
    if isinstance(hardware, FakeHardwareDiscovery):
        return FakeTopologyHints.from_layout(hardware.layout)
    root = hardware.root if isinstance(hardware, SysfsDiscovery) else sysfs_root
    if root:
        return SysfsTopologyHints(root, resolve_host_paths=False)
    return FakeTopologyHints()


class SimulatorAdapters(Adapters):
    """The base set, with fake hardware (config key ``machine``: a catalogue machine or a spec
    file; else the sysfs tree at ``sysfs_root``) and its devices' topology hints, in-memory
    host control per container, the host-wide controls on the fake machine's host tree
    (``host``: :mod:`~nrirp.app.simulator.host`), recorded decisions
    (``decision_log().decisions``) and updates over NRI."""

    hardware = providers.Singleton(
        simulator_hardware,
        Adapters.config.machine,
        Adapters.config.sysfs_root,
        Adapters.config.memory_types,
    )
    topology_hints = providers.Singleton(
        simulator_topology_hints, hardware, Adapters.config.sysfs_root
    )
    host_control = providers.Singleton(InMemoryHostControl)
    host = providers.Singleton(simulated_host, hardware)
    cpu_power = providers.Callable(cpu_power_of, host)
    interrupts = providers.Callable(interrupts_of, host)
    resctrl = providers.Callable(resctrl_of, host)
    resource_export = providers.Callable(resource_export_of, host)
    decision_log = providers.Singleton(RecordingDecisionLog)
    runtime_updates = providers.Singleton(NriRuntimeUpdates)


class SimulatorContainer(containers.DeclarativeContainer):
    """:class:`SimulatorAdapters` feeding the core, and the simulated ``runtime`` with our
    ``plugin`` connected to it: ``async with container.simulation() as sim:`` then drive
    ``sim.runtime`` like a kubelet.

    Configuration keys: those of the core and the adapters, plus ``nri_version`` (the NRI
    release the simulated runtime behaves like, ``v0.12.2``)."""

    config = providers.Configuration()
    adapters = providers.Container(SimulatorAdapters, config=config)
    core = core_over(adapters, config)

    runtime = providers.Singleton(simulated_runtime, core.machine, config.nri_version)
    plugin = providers.Singleton(
        ResourceManagerPlugin, core.resource_manager, adapters.runtime_updates
    )
    simulation = providers.Singleton(Simulation, runtime, plugin, adapters.runtime_updates)
