"""Shared builders for domain tests: a small machine, pods, containers, recording fakes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

from nrirp.adapters.memory import (
    FakeClock,
    InMemoryStateStore,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod, shares_from_millis
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policy import (
    MetricSample,
    PolicyContext,
    PolicyError,
    PolicyEvent,
    TopologyZone,
)
from nrirp.domain.topology import CPU, Machine, NumaNode

GiB = 1 << 30


def small_machine() -> Machine:
    """2 NUMA nodes, 4 CPUs each, 8 GiB each."""
    cpus = [
        CPU(id=i, package_id=0, die_id=0, cluster_id=i // 2, core_id=i // 2, node_id=i // 4)
        for i in range(8)
    ]
    nodes = [
        NumaNode(id=0, cpus=CPUSet.parse("0-3"), memory_bytes=8 * GiB),
        NumaNode(id=1, cpus=CPUSet.parse("4-7"), memory_bytes=8 * GiB),
    ]
    return Machine.build(cpus, nodes)


def node_across_packages_machine() -> Machine:
    """Two NUMA nodes, the first with a CPU in each of two packages (a machine spec cannot
    describe it)."""
    cpus = [CPU(0, 0, 0, 0, 0, 0), CPU(1, 1, 0, 1, 1, 0), CPU(2, 1, 0, 2, 2, 1)]
    nodes = [
        NumaNode(0, CPUSet.parse("0-1"), GiB, distances={0: 10, 1: 20}),
        NumaNode(1, CPUSet.parse("2"), GiB, distances={0: 20, 1: 10}),
    ]
    return Machine.build(cpus, nodes)


def make_pod(name: str = "pod0", namespace: str = "default", **kw: Any) -> Pod:
    kw.setdefault("cgroup_parent", f"/kubepods/burstable/pod-{name}")
    return Pod(id=f"id-{name}", name=name, uid=f"uid-{name}", namespace=namespace, **kw)


def make_container(
    pod: Pod,
    name: str = "ctr0",
    *,
    millis: int = 500,
    limit_millis: int | None = None,
    memory_limit: int | None = None,
    state: ContainerState = ContainerState.CREATING,
    **kw: Any,
) -> Container:
    quota = limit_millis * 100 if limit_millis else None
    return Container(
        id=f"id-{pod.name}-{name}",
        pod_id=pod.id,
        name=name,
        state=state,
        resources=LinuxResources(
            cpu_shares=shares_from_millis(millis),
            cpu_quota=quota,
            cpu_period=100_000 if quota else None,
            memory_limit=memory_limit,
        ),
        **kw,
    )


@attrs.frozen
class FakeConfig:
    """Stands in for a PolicyConfig where only ``.policy`` and a payload matter."""

    policy: str
    cpus: str = "0-7"


class FakeCodec:
    def dump(self, config: Any) -> Mapping[str, Any]:
        return {"policy": config.policy, "cpus": config.cpus}

    def load(self, policy: str, document: Mapping[str, Any]) -> Any:
        if set(document) != {"policy", "cpus"}:
            raise ValueError(f"bad config document {dict(document)}")
        return FakeConfig(document["policy"], document["cpus"])


class RecordingPolicy:
    """Gives every container the next free CPU of its pool; records every call in ``log``.

    ``log`` is shared with a :class:`RecordingController` so that tests can check ordering.
    """

    name: ClassVar[str] = "recording"
    description: ClassVar[str] = "test policy"
    config_type: ClassVar[type[Any] | None] = None

    def __init__(self, log: list[str] | None = None) -> None:
        self.log: list[str] = [] if log is None else log
        self.ctx: PolicyContext | None = None
        self.config: Any = None
        self.free = CPUSet()
        self.owner: dict[str, int] = {}
        self.fail_allocate: str | None = None
        self.fail_reconfigure: str | None = None
        self.events: list[PolicyEvent] = []
        self.on_event: Any = None
        self.synced: list[tuple[list[str], list[str]]] = []

    # policy port ---------------------------------------------------------
    def start(self, ctx: PolicyContext, config: Any) -> None:
        self.log.append("policy.start")
        self.ctx = ctx
        self.config = config
        self.free = CPUSet.parse(config.cpus) if config is not None else ctx.machine.all_cpus
        # rebuild bookkeeping from restored assignments
        for ctr in ctx.cache.active_containers():
            if ctr.cpus is not None and len(ctr.cpus) == 1:
                cpu = ctr.cpus.min()
                self.owner[ctr.id] = cpu
                self.free = self.free - CPUSet.of(cpu)

    def reconfigure(self, config: Any) -> None:
        self.log.append("policy.reconfigure")
        if self.fail_reconfigure:
            raise PolicyError(self.fail_reconfigure)
        self.config = config

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        self.log.append("policy.sync")
        self.synced.append(([c.id for c in added], [c.id for c in removed]))
        for ctr in removed:
            self._release(ctr)
        for ctr in added:
            self._allocate(ctr)

    def allocate(self, container: Container) -> None:
        self.log.append(f"policy.allocate {container.name}")
        self._allocate(container)

    def release(self, container: Container) -> None:
        self.log.append(f"policy.release {container.name}")
        self._release(container)

    def update(self, container: Container, resources: LinuxResources) -> None:
        self.log.append(f"policy.update {container.name}")
        assert self.ctx is not None
        if resources.memory_limit is not None:
            self.ctx.cache.set_memory_limit(container.id, resources.memory_limit)

    def handle_event(self, event: PolicyEvent) -> None:
        self.log.append(f"policy.event {event.kind}")
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def topology_zones(self) -> Sequence[TopologyZone]:
        return ()

    def metrics(self) -> Sequence[MetricSample]:
        return (MetricSample("free_cpus", float(len(self.free))),)

    def describe(self) -> Mapping[str, Any]:
        return {"free": str(self.free)}

    def export_state(self) -> Any:
        return {"owner": dict(sorted(self.owner.items()))}

    # helpers -------------------------------------------------------------
    def _allocate(self, container: Container) -> None:
        assert self.ctx is not None
        if self.fail_allocate:
            # change things first, then fail: the pipeline must undo the cache part
            self.ctx.cache.set_cpus(container.id, CPUSet.of(0))
            raise PolicyError(self.fail_allocate)
        if container.id in self.owner:
            return
        if not self.free:
            raise PolicyError(f"no free CPU for {container.name}")
        cpu = self.free.min()
        self.free = self.free - CPUSet.of(cpu)
        self.owner[container.id] = cpu
        self.ctx.cache.set_cpus(container.id, CPUSet.of(cpu))
        self.ctx.cache.set_mems(container.id, CPUSet.of(self.ctx.machine.node_of(cpu)))
        self.ctx.record_decision(container, f"cpu {cpu}")

    def _release(self, container: Container) -> None:
        cpu = self.owner.pop(container.id, None)
        if cpu is not None:
            self.free = self.free | CPUSet.of(cpu)


class RecordingController:
    """A controller named ``name`` that logs each hook call into a shared list."""

    def __init__(self, log: list[str], name: str = "recorder", done: bool = True) -> None:
        self.log = log
        self.name = name
        self.done = done

    def _hook(self, hook: str, container: Container) -> bool:
        self.log.append(f"{self.name}.{hook} {container.name}")
        return self.done

    def pre_create(self, ctx: Any, container: Container) -> bool:
        return self._hook("pre_create", container)

    def pre_start(self, ctx: Any, container: Container) -> bool:
        return self._hook("pre_start", container)

    def post_start(self, ctx: Any, container: Container) -> bool:
        return self._hook("post_start", container)

    def post_update(self, ctx: Any, container: Container) -> bool:
        return self._hook("post_update", container)

    def post_stop(self, ctx: Any, container: Container) -> bool:
        return self._hook("post_stop", container)


@attrs.define
class Rig:
    """A started resource manager with in-memory adapters."""

    manager: ResourceManager
    policy: RecordingPolicy
    store: InMemoryStateStore
    updates: RecordingRuntimeUpdates
    log: RecordingDecisionLog
    clock: FakeClock


def make_rig(
    *,
    store: InMemoryStateStore | None = None,
    policy: RecordingPolicy | None = None,
    config: FakeConfig | None = None,
    start: bool = True,
    **kw: Any,
) -> Rig:
    store = store or InMemoryStateStore()
    policy = policy or RecordingPolicy()
    updates = RecordingRuntimeUpdates()
    log = RecordingDecisionLog()
    clock = FakeClock()
    manager = ResourceManager(
        policy=policy,
        machine=small_machine(),
        store=store,
        updates=updates,
        clock=clock,
        decisions=log,
        config_codec=FakeCodec(),
        **kw,
    )
    if start:
        manager.start(config or FakeConfig("recording"))
    return Rig(manager, policy, store, updates, log, clock)
