"""The runtime's own model: kubelet-like objects, states, and clear errors that lose nothing."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.domain.model.kubelet import InvalidSpec
from nrirp.simruntime import (
    CgroupDriver,
    ContainerSpec,
    ContainerState,
    InvalidRequest,
    InvalidState,
    NotFound,
    ObjectStyle,
    PodSpec,
    PodState,
    QOSClass,
    Resources,
    SimRuntime,
    Unsupported,
)
from tests.support.aio import arun

from .peers import runtime

GUARANTEED = Resources.of(limits={"cpu": "2", "memory": "1Gi"})
POD = PodSpec(
    "db",
    namespace="prod",
    uid="0000-1111",
    labels={"app": "db"},
    annotations={"cpu.example.com/pin": "true"},
    containers=[ContainerSpec("main", GUARANTEED, env={"MODE": "fast"}, annotations={"x": "y"})],
)


def test_objects_look_like_what_containerd_sends() -> None:
    async def scenario() -> None:
        async with runtime(clock=lambda: 1_700_000_000_000_000_000) as rt:
            pod, (ctr,) = await rt.run_pod(POD)
            assert pod.qos is QOSClass.GUARANTEED
            assert pod.cgroup_parent == "/kubepods/pod0000-1111"
            sandbox = pod.sandbox
            assert sandbox.labels["io.kubernetes.pod.namespace"] == "prod"
            assert sandbox.labels["app"] == "db"
            assert sandbox.annotations["cpu.example.com/pin"] == "true"
            assert sandbox.annotations["kubernetes.io/config.seen"].startswith("2023-11-14T")
            assert sandbox.linux.cgroups_path == f"/kubepods/pod0000-1111/{pod.id}"
            assert sandbox.linux.pod_resources.cpu.quota.value == 200_000
            assert len(pod.id) == 64 and len(ctr.id) == 64
            nri = ctr.container
            assert nri.pod_sandbox_id == pod.id
            assert nri.labels["io.kubernetes.container.name"] == "main"
            assert nri.annotations["io.kubernetes.cri.sandbox-id"] == pod.id
            assert nri.annotations["x"] == "y"
            assert "MODE=fast" in nri.env
            assert any(m.destination == "/etc/hosts" for m in nri.mounts)
            assert ctr.cgroups_path == f"/kubepods/pod0000-1111/{ctr.id}"
            assert ctr.oom_score_adj == -997
            assert nri.created_at == 1_700_000_000_000_000_000
            assert nri.image.name == "docker.io/library/busybox:1.36"
            assert ctr.state is ContainerState.RUNNING and ctr.pid > 0
            res = ctr.resources
            assert (res.cpu_shares, res.cpu_quota, res.cpu_period) == (2048, 200_000, 100_000)
            assert res.memory_limit == 1 << 30
            assert res.cpus is None

    arun(scenario)


def test_old_releases_leave_out_newer_fields() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1") as rt:
            _, (ctr,) = await rt.run_pod(POD)
            nri = ctr.container
            assert ctr.oom_score_adj is None  # containerd 1.7 does not report it
            assert nri.created_at == 0 and nri.started_at == 0
            assert not nri.HasField("image")

    arun(scenario)


def test_systemd_driver_and_lean_objects() -> None:
    async def scenario() -> None:
        style = ObjectStyle(default_mounts=False, kube_env=False)
        async with runtime(cgroup_driver=CgroupDriver.SYSTEMD, style=style) as rt:
            spec = PodSpec("web", uid="ab-cd", containers=[ContainerSpec("c")])
            pod, (ctr,) = await rt.run_pod(spec)
            assert pod.cgroup_parent == "kubepods-besteffort-podab_cd.slice"
            assert ctr.cgroups_path == f"kubepods-besteffort-podab_cd.slice:cri-containerd:{ctr.id}"
            assert list(ctr.container.mounts) == []
            assert not any(e.startswith("KUBERNETES_") for e in ctr.env)

    arun(scenario)


def test_full_lifecycle_states() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            pod = await rt.run_pod_sandbox(POD)
            assert pod.state is PodState.READY
            ctr = await rt.create_container(pod, "main")
            assert ctr.state is ContainerState.CREATED and ctr.pid == 0
            ctr = await rt.start_container(ctr)
            assert ctr.state is ContainerState.RUNNING
            ctr = await rt.stop_container(ctr)
            assert ctr.state is ContainerState.STOPPED and ctr.exit_code == 0
            assert (await rt.stop_container(ctr)).state is ContainerState.STOPPED  # idempotent
            assert (await rt.stop_pod_sandbox(pod)).state is PodState.NOTREADY
            await rt.remove_container(ctr)
            assert rt.containers() == []
            await rt.remove_pod_sandbox(pod)
            assert rt.pods() == []
            ops = [o.operation for o in rt.journal.operations]
            assert ops == [
                "RunPodSandbox",
                "CreateContainer",
                "StartContainer",
                "StopContainer",
                "StopPodSandbox",
                "RemoveContainer",
                "RemovePodSandbox",
            ]

    arun(scenario)


def test_removing_a_running_pod_stops_and_removes_everything() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            pod, _ = await rt.run_pod(POD)
            extra = await rt.create_container(pod, "sidecar", resources=Resources.of())
            assert extra.spec.name == "sidecar"
            await rt.remove_pod_sandbox(pod)
            assert rt.pods() == [] and rt.containers() == []
            ops = [o.operation for o in rt.journal.operations][-6:]
            assert ops == [
                "StopContainer",
                "StopContainer",
                "StopPodSandbox",
                "RemoveContainer",
                "RemoveContainer",
                "RemovePodSandbox",
            ]

    arun(scenario)


def test_wrong_states_and_unknown_ids_are_clear_errors() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.8.0") as rt:
            pod, (ctr,) = await rt.run_pod(POD)
            with pytest.raises(InvalidState, match="RUNNING state, cannot start"):
                await rt.start_container(ctr)
            with pytest.raises(NotFound, match="container 'nope' not found"):
                await rt.stop_container("nope")
            with pytest.raises(NotFound, match="pod sandbox 'nope' not found"):
                await rt.create_container("nope", "main")
            with pytest.raises(
                Unsupported, match=r"UpdatePodSandbox does not exist in NRI v0\.8\.0"
            ):
                await rt.update_pod_sandbox(pod, Resources())
            await rt.stop_container(ctr)
            with pytest.raises(InvalidState, match="STOPPED state, cannot update"):
                await rt.update_container(ctr, Resources())
            await rt.stop_pod_sandbox(pod)
            with pytest.raises(InvalidState, match="is not ready"):
                await rt.create_container(pod, "main")
            # nothing was lost or half-done
            assert [c.state for c in rt.containers()] == [ContainerState.STOPPED]
            assert rt.find_container("prod", "db", "main").id == ctr.id

    arun(scenario)


def test_the_runtime_must_be_started() -> None:
    async def scenario() -> None:
        rt = SimRuntime()
        with pytest.raises(InvalidState, match="not running"):
            await rt.run_pod_sandbox(POD)
        async with rt:
            pass
        with pytest.raises(InvalidState, match="not running"):
            await rt.run_pod_sandbox(POD)

    arun(scenario)


def test_bad_specs_are_refused_before_anything_happens() -> None:
    with pytest.raises(InvalidSpec, match="duplicate container name 'a'"):
        PodSpec("p", containers=[ContainerSpec("a"), ContainerSpec("a")])
    with pytest.raises(InvalidSpec, match="invalid name ''"):
        ContainerSpec("")
    with pytest.raises(InvalidRequest, match="invalid NRI version 'seven'"):
        SimRuntime(nri_version="seven")
    with pytest.raises(InvalidRequest, match="request_timeout must be positive"):
        SimRuntime(request_timeout=0)
    with pytest.raises(InvalidSpec, match="resources must be Resources"):
        ContainerSpec("c", resources={"cpu": "1"})  # type: ignore[arg-type]
    with pytest.raises(InvalidSpec, match="cpuset_cpus '0-x'"):
        ContainerSpec("c", cpuset_cpus="0-x")


def test_bad_requests_to_a_running_runtime_change_nothing() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            pod, (ctr,) = await rt.run_pod(POD)
            with pytest.raises(InvalidRequest, match="resources must be Resources"):
                await rt.create_container(pod, "extra", resources=("1", "2"))  # type: ignore[arg-type]
            with pytest.raises(InvalidRequest, match="resources must be Resources or Linux"):
                await rt.update_container(ctr, {"cpu": "1"})  # type: ignore[arg-type]
            assert [c.id for c in rt.containers()] == [ctr.id]
            assert rt.container(ctr).resources == ctr.resources

    arun(scenario)


def test_pod_update_reaches_the_model_from_v0_10() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            pod, _ = await rt.run_pod(POD)
            bigger = Resources.of(limits={"cpu": "4", "memory": "2Gi"})
            updated = await rt.update_pod_sandbox(pod, bigger)
            assert updated.sandbox.linux.pod_resources.cpu.quota.value == 400_000

    arun(scenario)


def test_recreated_containers_get_new_ids_and_restart_counts() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            pod, (first,) = await rt.run_pod(POD)
            await rt.remove_container(first)
            second = await rt.create_container(pod, "main")
            assert second.id != first.id
            assert second.annotations["io.kubernetes.container.restartCount"] == "1"

    arun(scenario)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["run", "create", "start", "stop", "remove", "stop_pod", "rm_pod"]),
            st.integers(0, 3),
        ),
        max_size=30,
    )
)
def test_random_operation_sequences_keep_the_model_consistent(
    steps: list[tuple[str, int]],
) -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            for action, n in steps:
                pods = rt.pods()
                containers = rt.containers()
                try:
                    if action == "run":
                        await rt.run_pod_sandbox(PodSpec(f"p{n}", containers=[ContainerSpec("c")]))
                    elif action == "create" and pods:
                        await rt.create_container(pods[n % len(pods)], "c")
                    elif action in ("start", "stop", "remove") and containers:
                        target = containers[n % len(containers)]
                        await getattr(rt, f"{action}_container")(target)
                    elif action == "stop_pod" and pods:
                        await rt.stop_pod_sandbox(pods[n % len(pods)])
                    elif action == "rm_pod" and pods:
                        await rt.remove_pod_sandbox(pods[n % len(pods)])
                except InvalidState:
                    pass
                ids = {c.id for c in rt.containers()}
                owned = [cid for p in rt.pods() for cid in p.container_ids]
                assert sorted(owned) == sorted(ids)  # every container in exactly one pod
                for pod in rt.pods():
                    if pod.state is PodState.NOTREADY:
                        states = {rt.container(c).state for c in pod.container_ids}
                        assert states <= {ContainerState.STOPPED}

    arun(scenario)
