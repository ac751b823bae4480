"""The base set of adapters: one provider per port, as a host agent on a real node has them.

An environment's adapters container subclasses :class:`Adapters` and redefines only what
differs (``app/daemon``, ``app/simulator``); the embedded engine (``app/embed``) uses the base
set as it is. Every provider's type is the port's, declared once in
:class:`~nrirp.app.composition.core.Ports`, so mypy checks each adapter, here and in every
environment.

Writing a subclass: refer to inherited providers through the base class
(``Adapters.config.sysfs_root``), and redefine together the providers that depend on each other
(a redefinition is not seen by inherited providers that use the old one).

Configuration keys: ``sysfs_root`` (the sysfs tree to discover the hardware and read topology
hints from, ``/sys``), ``memory_types`` (``{node: MemoryType}`` overrides for discovery).
"""

from __future__ import annotations

from collections.abc import Mapping

from dependency_injector import providers

from nrirp.adapters.documents import YamlAnnotationParser
from nrirp.adapters.memory import InMemoryStateStore
from nrirp.adapters.sysfs import SysfsDiscovery, SysfsTopologyHints
from nrirp.adapters.system import LoggingDecisionLog, SystemClock, ThreadTimers
from nrirp.app.composition.core import Ports
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
from nrirp.domain.ports.state_store import StateStore
from nrirp.domain.ports.timers import Timers
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import MemoryType

DEFAULT_SYSFS_ROOT = "/sys"


def sysfs_discovery(
    root: str | None, memory_types: Mapping[int, MemoryType] | None
) -> SysfsDiscovery:
    return SysfsDiscovery(root or DEFAULT_SYSFS_ROOT, memory_types)


def sysfs_topology_hints(root: str | None) -> SysfsTopologyHints:
    return SysfsTopologyHints(root or DEFAULT_SYSFS_ROOT)


class Adapters(Ports):
    """The base set: hardware and topology hints from sysfs, state in memory, no host
    control (per container, nor host-wide: CPU power, interrupts, resctrl, resource export)
    and no metrics, the system clock, decisions to the ``nrirp.decisions`` logger,
    thread timers, the YAML annotation parser, no node agent (``kubernetes``), no recorder
    (``inbound_observer``: ``nrirp run --record`` sets one).
    ``runtime_updates`` has no default: the environment provides it (the NRI plugin's, or
    the host agent's own)."""

    config = providers.Configuration()

    # annotated like Ports (mypy checks they agree), so that an environment may fill a port
    # with another kind of provider
    hardware: providers.Provider[HardwareDiscovery] = providers.Singleton(
        sysfs_discovery, config.sysfs_root, config.memory_types
    )
    state_store: providers.Provider[StateStore] = providers.Singleton(InMemoryStateStore)
    host_control: providers.Provider[HostControl | None] = providers.Object(None)
    clock: providers.Provider[Clock] = providers.Singleton(SystemClock)
    decision_log: providers.Provider[DecisionLog] = providers.Singleton(LoggingDecisionLog)
    metrics: providers.Provider[Metrics | None] = providers.Object(None)
    topology_hints: providers.Provider[TopologyHintSource | None] = providers.Singleton(
        sysfs_topology_hints, config.sysfs_root
    )
    timers: providers.Provider[Timers] = providers.Singleton(ThreadTimers)
    annotation_parser: providers.Provider[AnnotationParser] = providers.Singleton(
        YamlAnnotationParser
    )
    kubernetes: providers.Provider[Kubernetes | None] = providers.Object(None)
    cpu_power: providers.Provider[CPUPowerControl | None] = providers.Object(None)
    interrupts: providers.Provider[InterruptControl | None] = providers.Object(None)
    resctrl: providers.Provider[ResctrlControl | None] = providers.Object(None)
    resource_export: providers.Provider[ResourceExport | None] = providers.Object(None)
    inbound_observer: providers.Provider[InboundObserver | None] = providers.Object(None)
