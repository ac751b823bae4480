"""The same workload through NRI v0.1 (the handler, fed containerd 1.6-shaped requests) and
through the hooks NRI v0.2+ drives (the engine fed the pods and containers kubelet and
containerd report, built by KubernetesPod, which is checked field by field against the
simulated NRI runtime): the same cpusets for every container, with each built-in policy."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.adapters.memory import RecordingDecisionLog, RecordingRuntimeUpdates
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer
from nrirp.adapters.nri_v01.handler import V01Handler
from nrirp.adapters.nri_v01.stale import CgroupPresence
from nrirp.app.embed import Engine, KubernetesPod
from nrirp.domain.model import ContainerState, Resources
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from tests.support.nri_v01 import CgroupTree, V01Pod

CONFIGS: dict[str, dict[str, object] | None] = {
    "topology-aware": {"reservedResources": {"cpu": "cpuset:0"}},
    "balloons": {"reservedResources": {"cpu": "cpuset:0"}},
    "template": None,
}


def spec(name: str, cpu: str | None) -> PodSpec:
    if cpu is None:
        return PodSpec(name, containers=(ContainerSpec("c"),))
    amounts = {"cpu": cpu, "memory": "64Mi"}
    return PodSpec(
        name, containers=(ContainerSpec("c", Resources.of(requests=amounts, limits=amounts)),)
    )


WORKLOAD = [spec("be", None), spec("g1", "2"), spec("bu", None), spec("g2", "3"), spec("g3", "1")]


def engine(policy: str, updates: object, **kwargs: object) -> Engine:
    built = Engine.build(
        policy,
        machine="box-16",
        config=CONFIGS[policy],
        runtime_updates=updates,  # type: ignore[arg-type]
        decision_log=RecordingDecisionLog(),
        **kwargs,  # type: ignore[arg-type]
    )
    built.start()
    return built


def through_v01(policy: str, tmp_path: Path) -> dict[str, str | None]:
    tree = CgroupTree(tmp_path / "cgroup", "v2")
    host = CgroupfsHostControl(str(tree.root))
    updates = RoutedRuntimeUpdates()
    e = engine(policy, updates, host_control=host)
    handler = V01Handler(e.manager, CgroupEnforcer(host), CgroupPresence(host), updates.capture)
    ids = {}
    for serial, pod_spec in enumerate(WORKLOAD):
        pod = V01Pod.of(pod_spec, serial)
        tree.add_pod(pod)
        for request in pod.creates():
            assert handler.invoke(request.to_json()).error == ""
        ids[pod.container_id("c")] = pod_spec.name
    return {ids[c.id]: None if c.cpus is None else str(c.cpus) for c in e.containers()}


def through_hooks(policy: str) -> dict[str, str | None]:
    e = engine(policy, RecordingRuntimeUpdates())
    ids = {}
    for serial, pod_spec in enumerate(WORKLOAD):
        v01 = V01Pod.of(pod_spec, serial)  # the same ids and uids
        kube = KubernetesPod.from_manifest(
            {
                "metadata": {"name": pod_spec.name, "namespace": "default", "uid": v01.uid},
                "spec": {"containers": [_container(c) for c in pod_spec.containers]},
            }
        )
        pod = kube.sandbox(v01.sandbox_id)
        e.run_pod_sandbox(pod)
        ctr = kube.container(
            "c", v01.container_id("c"), sandbox_id=pod.id, memory_capacity=e.memory_capacity
        )
        e.create_container(pod, ctr)
        e.post_create_container(pod, ctr.with_state(ContainerState.CREATED))
        e.start_container(pod, ctr.with_state(ContainerState.CREATED))
        e.post_start_container(pod, ctr.with_state(ContainerState.RUNNING))
        ids[ctr.id] = pod_spec.name
    return {ids[c.id]: None if c.cpus is None else str(c.cpus) for c in e.containers()}


def _container(c: ContainerSpec) -> dict[str, object]:
    res = c.resources
    if res.cpu_request is None:
        return {"name": c.name}
    amounts = {"cpu": f"{res.cpu_request}m", "memory": str(res.memory_request)}
    return {"name": c.name, "resources": {"requests": amounts, "limits": amounts}}


@pytest.mark.parametrize("policy", sorted(CONFIGS))
def test_the_same_cpusets_through_v01_and_the_v02_hooks(policy: str, tmp_path: Path) -> None:
    v01 = through_v01(policy, tmp_path)
    assert v01 == through_hooks(policy)
    if policy != "template":  # the template decides nothing
        assert v01["g1"] is not None and v01["be"] not in (None, "0-15")
