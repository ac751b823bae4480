"""The daemon's composition (``nrirp run``): real adapters and our NRI plugin."""

from __future__ import annotations

from dependency_injector import containers, providers

from nrirp.adapters.memory import LastDecisions
from nrirp.adapters.metrics import MetricsRecorder
from nrirp.adapters.nri.resmgr.plugin import ConnectionObserver, ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.service import PluginService
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.stub import CloseHook, IdentityError, Stub
from nrirp.adapters.nri.stub.scope import HANDLERS
from nrirp.adapters.storage import FileStateStore
from nrirp.adapters.system import LoggingDecisionLog
from nrirp.adapters.system.latency import bulk_allocation
from nrirp.app.composition import Adapters, core_over
from nrirp.app.composition.node_agent import daemon_topology_hints, kubernetes_agent
from nrirp.app.daemon import host
from nrirp.app.daemon.front import DaemonFront, FrontStartError
from nrirp.app.daemon.health import RuntimeConnection
from nrirp.app.daemon.nri_front import NriFront
from nrirp.app.daemon.observability import Observability
from nrirp.app.daemon.status import ConfigState
from nrirp.domain.ports.decisions import DecisionLog
from nrirp.domain.ports.kubernetes import Kubernetes
from nrirp.domain.ports.metrics import Metrics
from nrirp.domain.ports.topology_hints import TopologyHintSource

DEFAULT_STATE_DIR = "/var/lib/nrirp"
DEFAULT_CGROUP_ROOT = "/sys/fs/cgroup"
DEFAULT_PLUGIN_NAME = "resource-manager"
DEFAULT_PLUGIN_INDEX = "90"


def file_state_store(state_dir: str | None, recorder: MetricsRecorder) -> FileStateStore:
    """The state file; its writer steps aside while an NRI request is being handled."""
    return FileStateStore(
        state_dir or DEFAULT_STATE_DIR, on_write=recorder.state_written, yield_to=HANDLERS
    )


def nri_stub(
    plugin: ResourceManagerPlugin,
    name: str | None,
    index: str | None,
    socket_path: str | None,
    on_close: CloseHook | None = None,
) -> Stub:
    """The plugin's stub: external (``socket_path``, reconnecting) unless the runtime started
    the process (``NRI_PLUGIN_SOCKET``); name and index default like the reference's. A
    name or index the runtime would refuse (``--plugin-index 1``, ``NRI_PLUGIN_IDX=5``) is a
    :class:`FrontStartError`: ``nrirp run`` exits with code 2 and one line."""
    try:
        return Stub(
            plugin,
            name=name,
            index=index,
            socket_path=socket_path,
            on_close=on_close,
            default_name=DEFAULT_PLUGIN_NAME,
            default_index=DEFAULT_PLUGIN_INDEX,
            eager=True,  # the manager's handlers never wait: a task and a loop turn less each
        )
    except IdentityError as exc:
        raise FrontStartError(str(exc)) from None


def as_metrics(recorder: MetricsRecorder) -> Metrics:
    return recorder


def as_decision_log(decisions: LastDecisions) -> DecisionLog:
    return decisions


def connection_observer(connection: RuntimeConnection) -> ConnectionObserver:
    return connection.observer()


def connection_close_hook(connection: RuntimeConnection) -> CloseHook:
    return connection.lost


class DaemonAdapters(Adapters):
    """The base set, with the state file under ``state_dir`` (``/var/lib/nrirp``), cgroupfs
    under ``cgroup_root`` (``/sys/fs/cgroup``) for what NRI cannot carry, updates sent over
    NRI, metrics recorded for export (``recorder``, also told of state writes) and each
    container's last decision remembered for ``nrirp status`` (``decisions``)."""

    recorder = providers.Singleton(MetricsRecorder)
    metrics: providers.Provider[Metrics | None] = providers.Callable(as_metrics, recorder)
    decisions = providers.Singleton(LastDecisions, providers.Singleton(LoggingDecisionLog))
    decision_log: providers.Provider[DecisionLog] = providers.Callable(as_decision_log, decisions)
    state_store = providers.Singleton(file_state_store, Adapters.config.state_dir, recorder)
    cgroups = providers.Singleton(host.cgroupfs, Adapters.config.cgroup_root)
    host_control = providers.Singleton(
        host.host_control,
        cgroups,
        Adapters.config.sysfs_root,
        Adapters.config.host_controls,
    )
    cpu_power = providers.Singleton(
        host.cpu_power,
        Adapters.config.sysfs_root,
        Adapters.config.state_dir,
        Adapters.config.host_controls,
    )
    interrupts = providers.Singleton(
        host.interrupts,
        Adapters.config.sysfs_root,
        Adapters.config.state_dir,
        Adapters.config.host_controls,
    )
    resctrl = providers.Singleton(
        host.resctrl,
        Adapters.config.sysfs_root,
        Adapters.config.state_dir,
        Adapters.config.host_controls,
    )
    resource_export = providers.Singleton(
        host.resource_export, Adapters.config.state_dir, Adapters.config.host_controls
    )
    runtime_updates = providers.Singleton(NriRuntimeUpdates)
    kubernetes: providers.Provider[Kubernetes | None] = providers.Singleton(
        kubernetes_agent, Adapters.config.agent
    )
    topology_hints: providers.Provider[TopologyHintSource | None] = providers.Singleton(
        daemon_topology_hints, Adapters.config.sysfs_root, Adapters.config.pod_resources_socket
    )


class DaemonContainer(containers.DeclarativeContainer):
    """``nrirp run``: :class:`DaemonAdapters` feeding the core, and the ``front`` that drives
    it: by default the NRI ``plugin``, its ``stub`` and the ``service`` running both
    (:class:`~nrirp.app.daemon.nri_front.NriFront`, with ``connection`` following the runtime
    connection); the engine-API modes override ``front`` (``engine_api.use_engine_api``), and
    then none of the NRI parts is built.

    ``config_state`` follows the configuration's source and generation, and
    ``observability`` serves the metrics, health and status endpoints (readiness: the front's
    state).

    Configuration keys: those of the core and the adapters, plus ``nri_socket``
    (``/var/run/nri/nri.sock``), ``plugin_name`` (``resource-manager``) and ``plugin_index``
    (``90``)."""

    config = providers.Configuration()
    adapters = providers.Container(DaemonAdapters, config=config)
    core = core_over(adapters, config)

    connection = providers.Singleton(RuntimeConnection, adapters.recorder)
    config_state = providers.Singleton(ConfigState)
    plugin = providers.Singleton(
        ResourceManagerPlugin,
        core.resource_manager,
        adapters.runtime_updates,
        providers.Factory(connection_observer, connection),
        providers.Object(bulk_allocation),
    )
    stub = providers.Singleton(
        nri_stub,
        plugin,
        config.plugin_name,
        config.plugin_index,
        config.nri_socket,
        providers.Factory(connection_close_hook, connection),
    )
    service = providers.Singleton(PluginService, stub, adapters.runtime_updates)
    front: providers.Provider[DaemonFront] = providers.Singleton(
        NriFront, plugin, stub, service, connection
    )
    observability = providers.Singleton(
        Observability,
        manager=core.resource_manager,
        recorder=adapters.recorder,
        serving=front.provided.state,
        decisions=adapters.decisions,
        config_state=config_state,
        plugin_name=front.provided.name,
        state_dir=adapters.state_store.provided.directory,
    )
