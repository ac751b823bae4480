"""Building the simulator's composition for a replay."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from dependency_injector import providers

from nrirp.app.simulator.composition import SimulatorContainer
from nrirp.app.simulator.updates import SettlingRuntimeUpdates
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.topology import MemoryType


def build_simulator(
    policy: str,
    *,
    hardware: HardwareDiscovery | None = None,
    machine: str | None = None,
    sysfs_root: str | None = None,
    memory_types: Mapping[int, MemoryType] | None = None,
    config_file: str | None = None,
    policy_modules: Sequence[str] | None = None,
    nri_version: str | None = None,
) -> SimulatorContainer:
    """A :class:`SimulatorContainer` set up for :func:`~nrirp.app.simulator.replay.replay`.

    The hardware is ``hardware`` if given, else the catalogue machine or spec file
    ``machine``, else the sysfs tree at ``sysfs_root``. ``policy_modules`` are module names or
    ``.py`` files (default: ``NRIRP_POLICY_MODULES``). Every adapter can still be overridden
    before first use (``container.adapters.<port>``); ``adapters.runtime_updates`` must stay a
    :class:`SettlingRuntimeUpdates`. The replay flushes the in-memory state store after every
    step.
    """
    container = SimulatorContainer()
    container.config.from_dict(
        {
            "policy": policy,
            "config_file": config_file,
            "policy_modules": None if policy_modules is None else list(policy_modules),
            "machine": machine,
            "sysfs_root": sysfs_root,
            "memory_types": dict(memory_types or {}),
            "nri_version": nri_version,
        }
    )
    adapters = container.adapters.container
    if hardware is not None:
        adapters.hardware.override(providers.Object(hardware))
    adapters.runtime_updates.override(providers.Singleton(SettlingRuntimeUpdates))
    return container
