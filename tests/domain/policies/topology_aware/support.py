"""Builders for topology-aware policy tests: machines, configs, pods, a started manager."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import attrs

from nrirp.adapters.fakehw import expected_machine
from nrirp.adapters.fakehw.catalogue import load_machine
from nrirp.adapters.memory import (
    FakeClock,
    InMemoryHostControl,
    InMemoryStateStore,
    ManualTimers,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.domain.config import PolicyConfig, load_policy_config
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod, shares_from_millis
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.pipeline.results import CreateResult
from nrirp.domain.policies.topology_aware import TopologyAwarePolicy
from nrirp.domain.policies.topology_aware.allocations import Allocations
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import CPU, Machine, NumaNode
from tests.support.documents import ANNOTATIONS

GiB = 1 << 30
DOMAIN = "resource-policy.nri.io"


@cache
def catalogue(name: str) -> Machine:
    return expected_machine(load_machine(name))


def tiny_machine(cpus: int = 2, isolated: str = "") -> Machine:
    """One package, ``cpus`` single-thread cores on node 0 (like this VM)."""
    return Machine.build(
        [
            CPU(id=i, package_id=0, die_id=0, cluster_id=i, core_id=i, node_id=0)
            for i in range(cpus)
        ],
        [NumaNode(id=0, cpus=CPUSet.range(0, cpus), memory_bytes=8 * GiB)],
        isolated=CPUSet.parse(isolated),
    )


def config(spec: Mapping[str, Any] | None = None, **fields: Any) -> PolicyConfig:
    """A topology-aware config: ``reservedResources: {cpu: 750m}`` unless given."""
    data: dict[str, Any] = {"reservedResources": {"cpu": "750m"}}
    data.update(spec or {})
    data.update(fields)
    return load_policy_config("topology-aware", data)


def anno(key: str, value: str, container: str | None = None) -> dict[str, str]:
    full = f"{key}.{DOMAIN}"
    if container is not None:
        full += f"/container.{container}"
    return {full: value}


_PARENTS = {
    "BestEffort": "/kubepods/besteffort/pod{}",
    "Burstable": "/kubepods/burstable/pod{}",
    "Guaranteed": "/kubepods/pod{}",
}


def make_pod(
    name: str,
    qos: str = "Burstable",
    *,
    namespace: str = "default",
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Pod:
    return Pod(
        id=f"pod-{name}",
        name=name,
        uid=f"uid-{name}",
        namespace=namespace,
        cgroup_parent=_PARENTS[qos].format(name),
        annotations=dict(annotations or {}),
        labels=dict(labels or {}),
    )


def make_container(
    pod: Pod,
    name: str = "c",
    *,
    cpu: int = 0,
    limit: int | None = None,
    memory: int | None = None,
    **kw: Any,
) -> Container:
    """``cpu``/``limit`` in mCPU (Guaranteed: pass limit == cpu), ``memory`` limit in bytes."""
    quota = limit * 100 if limit else None
    return Container(
        id=f"{pod.id}-{name}",
        pod_id=pod.id,
        name=name,
        resources=LinuxResources(
            cpu_shares=shares_from_millis(cpu) if cpu else 2,
            cpu_quota=quota,
            cpu_period=100_000 if quota else None,
            memory_limit=memory,
        ),
        **kw,
    )


@attrs.define
class Rig:
    manager: ResourceManager
    policy: TopologyAwarePolicy
    updates: RecordingRuntimeUpdates
    store: InMemoryStateStore
    log: RecordingDecisionLog
    clock: FakeClock
    timers: ManualTimers
    machine: Machine
    host: InMemoryHostControl

    @property
    def alloc(self) -> Allocations:
        return self.policy.allocations

    def run(
        self,
        name: str,
        qos: str = "Burstable",
        *,
        cpu: int = 0,
        limit: int | None = None,
        memory: int | None = None,
        namespace: str = "default",
        annotations: Mapping[str, str] | None = None,
        **kw: Any,
    ) -> tuple[Pod, Container, CreateResult]:
        """Create a one-container pod and move it to running."""
        if qos == "Guaranteed" and limit is None:
            limit = cpu
            memory = memory or GiB
        pod = make_pod(name, qos, namespace=namespace, annotations=annotations)
        ctr = make_container(pod, cpu=cpu, limit=limit, memory=memory, **kw)
        self.manager.run_pod(pod)
        result = self.manager.create_container(pod, ctr)
        running = attrs.evolve(ctr, state=ContainerState.RUNNING)
        self.manager.post_create(pod, running)
        self.manager.post_start(pod, running)
        return pod, ctr, result

    def stop(self, pod: Pod, ctr: Container) -> list[Any]:
        updates = self.manager.stop_container(pod, ctr)
        self.manager.remove_container(pod, ctr)
        return updates

    def ctr(self, ctr: Container) -> Container:
        found = self.manager.container(ctr.id)
        assert found is not None
        return found

    def cpus(self, ctr: Container) -> CPUSet:
        cpus = self.ctr(ctr).cpus
        assert cpus is not None
        return cpus

    def mems(self, ctr: Container) -> CPUSet:
        mems = self.ctr(ctr).mems
        assert mems is not None
        return mems

    def tags(self, ctr: Container) -> Mapping[str, str]:
        return self.ctr(ctr).tags

    def pool(self, ctr: Container) -> str:
        return self.tags(ctr)["topology-aware.pool"]

    def kind(self, ctr: Container) -> str:
        return self.tags(ctr)["topology-aware.kind"]


def make_rig(
    machine: str | Machine = "box-16",
    cfg: PolicyConfig | None = None,
    *,
    store: InMemoryStateStore | None = None,
    hints: TopologyHintSource | None = None,
    start: bool = True,
    clock: FakeClock | None = None,
) -> Rig:
    hw = catalogue(machine) if isinstance(machine, str) else machine
    clock = clock or FakeClock()
    timers = ManualTimers(clock)
    store = store or InMemoryStateStore()
    updates = RecordingRuntimeUpdates()
    log = RecordingDecisionLog()
    policy = TopologyAwarePolicy()
    host = InMemoryHostControl()
    manager = ResourceManager(
        host=host,
        policy=policy,
        machine=hw,
        store=store,
        updates=updates,
        clock=clock,
        decisions=log,
        hints=hints,
        timers=timers,
        annotation_parser=ANNOTATIONS,
    )
    if start:
        manager.start(cfg)
    return Rig(manager, policy, updates, store, log, clock, timers, hw, host)
