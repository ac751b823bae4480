"""Builders for balloons policy tests: configs, pods and a started resource manager."""

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
from nrirp.domain.policies.balloons import BalloonsPolicy
from nrirp.domain.policies.balloons.balloon import Balloon
from nrirp.domain.policies.balloons.engine import Engine
from nrirp.domain.ports.topology_hints import TopologyHintSource
from nrirp.domain.topology import Machine
from tests.support.documents import ANNOTATIONS

GiB = 1 << 30
DOMAIN = "resource-policy.nri.io"
BALLOON_KEY = "balloon.balloons.resource-policy.nri.io"


@cache
def catalogue(name: str) -> Machine:
    return expected_machine(load_machine(name))


def config(spec: Mapping[str, Any] | None = None, **fields: Any) -> PolicyConfig:
    """A balloons config: ``reservedResources: {cpu: 750m}`` unless given."""
    data: dict[str, Any] = {"reservedResources": {"cpu": "750m"}}
    data.update(spec or {})
    data.update(fields)
    return load_policy_config("balloons", data)


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
    created_at: float | None = None,
) -> Pod:
    return Pod(
        id=f"pod-{namespace}-{name}",
        name=name,
        uid=f"uid-{namespace}-{name}",
        namespace=namespace,
        cgroup_parent=_PARENTS[qos].format(name),
        annotations=dict(annotations or {}),
        labels=dict(labels or {}),
        created_at=created_at,
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
    policy: BalloonsPolicy
    updates: RecordingRuntimeUpdates
    store: InMemoryStateStore
    log: RecordingDecisionLog
    clock: FakeClock
    machine: Machine
    host: InMemoryHostControl

    @property
    def engine(self) -> Engine:
        return self.policy.engine

    def balloon(self, name: str) -> Balloon:
        for balloon in self.engine.balloons:
            if balloon.name == name:
                return balloon
        raise KeyError(f"no balloon {name} (have {[b.name for b in self.engine.balloons]})")

    def names(self) -> list[str]:
        return [b.name for b in self.engine.balloons]

    def pod(
        self,
        name: str,
        containers: Mapping[str, int],
        *,
        qos: str = "Burstable",
        namespace: str = "default",
        annotations: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        memory: int | None = None,
    ) -> tuple[Pod, list[Container]]:
        """Create a pod with containers ``name -> cpu request`` (all created and running)."""
        pod = make_pod(name, qos, namespace=namespace, annotations=annotations, labels=labels)
        self.manager.run_pod(pod)
        out = []
        for cname, cpu in containers.items():
            limit = cpu if qos == "Guaranteed" else None
            mem = memory if memory is not None else (GiB if qos == "Guaranteed" else None)
            ctr = make_container(pod, cname, cpu=cpu, limit=limit, memory=mem)
            self.manager.create_container(pod, ctr)
            running = attrs.evolve(ctr, state=ContainerState.RUNNING)
            self.manager.post_create(pod, running)
            self.manager.post_start(pod, running)
            out.append(ctr)
        return pod, out

    def run(
        self, name: str, cpu: int = 0, *, namespace: str = "default", **kw: Any
    ) -> tuple[Pod, Container]:
        pod, ctrs = self.pod(name, {"c": cpu}, namespace=namespace, **kw)
        return pod, ctrs[0]

    def create(self, pod: Pod, ctr: Container) -> CreateResult:
        self.manager.run_pod(pod)
        return self.manager.create_container(pod, ctr)

    def stop(self, pod: Pod, ctr: Container) -> list[Any]:
        updates = self.manager.stop_container(pod, ctr)
        self.manager.remove_container(pod, ctr)
        return updates

    def delete(self, pod: Pod, ctrs: list[Container]) -> None:
        for ctr in ctrs:
            self.stop(pod, ctr)
        self.manager.stop_pod(pod)
        self.manager.remove_pod(pod)

    def ctr(self, ctr: Container) -> Container:
        found = self.manager.container(ctr.id)
        assert found is not None
        return found

    def cpus(self, ctr: Container) -> CPUSet | None:
        return self.ctr(ctr).cpus

    def mems(self, ctr: Container) -> CPUSet | None:
        return self.ctr(ctr).mems

    def where(self, ctr: Container) -> str:
        return self.ctr(ctr).tags["balloons.balloon"]

    def notices(self) -> list[str]:
        return [n.message for n in self.log.notices]


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
    store = store or InMemoryStateStore()
    updates = RecordingRuntimeUpdates()
    log = RecordingDecisionLog()
    policy = BalloonsPolicy()
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
        timers=ManualTimers(clock),
        annotation_parser=ANNOTATIONS,
    )
    if start:
        manager.start(cfg or config())
    return Rig(manager, policy, updates, store, log, clock, hw, host)
