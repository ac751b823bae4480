"""The composition root: dependency-injector containers wiring the domain to adapters.

``CoreContainer`` holds what every composition shares: hardware discovery -> ``machine``, the
policy registry -> ``policy``, the policy configuration, and the ``resource_manager`` with its
ports. Its adapters are ``Dependency`` providers that a composition fills in:

* :class:`DaemonContainer`: real adapters (sysfs discovery and topology hints under a
  configurable root, the file state store, cgroupfs host control, NRI runtime updates) for
  ``nrirp run``;
* :class:`EmbeddedContainer`: no NRI; the host agent supplies ``runtime_updates`` (and
  optionally ``state_store``, ``host_control``, ``hardware``) and drives ``resource_manager``;
* :class:`SimulatorContainer`: fake hardware (a catalogue machine, a spec file or a sysfs tree),
  in-memory storage and host control, and our NRI plugin connected to the simulated runtime
  over a socketpair (``simulation``).

Every composition has thread-based ``timers`` (policies' ``schedule_event``) and
``topology_hints`` (sysfs under ``sysfs_root``; the simulator: the machine spec's devices, or the
sysfs tree it reads).

Every adapter is a provider exposed at the top level of each composition and can be
overridden before first use, e.g. ``container.state_store.override(providers.Object(store))``
or ``container.machine.override(providers.Object(machine))``. Providers are singletons: one
container instance is one engine. The resource manager is built but not started: the caller
calls ``resource_manager().start(config)`` (so it can handle a refused saved state itself).

Configuration keys (``container.config.from_dict({...})``):

=================  ==========================================================================
``policy``         policy name (required)
``config_file``    policy config file (YAML/JSON spec or custom resource); none: defaults
``policy_modules`` modules whose ``register_policies(registry)`` adds policies; ``None``: the
                   comma-separated ``NRIRP_POLICY_MODULES`` environment variable
``sysfs_root``     sysfs tree to discover hardware from (``/sys``)
``memory_types``   ``{node: MemoryType}`` overrides for discovery
``state_dir``      daemon: where the state file ``cache`` lives (``/var/lib/nrirp``)
``cgroup_root``    daemon: the cgroup root (``/sys/fs/cgroup``)
``machine``        simulator: catalogue machine name or spec file (else ``sysfs_root``)
``nri_version``    simulator: NRI release the simulated runtime behaves like (``v0.12.2``)
=================  ==========================================================================
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dependency_injector import containers, providers

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.documents import YamlAnnotationParser, load_policy_config
from nrirp.adapters.memory import InMemoryHostControl, InMemoryStateStore, RecordingDecisionLog
from nrirp.adapters.storage import FileStateStore
from nrirp.adapters.sysfs import SysfsDiscovery, SysfsTopologyHints
from nrirp.adapters.system import LoggingDecisionLog, SystemClock, ThreadTimers, read_config_file
from nrirp.domain.config import PolicyConfig
from nrirp.domain.pipeline import DefaultConfigCodec, ResourceManager
from nrirp.domain.policies import builtin_registry
from nrirp.domain.policy import Policy, PolicyRegistry
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.topology import Machine, MemoryType

if TYPE_CHECKING:
    from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
    from nrirp.adapters.nri.resmgr.service import PluginService
    from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
    from nrirp.adapters.nri.stub import Stub
    from nrirp.app.simulator.simulation import Simulation
    from nrirp.simruntime import SimRuntime

POLICY_MODULES_ENV = "NRIRP_POLICY_MODULES"
"""Environment variable: comma-separated modules that register extra policies."""
DEFAULT_STATE_DIR = "/var/lib/nrirp"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
DEFAULT_SYSFS_ROOT = "/sys"
DEFAULT_PLUGIN_NAME = "resource-manager"
DEFAULT_PLUGIN_INDEX = "90"


class PolicyModuleError(Exception):
    """A policy module named in the configuration could not be loaded."""


def policy_modules_from_env(environ: Mapping[str, str] | None = None) -> list[str]:
    """The modules listed in ``NRIRP_POLICY_MODULES`` (comma-separated, blanks ignored)."""
    value = (os.environ if environ is None else environ).get(POLICY_MODULES_ENV, "")
    return [name.strip() for name in value.split(",") if name.strip()]


def make_policy_registry(modules: Sequence[str] | None = None) -> PolicyRegistry:
    """The built-in policies plus those of ``modules`` (default: ``NRIRP_POLICY_MODULES``).

    A policy module defines ``register_policies(registry: PolicyRegistry) -> None``, which
    calls ``registry.register(PolicyClass)`` for each of its policies.
    """
    registry = builtin_registry()
    for name in policy_modules_from_env() if modules is None else modules:
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            raise PolicyModuleError(f"cannot import policy module {name!r}: {exc}") from exc
        register = getattr(module, "register_policies", None)
        if not callable(register):
            raise PolicyModuleError(
                f"policy module {name!r} has no register_policies(registry) function"
            )
        register(registry)
    return registry


def create_policy(registry: PolicyRegistry, name: str | None) -> Policy:
    """A fresh instance of the policy called ``name`` (``UnknownPolicyError`` lists the known)."""
    if not name:
        raise ValueError("no policy selected (config key 'policy')")
    return registry.create(name)


def read_policy_config(
    registry: PolicyRegistry, policy: str | None, path: str | None
) -> PolicyConfig | None:
    """The policy's configuration from ``path``; ``None`` without a file.

    Raises ``ConfigFileError`` (unreadable file) or ``ConfigError`` (every problem listed).
    """
    if not path:
        return None
    if not policy:
        raise ValueError("no policy selected (config key 'policy')")
    return load_policy_config(policy, read_config_file(path), registry)


def discover_machine(hardware: HardwareDiscovery) -> Machine:
    return hardware.discover()


def sysfs_discovery(root: str | None, memory_types: Mapping[int, MemoryType] | None) -> Any:
    return SysfsDiscovery(root or DEFAULT_SYSFS_ROOT, memory_types)


def simulator_hardware(
    machine: str | None,
    sysfs_root: str | None,
    memory_types: Mapping[int, MemoryType] | None,
) -> Any:
    """A fake machine (catalogue name or spec file), else the sysfs tree at ``sysfs_root``."""
    if machine:
        from nrirp.adapters.fakehw import FakeHardwareDiscovery, load_machine_or_file

        return FakeHardwareDiscovery(load_machine_or_file(machine), memory_types)
    if sysfs_root:
        return SysfsDiscovery(sysfs_root, memory_types)
    raise ValueError("the simulator needs a machine (config key 'machine') or 'sysfs_root'")


def sysfs_topology_hints(root: str | None) -> SysfsTopologyHints:
    return SysfsTopologyHints(root or DEFAULT_SYSFS_ROOT)


def simulator_topology_hints(hardware: Any, sysfs_root: str | None) -> Any:
    """Hints for the simulator: the devices of its machine spec (``FakeHardwareDiscovery``),
    else the sysfs tree it reads (device numbers only: mount sources are not host paths
    there), else none."""
    from nrirp.adapters.fakehw import FakeHardwareDiscovery, FakeTopologyHints

    if isinstance(hardware, FakeHardwareDiscovery):
        return FakeTopologyHints.from_layout(hardware.layout)
    if sysfs_root:
        return SysfsTopologyHints(sysfs_root, resolve_host_paths=False)
    return FakeTopologyHints()


def file_state_store(state_dir: str | None) -> FileStateStore:
    return FileStateStore(state_dir or DEFAULT_STATE_DIR)


def cgroupfs_host_control(root: str | None) -> CgroupfsHostControl:
    return CgroupfsHostControl(root or DEFAULT_CGROUP_ROOT)


# The NRI adapters and the simulated runtime are imported when first built, so that the
# embedded composition (nrirp.app.embed) loads neither them nor protobuf.


def nri_runtime_updates() -> NriRuntimeUpdates:
    from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates

    return NriRuntimeUpdates()


def nri_plugin(
    resource_manager: ResourceManager, updates: NriRuntimeUpdates
) -> ResourceManagerPlugin:
    from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin

    return ResourceManagerPlugin(resource_manager, updates)


def plugin_service(stub: Stub, updates: NriRuntimeUpdates) -> PluginService:
    from nrirp.adapters.nri.resmgr.service import PluginService

    return PluginService(stub, updates)


def build_simulated_runtime(machine: Machine, nri_version: str | None) -> SimRuntime:
    from nrirp.app.simulator.simulation import simulated_runtime

    return simulated_runtime(machine, nri_version)


def build_simulation(
    runtime: SimRuntime, plugin: ResourceManagerPlugin, updates: NriRuntimeUpdates
) -> Simulation:
    from nrirp.app.simulator.simulation import Simulation

    return Simulation(runtime, plugin, updates)


def nri_stub(
    plugin: ResourceManagerPlugin,
    name: str | None,
    index: str | None,
    socket_path: str | None,
) -> Stub:
    """The plugin's stub: external (``socket_path``, reconnecting) unless the runtime started
    the process (``NRI_PLUGIN_SOCKET``); name and index default like the reference's."""
    from nrirp.adapters.nri.stub import Stub

    return Stub(
        plugin,
        name=name,
        index=index,
        socket_path=socket_path,
        default_name=DEFAULT_PLUGIN_NAME,
        default_index=DEFAULT_PLUGIN_INDEX,
    )


class CoreContainer(containers.DeclarativeContainer):
    """What every composition shares; adapters come in through the ``Dependency`` providers."""

    config = providers.Configuration()

    hardware: providers.Dependency[Any] = providers.Dependency()
    state_store: providers.Dependency[Any] = providers.Dependency()
    host_control: providers.Dependency[Any] = providers.Dependency(default=providers.Object(None))
    runtime_updates: providers.Dependency[Any] = providers.Dependency()
    clock: providers.Dependency[Any] = providers.Dependency(
        default=providers.Singleton(SystemClock)
    )
    decision_log: providers.Dependency[Any] = providers.Dependency(
        default=providers.Singleton(LoggingDecisionLog)
    )
    metrics: providers.Dependency[Any] = providers.Dependency(default=providers.Object(None))
    topology_hints: providers.Dependency[Any] = providers.Dependency(default=providers.Object(None))
    timers: providers.Dependency[Any] = providers.Dependency(
        default=providers.Singleton(ThreadTimers)
    )
    annotation_parser = providers.Singleton(YamlAnnotationParser)  # the same everywhere

    machine = providers.Singleton(discover_machine, hardware)
    policy_registry = providers.Singleton(make_policy_registry, config.policy_modules)
    policy = providers.Singleton(create_policy, policy_registry, config.policy)
    policy_config = providers.Singleton(
        read_policy_config, policy_registry, config.policy, config.config_file
    )
    config_codec = providers.Singleton(DefaultConfigCodec, policy_registry)
    resource_manager = providers.Singleton(
        ResourceManager,
        policy=policy,
        machine=machine,
        store=state_store,
        updates=runtime_updates,
        host=host_control,
        clock=clock,
        decisions=decision_log,
        metrics=metrics,
        hints=topology_hints,
        timers=timers,
        annotation_parser=annotation_parser,
        config_codec=config_codec,
    )


ADAPTERS = (
    "hardware",
    "state_store",
    "host_control",
    "runtime_updates",
    "clock",
    "decision_log",
    "metrics",
    "topology_hints",
    "timers",
)
"""The adapter providers every composition declares at its top level (overridable there)."""


def wired_core(composition: Mapping[str, Any]) -> providers.Container[CoreContainer]:
    """A :class:`CoreContainer` fed by the ``config`` and :data:`ADAPTERS` providers of a
    composition's class body (pass ``locals()``)."""
    adapters = {name: composition[name] for name in ADAPTERS}
    return providers.Container(CoreContainer, config=composition["config"], **adapters)


class EmbeddedContainer(containers.DeclarativeContainer):
    """The engine for a host agent that handles the runtime itself (no NRI socket).

    The host must provide ``runtime_updates`` (``container.runtime_updates.override(...)``);
    state is kept in memory unless ``state_store`` is overridden; no host control unless
    ``host_control`` is overridden; hardware is read from ``config.sysfs_root`` (``/sys``)
    unless ``hardware`` or ``machine`` is overridden.
    """

    config = providers.Configuration()

    hardware = providers.Singleton(sysfs_discovery, config.sysfs_root, config.memory_types)
    state_store = providers.Singleton(InMemoryStateStore)
    host_control: providers.Provider[Any] = providers.Object(None)
    runtime_updates: providers.Dependency[Any] = providers.Dependency()
    clock = providers.Singleton(SystemClock)
    decision_log = providers.Singleton(LoggingDecisionLog)
    metrics: providers.Provider[Any] = providers.Object(None)
    topology_hints = providers.Singleton(sysfs_topology_hints, config.sysfs_root)
    timers = providers.Singleton(ThreadTimers)

    core = wired_core(locals())
    machine = core.machine
    policy_registry = core.policy_registry
    policy = core.policy
    policy_config = core.policy_config
    resource_manager = core.resource_manager


class DaemonContainer(containers.DeclarativeContainer):
    """``nrirp run``: real hardware (or a sysfs tree), the state file, cgroupfs, NRI updates,
    and the NRI plugin (``plugin``, its ``stub`` and the ``service`` running both).

    Extra configuration keys: ``nri_socket`` (``/var/run/nri/nri.sock``), ``plugin_name``
    (``resource-manager``), ``plugin_index`` (``90``)."""

    config = providers.Configuration()

    hardware = providers.Singleton(sysfs_discovery, config.sysfs_root, config.memory_types)
    state_store = providers.Singleton(file_state_store, config.state_dir)
    host_control = providers.Singleton(cgroupfs_host_control, config.cgroup_root)
    runtime_updates = providers.Singleton(nri_runtime_updates)
    clock = providers.Singleton(SystemClock)
    decision_log = providers.Singleton(LoggingDecisionLog)
    metrics: providers.Provider[Any] = providers.Object(None)
    topology_hints = providers.Singleton(sysfs_topology_hints, config.sysfs_root)
    timers = providers.Singleton(ThreadTimers)

    core = wired_core(locals())
    machine = core.machine
    policy_registry = core.policy_registry
    policy = core.policy
    policy_config = core.policy_config
    resource_manager = core.resource_manager
    plugin = providers.Singleton(nri_plugin, resource_manager, runtime_updates)
    stub = providers.Singleton(
        nri_stub, plugin, config.plugin_name, config.plugin_index, config.nri_socket
    )
    service = providers.Singleton(plugin_service, stub, runtime_updates)


class SimulatorContainer(containers.DeclarativeContainer):
    """Fake hardware, in-memory state and host control, and the simulated runtime with our
    plugin connected to it: ``async with container.simulation() as sim:`` then drive
    ``sim.runtime`` like a kubelet. Decisions are recorded (``decision_log().decisions``)."""

    config = providers.Configuration()

    hardware = providers.Singleton(
        simulator_hardware, config.machine, config.sysfs_root, config.memory_types
    )
    state_store = providers.Singleton(InMemoryStateStore)
    host_control = providers.Singleton(InMemoryHostControl)
    runtime_updates = providers.Singleton(nri_runtime_updates)
    clock = providers.Singleton(SystemClock)
    decision_log = providers.Singleton(RecordingDecisionLog)
    metrics: providers.Provider[Any] = providers.Object(None)
    topology_hints = providers.Singleton(simulator_topology_hints, hardware, config.sysfs_root)
    timers = providers.Singleton(ThreadTimers)

    core = wired_core(locals())
    machine = core.machine
    policy_registry = core.policy_registry
    policy = core.policy
    policy_config = core.policy_config
    resource_manager = core.resource_manager

    runtime = providers.Singleton(build_simulated_runtime, machine, config.nri_version)
    plugin = providers.Singleton(nri_plugin, resource_manager, runtime_updates)
    simulation = providers.Singleton(build_simulation, runtime, plugin, runtime_updates)
