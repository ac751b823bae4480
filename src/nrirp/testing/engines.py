"""An engine for tests: a policy on a fake machine with recording adapters, and the kubelet's
walk through the lifecycle hooks in one call (:meth:`EngineHarness.run`)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import attrs

from nrirp.adapters.memory import (
    FakeClock,
    InMemoryHostControl,
    InMemoryStateStore,
    ManualTimers,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.app.embed import ConfigSource, ContainerState, Engine
from nrirp.app.placement import Placement, placement_of
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Resources, Update
from nrirp.domain.model.kubelet import QuantityValue
from nrirp.domain.pipeline import CreateResult, ReconfigureOutcome
from nrirp.domain.policy import Policy
from nrirp.domain.topology import Machine
from nrirp.testing.builders import PodUnderTest

ContainerRef = Container | str
"""A container: the neutral value (its id counts), its id, or its ``namespace/pod/name``."""


@attrs.frozen
class RunningPod:
    """A pod :meth:`EngineHarness.run` started: its containers as created (by name) and each
    creation's result (adjustment and updates for others). Refused containers are missing
    from both and listed in ``refused`` with the reason."""

    pod: PodUnderTest
    containers: Mapping[str, Container]
    results: Mapping[str, CreateResult]
    refused: Mapping[str, str] = attrs.field(factory=dict)

    def __getitem__(self, name: str) -> Container:
        try:
            return self.containers[name]
        except KeyError:
            why = f" (refused: {self.refused[name]})" if name in self.refused else ""
            raise KeyError(f"pod {self.pod.name} has no running container {name!r}{why}") from None

    def __iter__(self) -> Iterator[Container]:
        return iter(self.containers.values())


class EngineHarness:
    """An :class:`~nrirp.app.embed.Engine` on a fake machine, with in-memory adapters a test
    can look into: ``updates`` (sent outside a reply), ``decisions`` (and notices), ``store``,
    ``host`` (host-side settings), ``timers`` (advance them by hand) and ``clock``.

    Build it with :meth:`build`; walk pods through their lifecycle with :meth:`run`,
    :meth:`resize` and :meth:`delete`; read what the policy decided with :meth:`cpus`,
    :meth:`mems` and :meth:`placement`.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        updates: RecordingRuntimeUpdates,
        decisions: RecordingDecisionLog,
        store: InMemoryStateStore,
        host: InMemoryHostControl,
        timers: ManualTimers,
        clock: FakeClock,
        rebuild: Mapping[str, Any],
    ) -> None:
        self.engine = engine
        self.updates = updates
        self.decisions = decisions
        self.store = store
        self.host = host
        self.timers = timers
        self.clock = clock
        self.pods: dict[str, RunningPod] = {}
        self._rebuild = dict(rebuild)

    @classmethod
    def build(
        cls,
        policy: str | Policy | type[Policy],
        *,
        machine: str | Machine = "box-16",
        config: ConfigSource | None = None,
        policy_modules: Sequence[str] = (),
        store: InMemoryStateStore | None = None,
        start: bool = True,
        **engine_options: Any,
    ) -> EngineHarness:
        """An engine for ``policy`` (a name, class or object) on ``machine`` (a catalogue
        name or a ``Machine``), configured with ``config`` (a mapping, YAML text, a loaded
        config; default: the policy's defaults), started unless ``start`` is false.
        ``policy_modules`` load further policies by module name or ``.py`` file; other
        keyword arguments go to :meth:`Engine.build` (``topology_hints``, ...)."""
        updates, decisions = RecordingRuntimeUpdates(), RecordingDecisionLog()
        store = store if store is not None else InMemoryStateStore()
        host, timers, clock = InMemoryHostControl(), ManualTimers(), FakeClock()
        engine = Engine.build(
            policy,
            runtime_updates=updates,
            config=config,
            machine=machine,
            policy_modules=list(policy_modules),
            state_store=store,
            host_control=host,
            decision_log=decisions,
            timers=timers,
            clock=clock,
            **engine_options,
        )
        harness = cls(
            engine,
            updates=updates,
            decisions=decisions,
            store=store,
            host=host,
            timers=timers,
            clock=clock,
            rebuild={
                "policy": policy if isinstance(policy, str | type) else type(policy),
                "machine": machine,
                "config": config,
                "policy_modules": policy_modules,
                **engine_options,
            },
        )
        if start:
            engine.start()
        return harness

    # ------------------------------------------------------------------ facts
    @property
    def machine(self) -> Machine:
        return self.engine.machine

    def container(self, ref: ContainerRef) -> Container:
        """The container as the engine holds it now (after every decision)."""
        return self.engine.container_by_id(self._id(ref)) or _missing(ref)

    def cpus(self, ref: ContainerRef) -> CPUSet | None:
        """The CPUs the policy gave the container (``None``: not restricted)."""
        return self.container(ref).resources.cpus

    def mems(self, ref: ContainerRef) -> CPUSet | None:
        """The memory nodes the policy gave the container (``None``: not restricted)."""
        return self.container(ref).resources.mems

    def placement(self) -> Placement:
        """Every container where the policy put it, with the policy's pools or balloons."""
        return placement_of(self.engine.manager)

    def describe(self) -> Mapping[str, Any]:
        return self.engine.describe()

    # ------------------------------------------------------------------ lifecycle
    def run(self, pod: PodUnderTest, *, refusals: bool = False) -> RunningPod:
        """:func:`run_pod` on this engine; the pod is remembered, so its containers can be
        named ``namespace/pod/container``."""
        running = run_pod(self.engine, pod, refusals=refusals)
        self.pods[f"{pod.namespace}/{pod.name}"] = running
        return running

    def resize(
        self,
        pod: PodUnderTest | RunningPod,
        name: str,
        *,
        requests: Mapping[str, QuantityValue] | None = None,
        limits: Mapping[str, QuantityValue] | None = None,
    ) -> list[Update]:
        """:func:`resize_container` on this engine (``pod``: as built, or as :meth:`run`
        returned it)."""
        return resize_container(self.engine, pod, name, requests=requests, limits=limits)

    def delete(self, pod: PodUnderTest | RunningPod) -> list[Update]:
        """:func:`delete_pod` on this engine (``pod``: as built, or as :meth:`run` returned
        it)."""
        pod = _under_test(pod)
        self.pods.pop(f"{pod.namespace}/{pod.name}", None)
        return delete_pod(self.engine, pod)

    def reconfigure(self, config: ConfigSource) -> ReconfigureOutcome:
        return self.engine.reconfigure(config)

    def restart(self) -> EngineHarness:
        """A new engine on the same state store (a daemon restart): it restores what this
        one saved. This one is closed."""
        self.close()
        again = EngineHarness.build(store=self.store, **self._rebuild)
        again.pods = dict(self.pods)
        return again

    def close(self) -> None:
        self.engine.close()

    # ------------------------------------------------------------------ helpers
    def _id(self, ref: ContainerRef) -> str:
        if isinstance(ref, Container):
            return ref.id
        if ref.count("/") == 2:
            namespace, pod, name = ref.split("/")
            running = self.pods.get(f"{namespace}/{pod}")
            if running is not None and name in running.pod.container_names:
                return running.pod.container_id(name)
        return ref


def _under_test(pod: PodUnderTest | RunningPod) -> PodUnderTest:
    return pod.pod if isinstance(pod, RunningPod) else pod


def _missing(ref: ContainerRef) -> Container:
    shown = ref.id if isinstance(ref, Container) else ref
    raise KeyError(f"the engine holds no container {shown!r}")


# ---------------------------------------------------------------------- on any engine
def run_pod(engine: Engine, pod: PodUnderTest, *, refusals: bool = False) -> RunningPod:
    """RunPodSandbox, then for each container CreateContainer, PostCreate, Start and
    PostStart (with a process id: host-side settings apply then), as a kubelet and a runtime
    call them. A refused creation raises ``OperationFailedError``, unless ``refusals`` is
    true: then the pod goes on with its other containers (as a kubelet would) and
    :attr:`RunningPod.refused` says why."""
    from nrirp.domain.pipeline import OperationFailedError

    sandbox = pod.sandbox
    engine.run_pod_sandbox(sandbox)
    containers: dict[str, Container] = {}
    results: dict[str, CreateResult] = {}
    refused: dict[str, str] = {}
    for number, name in enumerate(pod.container_names, start=1):
        ctr = pod.container(name, memory_capacity=engine.memory_capacity)
        try:
            results[name] = engine.create_container(sandbox, ctr)
        except OperationFailedError as error:
            if not refusals:
                raise
            refused[name] = error.reason
            continue
        created = ctr.with_state(ContainerState.CREATED)
        engine.post_create_container(sandbox, created)
        engine.start_container(sandbox, created)
        started = pod.container(
            name,
            memory_capacity=engine.memory_capacity,
            state=ContainerState.RUNNING,
            pid=1000 + number,
        )
        engine.post_start_container(sandbox, started)
        containers[name] = started
    return RunningPod(pod, containers, results, refused)


def resize_container(
    engine: Engine,
    pod: PodUnderTest | RunningPod,
    name: str,
    *,
    requests: Mapping[str, QuantityValue] | None = None,
    limits: Mapping[str, QuantityValue] | None = None,
) -> list[Update]:
    """An in-place resize of container ``name`` to new requests and limits (UpdateContainer,
    then PostUpdate); the updates the policy made."""
    from nrirp.app.embed import resources_of

    pod = _under_test(pod)
    held = engine.container_by_id(pod.container_id(name)) or _missing(pod.container_id(name))
    resources = resources_of(Resources.of(requests=requests, limits=limits))
    updates = engine.update_container(pod.sandbox, held, resources)
    engine.post_update_container(pod.sandbox, engine.container_by_id(held.id) or held)
    return updates


def delete_pod(engine: Engine, pod: PodUnderTest | RunningPod) -> list[Update]:
    """Stop and remove the pod's containers, then its sandbox (a kubelet's order); the
    updates the policy made for other containers on the way."""
    pod = _under_test(pod)
    sandbox = pod.sandbox
    updates: list[Update] = []
    for name in pod.container_names:
        held = engine.container_by_id(pod.container_id(name))
        if held is None:
            continue
        stopped = held.with_state(ContainerState.STOPPED)
        updates += engine.stop_container(sandbox, stopped)
        engine.remove_container(sandbox, stopped)
    engine.stop_pod_sandbox(sandbox)
    engine.remove_pod_sandbox(sandbox)
    return updates
