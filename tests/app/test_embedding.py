"""The embedding API: an engine a host agent drives with calls, with no NRI socket at all."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

import nrirp
from nrirp.adapters.fakehw import FakeHardwareDiscovery, expected_machine, load_machine
from nrirp.adapters.memory import (
    FakeClock,
    InMemoryHostControl,
    InMemoryStateStore,
    RecordingDecisionLog,
    RecordingMetrics,
    RecordingRuntimeUpdates,
)
from nrirp.adapters.nri.resmgr.translate import container_from_pb, pod_from_pb
from nrirp.app.embed import (
    CallbackRuntimeUpdates,
    CgroupDriver,
    ContainerState,
    CreateResult,
    EmbeddedContainer,
    Engine,
    KubernetesPod,
    LinuxResources,
    ManifestError,
    OperationFailedError,
    PolicyEvent,
    QOSClass,
    Update,
    resources_of,
)
from nrirp.domain.config import ConfigError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import HostChange
from nrirp.domain.policies import TemplatePolicy
from nrirp.simruntime import (
    ContainerSpec,
    PodSpec,
    Resources,
    RuntimeOptions,
    SimRuntime,
)
from nrirp.testing import guaranteed, pod, run_pod
from tests.app.test_containers import THIS_MODULE as FIRST_CPU_MODULE

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "embedding" / "host_agent.py"
EXCLUSIVE = str(ROOT / "examples" / "policies" / "exclusive_cpus.py")
BOX16 = expected_machine(load_machine("box-16"))
UID = "0b4c6a53-7e0c-4d7f-9a55-2f1c7a0e9d11"


def manifest(
    *containers: dict[str, Any], init: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": list(containers)}
    if init:
        spec["initContainers"] = init
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web",
            "namespace": "prod",
            "uid": UID,
            "labels": {"app": "web"},
            "annotations": {"team": "shop"},
            "resourceVersion": "123",
        },
        "spec": spec,
        "status": {"phase": "Pending"},
    }


GUARANTEED = {"name": "app", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}}}
BURSTABLE = {"name": "log", "resources": {"requests": {"cpu": "100m", "memory": "32Mi"}}}
FRACTIONAL = {"name": "log", "resources": {"limits": {"cpu": "500m", "memory": "256Mi"}}}


def web_pod(*containers: Any) -> Any:
    """The pod ``manifest()`` describes, built with the test kit (``nrirp.testing``)."""
    return pod(
        "web",
        *(containers or (guaranteed("app", 2, "1Gi"), guaranteed("log", "500m", "256Mi"))),
        namespace="prod",
        uid=UID,
        labels={"app": "web"},
        annotations={"team": "shop"},
    )


WEB = web_pod()
APP, LOG = WEB.container_id("app"), WEB.container_id("log")


# ---------------------------------------------------------------------- the worked example
def test_the_worked_example_runs_and_prints_what_the_docs_show() -> None:
    proc = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.splitlines() == [
        "engine: policy exclusive-cpus on CPUs 0-15",
        "RunPodSandbox shop/web (Burstable)",
        "CreateContainer nginx: cpus=0-15 mems=0-3",
        "RunPodSandbox shop/db (Guaranteed)",
        "CreateContainer postgres: cpus=0-3 mems=0",
        "  update (in the reply) nginx: cpus=4-15 mems=1-3",
        "RunPodSandbox jobs/batch (Guaranteed)",
        "CreateContainer crunch: refused: cannot give crunch 16 exclusive CPUs: only 12 free "
        "(4-15) and the shared pool needs one",
        "Reconfigure: reserve CPUs 0-1",
        "  applied=True updates=2",
        "  update (sent later) nginx: cpus=6-15 mems=1-3",
        "  update (sent later) postgres: cpus=2-5 mems=0-1",
        "Reconfigure: a typo",
        "  applied=False: reservedResources.cpus: unknown field (did you mean cpu?)",
        "StopPodSandbox + RemovePodSandbox shop/db",
        "  update (sent later) nginx: cpus=2-15 mems=0-3",
        "Containers:",
        "  nginx: cpus=2-15 mems=0-3 engine agrees: yes",
        "6 decisions, 1 notices logged",
    ]
    docs = (ROOT / "docs" / "embedding.md").read_text()
    for line in proc.stdout.splitlines():
        assert line in docs, f"docs/embedding.md does not show {line!r}"


def test_the_example_is_importable_and_uses_no_socket(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import runpy

    def no_sockets(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the embedded engine opened a socket")

    monkeypatch.setattr(socket, "socket", no_sockets)
    monkeypatch.setattr(socket, "socketpair", no_sockets)
    runpy.run_path(str(EXAMPLE), run_name="__main__")
    assert "engine agrees: yes" in capsys.readouterr().out


# ---------------------------------------------------------------------- building
def lifecycle(engine: Engine, the_pod: Any = WEB) -> list[CreateResult]:
    """RunPodSandbox .. PostStart for every container (the test kit's walk); the create
    results."""
    return list(run_pod(engine, the_pod).results.values())


def test_every_adapter_is_the_agents_own() -> None:
    updates = RecordingRuntimeUpdates()
    store, host, log = InMemoryStateStore(), InMemoryHostControl(), RecordingDecisionLog()
    clock, metrics = FakeClock(now=7.0), RecordingMetrics()
    engine = Engine.build(
        "first-cpu",
        policy_modules=[FIRST_CPU_MODULE],
        runtime_updates=updates,
        machine=BOX16,
        state_store=store,
        host_control=host,
        clock=clock,
        decision_log=log,
        metrics=metrics,
    )
    engine.start()
    app, _log = lifecycle(engine)
    assert app.adjustment.resources.cpus == CPUSet.of(1)  # the policy's decision
    assert engine.machine is BOX16 and engine.memory_capacity == sum(
        n.memory_bytes for n in BOX16.nodes.values()
    )
    assert store.saves > 0 and UID in (store.raw or "")
    assert list(host.settings.values()) == [HostChange(cgroup={"memory.high": "max"})] * 2
    assert [d.container for d in log.decisions] == ["app", "log"]
    assert {op for op, _, ok in metrics.operations if ok} >= {"run-pod", "create-container"}
    assert engine.container_by_id(APP) is not None
    assert engine.container_by_id(APP).created_at == 7.0  # type: ignore[union-attr]
    # an unsolicited update (a policy event) goes to the agent's adapter
    engine.inject_event(PolicyEvent("move", "agent", APP))
    assert updates.updates == [Update(APP, LinuxResources(cpus=CPUSet.of(2)))]


def test_hardware_discovery_and_policy_object() -> None:
    policy = TemplatePolicy()
    delivered: list[list[Update]] = []
    engine = Engine.build(
        policy,
        runtime_updates=delivered.append,
        hardware=FakeHardwareDiscovery(load_machine("hybrid-desktop")),
    )
    assert engine.policy is policy
    assert engine.machine == expected_machine(load_machine("hybrid-desktop"))
    assert isinstance(engine.container.adapters.runtime_updates(), CallbackRuntimeUpdates)
    assert engine.start().restored is False
    (app, _) = lifecycle(engine)
    assert app.adjustment.is_empty() and delivered == []


def test_engine_over_a_composed_container() -> None:
    container = EmbeddedContainer()
    container.config.from_dict({"policy": "template"})
    container.core.machine.override(providers.Object(BOX16))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    store = InMemoryStateStore()
    container.adapters.state_store.override(providers.Object(store))
    engine = Engine(container)
    engine.start()
    lifecycle(engine)
    assert engine.manager is container.core.resource_manager() and store.saves > 0
    assert [c.name for c in engine.containers()] == ["app", "log"]
    assert [p.name for p in engine.pods()] == ["web"]
    assert engine.describe() == {"policy": "template", "configured": False}
    assert engine.topology_zones() == () and engine.policy_metrics() == ()


def test_bad_inputs_fail_when_building() -> None:
    with pytest.raises(TypeError, match="runtime_updates"):
        Engine.build("template", runtime_updates=42, machine=BOX16)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"reservedResources\.cpus: unknown field"):
        Engine.build(
            "template",
            runtime_updates=RecordingRuntimeUpdates(),
            machine=BOX16,
            config={"reservedResources": {"cpus": 1}},
        )
    from nrirp.domain.policy import UnknownPolicyError

    with pytest.raises(UnknownPolicyError):
        Engine.build("nope", runtime_updates=RecordingRuntimeUpdates(), machine=BOX16)


# ---------------------------------------------------------------------- behaviour
def exclusive_engine(**kwargs: Any) -> tuple[Engine, RecordingRuntimeUpdates]:
    updates = RecordingRuntimeUpdates()
    engine = Engine.build(
        "exclusive-cpus",
        policy_modules=[EXCLUSIVE],
        runtime_updates=updates,
        machine=BOX16,
        **kwargs,
    )
    engine.start()
    return engine, updates


def test_refusal_reconfiguration_and_updates_failed() -> None:
    log = RecordingDecisionLog()
    engine, updates = exclusive_engine(
        config="reservedResources: {cpu: 'cpuset:0'}\n", decision_log=log
    )
    app, shared = lifecycle(engine)
    assert app.adjustment.resources.cpus == CPUSet.of(2, 3)  # a whole core; cpu 0 is reserved
    assert app.updates == ()
    assert shared.adjustment.resources.cpus == CPUSet.parse("1,4-15")
    assert shared.updates == ()
    with pytest.raises(OperationFailedError) as info:
        lifecycle(engine, pod("b", guaranteed("big", 14, "1Gi"), namespace="prod"))
    assert "cannot give big 14 exclusive CPUs" in info.value.reason
    outcome = engine.reconfigure({"reservedResources": {"cpus": 1}})
    assert not outcome.applied and outcome.reason == (
        "reservedResources.cpus: unknown field (did you mean cpu?)"
    )
    outcome = engine.reconfigure({"availableResources": {"cpu": "cpuset:0-1"}})
    assert not outcome.applied and "cannot give app 2 exclusive CPUs" in outcome.reason
    assert engine.config is not None
    assert str(engine.config.spec.reserved_resources.cpu) == "cpuset:0"  # the old one stays
    assert updates.updates == []
    outcome = engine.reconfigure("{}")
    assert outcome.applied and outcome.updates == 1  # app keeps 2-3; the shared pool grows
    assert [(u.container_id, str(u.resources.cpus)) for u in updates.updates] == [(LOG, "0-1,4-15")]
    engine.updates_failed(updates.updates, "runtime said no")
    notices = [n.message for n in log.notices]
    assert f"updates failed for {LOG}: runtime said no" in notices


def test_a_refusal_is_one_log_line_and_the_callers_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    engine, _ = exclusive_engine()  # decisions and notices go to the nrirp.decisions logger
    with caplog.at_level(logging.DEBUG), pytest.raises(OperationFailedError) as info:
        lifecycle(engine, web_pod(guaranteed("big", 20, "1Gi")))
    assert not info.value.internal and "cannot give big 20 exclusive CPUs" in info.value.reason
    about = [r for r in caplog.records if "cannot give big" in r.getMessage()]
    assert [(r.levelno, r.name) for r in about] == [(logging.ERROR, "nrirp.decisions")]
    assert about[0].getMessage().startswith("create-container container prod/web/big failed: ")
    assert all(r.exc_info is None for r in caplog.records) and "Traceback" not in caplog.text


def test_restart_restores_state_and_synchronize_reconciles() -> None:
    store = InMemoryStateStore()
    engine, _ = exclusive_engine(state_store=store, decision_log=RecordingDecisionLog())
    lifecycle(engine)
    engine.close()
    again, _ = exclusive_engine(state_store=store, decision_log=RecordingDecisionLog())
    assert {c.id: str(c.cpus) for c in again.containers()} == {APP: "0-1", LOG: "2-15"}
    survivor = WEB.container(
        "app", memory_capacity=again.memory_capacity, state=ContainerState.RUNNING
    )
    updates = again.synchronize([WEB.sandbox], [survivor])  # log is gone
    assert [c.id for c in again.containers()] == [APP]
    # the runtime reported no cpuset for the survivor: the recorded one is sent again, and the
    # shared pool (now nobody) needs no update
    assert [(u.container_id, str(u.resources.cpus)) for u in updates] == [(APP, "0-1")]


# ---------------------------------------------------------------------- Kubernetes pods
def test_kubernetes_pod_matches_what_the_simulated_runtime_reports() -> None:
    doc = manifest(
        GUARANTEED
        | {"resources": {"limits": {"cpu": "2", "memory": "1Gi", "hugepages-2Mi": "4Mi"}}},
        BURSTABLE,
    )
    kube = KubernetesPod.from_manifest(doc)
    capacity = 64 << 30

    async def reported() -> tuple[Any, list[Any]]:
        async with SimRuntime(RuntimeOptions(memory_capacity=capacity)) as runtime:
            status = await runtime.run_pod_sandbox(kube.spec)
            ctrs = [await runtime.create_container(status, c.name) for c in kube.spec.containers]
            return status.sandbox, [c.container for c in ctrs]

    sandbox, containers = asyncio.run(reported())
    pod = kube.sandbox(sandbox.id)
    expected_pod = pod_from_pb(sandbox)
    for field in ("id", "name", "uid", "namespace", "cgroup_parent", "resources", "qos_class"):
        assert getattr(pod, field) == getattr(expected_pod, field), field
    assert dict(pod.labels) == dict(expected_pod.labels)
    for pb in containers:
        mine = kube.container(pb.name, pb.id, pod_id=sandbox.id, memory_capacity=capacity)
        theirs = container_from_pb(pb)
        for field in ("id", "pod_id", "name", "resources", "oom_score_adj", "cgroups_path"):
            assert getattr(mine, field) == getattr(theirs, field), (pb.name, field)
        assert mine.state is ContainerState.CREATING
        for key, value in mine.labels.items():
            assert theirs.labels[key] == value


def test_kubernetes_qos_cgroups_and_init_containers() -> None:
    assert KubernetesPod.from_manifest(manifest(GUARANTEED)).qos is QOSClass.GUARANTEED
    assert KubernetesPod.from_manifest(manifest({"name": "a"})).qos is QOSClass.BESTEFFORT
    # an init container without limits makes the pod Burstable, as in kubelet
    mixed = KubernetesPod.from_manifest(manifest(GUARANTEED, init=[{"name": "setup"}]))
    assert mixed.qos is QOSClass.BURSTABLE
    pod = mixed.sandbox("sb", cgroup_driver=CgroupDriver.SYSTEMD)
    assert pod.cgroup_parent == f"kubepods-burstable-pod{UID.replace('-', '_')}.slice"
    assert pod.qos_class is QOSClass.BURSTABLE
    setup = mixed.container("setup", "c0", pod_id="sb", memory_capacity=1 << 30)
    assert setup.resources.cpu_shares == 2 and setup.resources.memory_limit is None
    big_init = KubernetesPod.from_manifest(
        manifest(
            GUARANTEED,
            init=[{"name": "warm", "resources": {"limits": {"cpu": "3", "memory": "512Mi"}}}],
        )
    )
    # pod resources: the larger of the containers' sum and the largest init container
    assert big_init.pod_resources() == Resources(3000, 3000, 1 << 30, 1 << 30)
    app = big_init.container("app", "c1", pod_id="sb", memory_capacity=8 << 30)
    # sandbox_id, the documented former name of pod_id, still works; both or neither do not
    assert big_init.container("app", "c1", sandbox_id="sb", memory_capacity=8 << 30) == app
    with pytest.raises(TypeError, match="pod_id"):
        big_init.container("app", "c1", pod_id="sb", sandbox_id="sb", memory_capacity=1)
    with pytest.raises(TypeError, match="pod_id"):
        big_init.container("app", "c1", memory_capacity=1)
    assert (app.resources.cpu_shares, app.resources.cpu_quota, app.oom_score_adj) == (
        2048,
        200_000,
        -997,
    )
    assert app.cgroups_path == f"/kubepods/pod{UID}/c1"
    assert resources_of(Resources.of(limits={"cpu": "500m"})) == LinuxResources(
        cpu_shares=512, cpu_quota=50_000, cpu_period=100_000
    )


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"metadata": {"name": "p"}, "spec": {"containers": []}}, "spec.containers: a pod needs"),
        ({"metadata": {"name": "p"}, "spec": {"containers": "x"}}, "spec.containers: expected a"),
        (
            {
                "metadata": {"name": "p", "labels": {"a": 1}},
                "spec": {"containers": [{"name": "c"}]},
            },
            "metadata.labels.a: expected a string",
        ),
        (
            {
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "x"}}}]},
            },
            "spec.containers[0]: limits.cpu: invalid quantity 'x'",
        ),
        (
            {"metadata": {"name": "a/b"}, "spec": {"containers": [{"name": "c"}]}},
            "invalid name 'a/b'",
        ),
        ({"metadata": [], "spec": {}}, "metadata: expected a mapping"),
    ],
)
def test_manifest_errors_name_the_path(doc: dict[str, Any], message: str) -> None:
    with pytest.raises(ManifestError) as info:
        KubernetesPod.from_manifest(doc)
    assert message in str(info.value)


def test_a_sandbox_needs_a_uid() -> None:
    kube = KubernetesPod(PodSpec("p", containers=[ContainerSpec("c")]))
    with pytest.raises(ManifestError, match=r"metadata\.uid"):
        kube.sandbox("sb")
    with pytest.raises(KeyError, match="no container 'zz'"):
        kube.container_spec("zz")


def test_the_package_exports_the_embedding_entry_points() -> None:
    assert nrirp.Engine is Engine and nrirp.KubernetesPod is KubernetesPod
    assert set(nrirp.__all__) >= {"Engine", "KubernetesPod", "__version__"}
