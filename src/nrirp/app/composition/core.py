"""The core every composition shares, and the ports it needs filled.

:class:`Ports` declares the core's dependencies: one provider per domain port, named as the
port's adapter is everywhere and typed by the port. :class:`CoreContainer` builds on them:
hardware discovery -> ``machine``, the policy registry -> ``policy``, the policy configuration,
and the ``resource_manager`` (the pipeline) with every port. An adapters container
(:class:`~nrirp.app.composition.adapters.Adapters`, the base set, and one subclass per
environment) fills the ports; :func:`core_over` feeds a core from one.

The resource manager is built, not started: the caller calls ``resource_manager().start(...)``
(so it can handle a refused saved state itself). Providers are singletons: one container is
one engine.
"""

from __future__ import annotations

from typing import Any

from dependency_injector import containers, providers

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.system import read_config_file
from nrirp.app.composition.policies import create_policy, make_policy_registry
from nrirp.domain.config import PolicyConfig
from nrirp.domain.pipeline import DefaultConfigCodec, ResourceManager
from nrirp.domain.policy import PolicyRegistry
from nrirp.domain.ports.clock import Clock
from nrirp.domain.ports.cpu_power import CPUPowerControl
from nrirp.domain.ports.decisions import DecisionLog
from nrirp.domain.ports.documents import AnnotationParser
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.ports.host_control import HostControl
from nrirp.domain.ports.inbound import InboundObserver
from nrirp.domain.ports.interrupts import InterruptControl
from nrirp.domain.ports.kubernetes import Kubernetes
from nrirp.domain.ports.metrics import Metrics
from nrirp.domain.ports.resctrl import ResctrlControl
from nrirp.domain.ports.resource_export import ResourceExport
from nrirp.domain.ports.runtime_updates import RuntimeUpdates
from nrirp.domain.ports.state_store import StateStore
from nrirp.domain.ports.timers import Timers
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine


class Ports(containers.DeclarativeContainer):
    """The core's dependencies: one per port, typed by it (``None``: an optional port left
    out). Port protocols cannot be checked with ``isinstance``, so mypy checks the types: an
    adapters container inherits these declarations and every adapter it defines must make
    the port's type."""

    hardware: providers.Provider[HardwareDiscovery] = providers.Dependency()
    state_store: providers.Provider[StateStore] = providers.Dependency()
    host_control: providers.Provider[HostControl | None] = providers.Dependency()
    runtime_updates: providers.Provider[RuntimeUpdates] = providers.Dependency()
    clock: providers.Provider[Clock] = providers.Dependency()
    decision_log: providers.Provider[DecisionLog] = providers.Dependency()
    metrics: providers.Provider[Metrics | None] = providers.Dependency()
    topology_hints: providers.Provider[TopologyHintSource | None] = providers.Dependency()
    timers: providers.Provider[Timers] = providers.Dependency()
    annotation_parser: providers.Provider[AnnotationParser] = providers.Dependency()
    kubernetes: providers.Provider[Kubernetes | None] = providers.Dependency()
    cpu_power: providers.Provider[CPUPowerControl | None] = providers.Dependency()
    interrupts: providers.Provider[InterruptControl | None] = providers.Dependency()
    resctrl: providers.Provider[ResctrlControl | None] = providers.Dependency()
    resource_export: providers.Provider[ResourceExport | None] = providers.Dependency()
    inbound_observer: providers.Provider[InboundObserver | None] = providers.Dependency()


def discover_machine(hardware: HardwareDiscovery) -> Machine:
    return hardware.discover()


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


class CoreContainer(Ports):
    """The ports (inherited from :class:`Ports`, filled by an adapters container) wired to
    the domain. Configuration keys: ``policy`` (required), ``config_file`` (policy config;
    none: the saved one, else the defaults), ``policy_modules`` (module names or ``.py`` files
    whose ``register_policies(registry)`` adds policies; ``None``: ``NRIRP_POLICY_MODULES``)."""

    config = providers.Configuration()

    machine = providers.Singleton(discover_machine, Ports.hardware)
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
        store=Ports.state_store,
        updates=Ports.runtime_updates,
        host=Ports.host_control,
        clock=Ports.clock,
        decisions=Ports.decision_log,
        metrics=Ports.metrics,
        hints=Ports.topology_hints,
        timers=Ports.timers,
        annotation_parser=Ports.annotation_parser,
        kubernetes=Ports.kubernetes,
        observer=Ports.inbound_observer,
        cpu_power=Ports.cpu_power,
        interrupts=Ports.interrupts,
        resctrl=Ports.resctrl,
        resource_export=Ports.resource_export,
        config_codec=config_codec,
    )


def core_over(
    adapters: providers.Container[Any], config: providers.Configuration
) -> providers.Container[CoreContainer]:
    """A :class:`CoreContainer` whose every port is the same-named provider of ``adapters``
    (a container of an :class:`~nrirp.app.composition.adapters.Adapters` class), sharing
    ``config``. An adapter overridden in ``adapters`` is the one the core uses."""
    ports = {name: getattr(adapters, name) for name in Ports.dependencies}
    return providers.Container(CoreContainer, config=config, **ports)
