"""``Engine``: the resource manager for a host agent that owns the runtime side itself.

The agent (koordlet-style: it already receives pod and container lifecycle hooks from its
runtime, through NRI, a CRI proxy or its own hooks) builds an engine with its adapters and
calls one method per hook with neutral objects; the engine returns what to change:

================================  =========================================================
hook (koordlet / NRI)             engine method -> result
================================  =========================================================
Synchronize                       :meth:`synchronize` -> updates for existing containers
RunPodSandbox                     :meth:`run_pod_sandbox`
StopPodSandbox / RemovePodSandbox :meth:`stop_pod_sandbox` / :meth:`remove_pod_sandbox`
CreateContainer                   :meth:`create_container` -> adjustment + updates (others)
PostCreateContainer               :meth:`post_create_container`
StartContainer / PostStart...     :meth:`start_container` / :meth:`post_start_container`
UpdateContainer                   :meth:`update_container` -> updates
PostUpdateContainer               :meth:`post_update_container`
StopContainer                     :meth:`stop_container` -> updates for others
RemoveContainer                   :meth:`remove_container`
================================  =========================================================

Updates the runtime did not ask for (after a reconfiguration, a policy event, a removal) go to
the agent's ``runtime_updates`` adapter. A refusal raises :class:`OperationFailedError` whose
``reason`` the agent passes on (the container's creation fails with it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, cast

from dependency_injector import providers

from nrirp.adapters.documents import load_policy_config
from nrirp.app.embed.checks import check_all, check_container, check_pod, check_resources
from nrirp.app.embed.composition import EmbeddedContainer
from nrirp.app.embed.machines import hints_without_host, named_machine
from nrirp.domain.config import ConfigError, PolicyConfig, SpecRegistration
from nrirp.domain.model import Container, LinuxResources, Pod, Update
from nrirp.domain.pipeline import (
    CreateResult,
    ReconfigureOutcome,
    ResourceManager,
    StartOutcome,
)
from nrirp.domain.policy import MetricSample, Policy, PolicyEvent, PolicyRegistry, TopologyZone
from nrirp.domain.policy.explanation import Explanation
from nrirp.domain.ports.clock import Clock
from nrirp.domain.ports.decisions import DecisionLog
from nrirp.domain.ports.hardware import HardwareDiscovery
from nrirp.domain.ports.host_control import HostControl
from nrirp.domain.ports.metrics import Metrics
from nrirp.domain.ports.runtime_updates import RuntimeUpdates
from nrirp.domain.ports.state_store import StateStore
from nrirp.domain.ports.timers import Timers
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine, MemoryType

T = TypeVar("T")

ConfigSource = PolicyConfig | Mapping[str, Any] | str | bytes
"""A configuration: loaded, or a bare spec / custom resource as data or YAML/JSON text (bytes:
UTF-8), read within the config budget (``nrirp.adapters.documents``)."""


class CallbackRuntimeUpdates:
    """``RuntimeUpdates`` over a plain function. The function is called with the pipeline
    held, so it must only hand the updates over (queue them), never wait for the runtime."""

    def __init__(self, deliver: Callable[[Sequence[Update]], None]) -> None:
        self._deliver = deliver

    def submit(self, updates: Sequence[Update]) -> None:
        self._deliver(list(updates))


def _as_runtime_updates(
    value: RuntimeUpdates | Callable[[Sequence[Update]], None],
) -> RuntimeUpdates:
    submit = getattr(value, "submit", None)
    if callable(submit):
        return cast(RuntimeUpdates, value)  # it has the port's one method
    if callable(value):
        return CallbackRuntimeUpdates(value)
    raise TypeError("runtime_updates must have submit(updates) or be a function of the updates")


def _use(provider: providers.Provider[T], value: T | None) -> None:
    """Have ``provider`` (a port's adapter, or a core part) provide ``value`` when given."""
    if value is not None:
        provider.override(providers.Object(value))


def _make_known(registry: PolicyRegistry, policy: type[Policy]) -> None:
    """Register ``policy`` unless its name is taken; a taken name must have its config type."""
    registered = registry.spec_registration(policy.name)
    if registered is None:
        registry.register(policy)
        return
    own = SpecRegistration.checked(policy.name, registered.kind, policy.config_type)
    if own != registered:
        raise ValueError(
            f"policy {policy.name!r} is already registered with config type"
            f" {registered.spec_class.__name__}, not {own.spec_class.__name__}"
        )


class Engine:
    """One resource-manager engine: a policy over the pods and containers of one node.

    Build it with :meth:`build` (or wrap an :class:`EmbeddedContainer` you composed yourself),
    call :meth:`start`, then feed the lifecycle hooks. All methods are thread-safe and run one
    at a time.
    """

    def __init__(self, container: EmbeddedContainer, config: PolicyConfig | None = None) -> None:
        self.container = container
        self._config = config

    @classmethod
    def build(
        cls,
        policy: str | Policy | type[Policy],
        *,
        runtime_updates: RuntimeUpdates | Callable[[Sequence[Update]], None],
        config: ConfigSource | None = None,
        config_file: str | None = None,
        machine: Machine | str | None = None,
        hardware: HardwareDiscovery | None = None,
        sysfs_root: str | None = None,
        memory_types: Mapping[int, MemoryType] | None = None,
        state_store: StateStore | None = None,
        host_control: HostControl | None = None,
        clock: Clock | None = None,
        decision_log: DecisionLog | None = None,
        metrics: Metrics | None = None,
        topology_hints: TopologyHintSource | None = None,
        timers: Timers | None = None,
        policy_modules: Sequence[str] | None = None,
    ) -> Engine:
        """An engine on :class:`EmbeddedContainer` with the agent's adapters.

        ``policy`` is a registered name (built-in, or from ``policy_modules``: module names or
        ``.py`` files; see below for the default), a policy class or a policy object
        (its class is registered with the engine's policies: its ``config_type`` configures it,
        nothing else to register). The configuration
        is ``config`` or the file ``config_file`` (default: the saved one, else the policy's
        defaults). Hardware: ``machine`` (a ``Machine``, or a catalogue machine's name such as
        ``"box-16"`` or a machine spec file), else ``hardware`` discovery, else the sysfs tree
        at ``sysfs_root`` (``/sys``). State is kept in memory unless ``state_store`` is given;
        no host-side settings are applied without ``host_control``; decisions are logged to
        the ``nrirp.decisions`` logger unless ``decision_log`` is given; policy timers run on
        threads unless ``timers`` is given.

        Topology hints: ``topology_hints``, else those of the sysfs tree. An engine on a given
        machine (``machine`` or ``hardware``) reads nothing of the host unless asked: its
        hints are its fake machine's devices (or the tree its ``hardware`` reads, or none;
        ``sysfs_root`` asks for that tree's), and it loads no policy modules unless
        ``policy_modules`` names them (``NRIRP_POLICY_MODULES`` is read only by an engine on
        the host's hardware; pass ``policy_modules_from_env()`` to ask for it).

        Raises ``TypeError`` when both ``config`` and ``config_file`` are given,
        ``ConfigError`` for an invalid configuration, ``UnknownPolicyError``,
        ``PolicyModuleError``, ``ConfigFileError``, ``HardwareDiscoveryError``, or
        ``UnknownMachineError`` / ``MachineSpecError`` for a ``machine`` name.
        """
        if config is not None and config_file is not None:
            raise TypeError("give the configuration as config or as config_file, not both")
        name = policy if isinstance(policy, str) else policy.name
        on_given_machine = machine is not None or hardware is not None
        if isinstance(machine, str):
            named = named_machine(machine, memory_types)
            machine, hardware = named.machine, named.hardware or hardware
            if topology_hints is None and sysfs_root is None:
                topology_hints = named.hints
        if on_given_machine and topology_hints is None and sysfs_root is None:
            topology_hints = hints_without_host(hardware)
        if on_given_machine and policy_modules is None:
            policy_modules = ()
        container = EmbeddedContainer()
        container.config.from_dict(
            {
                "policy": name,
                "config_file": config_file,
                "policy_modules": None if policy_modules is None else list(policy_modules),
                "sysfs_root": sysfs_root,
                "memory_types": dict(memory_types or {}),
            }
        )
        adapters, core = container.adapters.container, container.core.container
        _use(adapters.runtime_updates, _as_runtime_updates(runtime_updates))
        _use(adapters.hardware, hardware)
        _use(adapters.state_store, state_store)
        _use(adapters.host_control, host_control)
        _use(adapters.clock, clock)
        _use(adapters.decision_log, decision_log)
        _use(adapters.metrics, metrics)
        _use(adapters.topology_hints, topology_hints)
        _use(adapters.timers, timers)
        _use(core.machine, machine)
        registry = core.policy_registry()
        if isinstance(policy, type):
            _make_known(registry, policy)
            core.policy.override(providers.Singleton(policy))
        elif not isinstance(policy, str):
            _make_known(registry, type(policy))
            _use(core.policy, policy)
        loaded: PolicyConfig | None = None
        if config is not None:
            loaded = (
                config
                if isinstance(config, PolicyConfig)
                else load_policy_config(name, config, registry)
            )
        elif config_file is not None:
            loaded = core.policy_config()  # read now: a missing or bad file fails here
        engine = cls(container, loaded)
        engine.manager  # noqa: B018 - build now: bad hardware, policy or config fail here
        return engine

    # ------------------------------------------------------------------ the parts
    @property
    def manager(self) -> ResourceManager:
        """The resource manager (the pipeline) this engine drives."""
        return self.container.core.container.resource_manager()

    @property
    def machine(self) -> Machine:
        return self.manager.machine

    @property
    def memory_capacity(self) -> int:
        """The node's memory in bytes (kubelet's OOM score adjustment needs it)."""
        return sum(n.memory_bytes for n in self.machine.nodes.values())

    @property
    def policy(self) -> Policy:
        return self.manager.policy

    @property
    def config(self) -> PolicyConfig | None:
        """The configuration in force."""
        return self.manager.config

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> StartOutcome:
        """Restore the saved state (if the state store has one) and start the policy.

        Raises ``StateRestoreError`` or ``OperationFailedError`` (the policy refused its
        configuration); nothing is changed then."""
        config = self._config
        if config is None:
            config = self.container.core.container.policy_config()
        return self.manager.start(config)

    def close(self) -> None:
        """Cancel pending policy timers, then flush and close the state store (each if it
        can be closed)."""
        adapters = self.container.adapters.container
        for adapter in (adapters.timers(), adapters.state_store()):
            close = getattr(adapter, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> Engine:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # ------------------------------------------------------------------ hooks
    def synchronize(self, pods: Sequence[Pod], containers: Sequence[Container]) -> list[Update]:
        """Everything the runtime runs (at start and after a reconnect): containers gone are
        released, new ones allocated, survivors keep their resources.

        The hooks raise ``ValueError`` for resources no runtime reports (a negative CPU
        shares, period, realtime period or hugepage limit), naming the field."""
        check_all(pods, containers)
        return self.manager.synchronize(pods, containers)

    def run_pod_sandbox(self, pod: Pod) -> None:
        check_pod(pod)
        self.manager.run_pod(pod)

    def stop_pod_sandbox(self, pod: Pod) -> None:
        self.manager.stop_pod(pod)

    def remove_pod_sandbox(self, pod: Pod) -> None:
        self.manager.remove_pod(pod)

    def create_container(self, pod: Pod, container: Container) -> CreateResult:
        """The adjustment for the container being created (``result.adjustment``) and updates
        for other containers (``result.updates``). Raises ``OperationFailedError`` when the
        policy refuses it; fail the creation with ``error.reason`` then."""
        check_pod(pod)
        check_container(container)
        return self.manager.create_container(pod, container)

    def post_create_container(self, pod: Pod, container: Container) -> None:
        self.manager.post_create(pod, container)

    def start_container(self, pod: Pod, container: Container) -> None:
        self.manager.start_container(pod, container)

    def post_start_container(self, pod: Pod, container: Container) -> None:
        """The container runs (give its ``pid``/``cgroups_path``: host settings apply now)."""
        self.manager.post_start(pod, container)

    def update_container(
        self, pod: Pod, container: Container, resources: LinuxResources
    ) -> list[Update]:
        """The container's resources are being changed to ``resources``; the updates may
        include one for this container that amends the change."""
        check_resources(resources, f"container {container.name or container.id}.resources")
        return self.manager.update_container(pod, container, resources)

    def post_update_container(self, pod: Pod, container: Container) -> None:
        self.manager.post_update(pod, container)

    def stop_container(self, pod: Pod, container: Container) -> list[Update]:
        """The container stopped; returns updates for the others."""
        return self.manager.stop_container(pod, container)

    def remove_container(self, pod: Pod, container: Container) -> None:
        self.manager.remove_container(pod, container)

    # ------------------------------------------------------------------ control
    def reconfigure(self, config: ConfigSource) -> ReconfigureOutcome:
        """Apply a new configuration; if it is invalid or the policy refuses it, the old one
        stays and the outcome says why."""
        if not isinstance(config, PolicyConfig):
            try:
                registry = self.container.core.container.policy_registry()
                config = load_policy_config(self.policy.name, config, registry)
            except ConfigError as exc:  # the loader's one error class, whatever went wrong
                return ReconfigureOutcome(False, "; ".join(exc.shown_problems()))
        return self.manager.reconfigure(config)

    def inject_event(self, event: PolicyEvent) -> None:
        """Have the policy handle ``event`` (a timer, an external signal)."""
        self.manager.inject_event(event)

    def updates_failed(self, updates: Sequence[Update], reason: str) -> None:
        """The runtime refused ``updates`` the engine handed to ``runtime_updates``."""
        self.manager.updates_failed(updates, reason)

    # ------------------------------------------------------------------ queries
    def pods(self) -> list[Pod]:
        return self.manager.pods()

    def containers(self) -> list[Container]:
        return self.manager.containers()

    def container_by_id(self, container_id: str) -> Container | None:
        """The container as the engine holds it (its ``resources`` after every decision)."""
        return self.manager.container(container_id)

    def describe(self) -> Mapping[str, Any]:
        return self.manager.describe()

    def explain(self, container: str) -> Explanation:
        """Why ``container`` (an id, ``namespace/pod/name``, ``pod/name`` or a name only one
        container has; held or one of the last refused) sits where it does or was refused
        (docs/explain.md); raises :class:`~nrirp.domain.pipeline.UnknownContainerError`."""
        return self.manager.explain(container)

    def topology_zones(self) -> Sequence[TopologyZone]:
        return self.manager.topology_zones()

    def policy_metrics(self) -> Sequence[MetricSample]:
        return self.manager.policy_metrics()
