"""Harness self-tests on one shared containerd: CRI pods and containers, cgroups, exec."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest

from .harness import Containerd, ContainerSpec, CriError, Kubelet, PodSpec, Resources
from .harness.packages import CONTAINERD_VERSION, RuntimeBinaries
from .harness.resources import QOSClass
from .helpers import cgroup_dirs, require_cpus

pytestmark = pytest.mark.e2e


def test_containerd_runs_private_with_nri(
    containerd: Containerd, kubelet: Kubelet, runtime_binaries: RuntimeBinaries
) -> None:
    assert runtime_binaries.containerd_version == CONTAINERD_VERSION == "1.7.24"
    version = containerd.runtime().Version(kubelet.pb.VersionRequest(), timeout=5)
    assert version.runtime_name == "containerd"
    assert version.runtime_version.startswith("1.7.24")

    assert stat.S_ISSOCK(containerd.nri_socket.stat().st_mode)
    nri = tomllib.loads(containerd.config_path.read_text())["plugins"]["io.containerd.nri.v1.nri"]
    assert nri["disable"] is False
    assert nri["socket_path"] == str(containerd.nri_socket)
    assert nri["plugin_path"] == str(containerd.plugin_dir)
    assert nri["plugin_config_path"] == str(containerd.plugin_config_dir)
    for path in (
        containerd.nri_socket,
        containerd.address,
        containerd.plugin_dir,
        containerd.log_path,
    ):
        assert path.is_relative_to(containerd.root)
    log = containerd.log_text()
    assert r"Registered namespace \"k8s.io\" with NRI" in log

    status = containerd.images().ImageStatus(
        kubelet.pb.ImageStatusRequest(image=kubelet.pb.ImageSpec(image=containerd.image.ref))
    )
    assert containerd.image.ref in status.image.repo_tags


def test_pod_with_two_containers(kubelet: Kubelet) -> None:
    require_cpus(2)
    spec = PodSpec(
        "two",
        namespace="e2e",
        labels={"app": "two"},
        annotations={"note": "harness"},
        containers=(
            ContainerSpec(
                "first",
                Resources.of(requests={"cpu": "250m"}, limits={"cpu": "500m", "memory": "64Mi"}),
                cpuset_cpus="0",
                annotations={"first.example/a": "1"},
            ),
            ContainerSpec("second", cpuset_cpus="1", env={"GREETING": "hello"}),
        ),
    )
    pod = kubelet.run_pod(spec)
    assert pod.qos is QOSClass.BURSTABLE
    assert pod.cgroup_parent == f"/kubepods/burstable/pod{spec.uid}"

    (listed,) = kubelet.list_pods()
    assert (listed.id, listed.name, listed.namespace, listed.uid) == (
        pod.id,
        "two",
        "e2e",
        spec.uid,
    )
    assert listed.state == "SANDBOX_READY"
    assert listed.labels["app"] == "two" and listed.labels["io.kubernetes.pod.uid"] == spec.uid
    assert listed.annotations["note"] == "harness"

    containers = {c.name: c for c in kubelet.list_containers(pod_id=pod.id)}
    assert set(containers) == {"first", "second"}
    assert all(c.state == "CONTAINER_RUNNING" for c in containers.values())
    assert containers["first"].labels["io.kubernetes.container.name"] == "first"
    assert containers["first"].labels["io.kubernetes.pod.namespace"] == "e2e"
    assert containers["first"].annotations["first.example/a"] == "1"
    assert containers["first"].annotations["io.kubernetes.container.restartCount"] == "0"

    first, second = pod.container_id("first"), pod.container_id("second")
    assert kubelet.exec_ok(second, ["sh", "-c", "echo $GREETING"]) == "hello\n"

    assert kubelet.container_cpus_allowed(first) == "0"
    assert kubelet.container_cgroup_cpuset(first) == "0"
    assert kubelet.container_cpus_allowed(second) == "1"
    assert kubelet.container_cgroup_cpuset(second) == "1"
    assert kubelet.container_cgroup_mems(first) == kubelet.container_mems_allowed(first)

    cpu = kubelet.container_cgroup_cpu(first)
    assert (cpu.shares, cpu.quota, cpu.period) == (256, 50_000, 100_000)
    assert kubelet.container_cgroup_memory_limit(first) == 64 * 2**20
    cpu = kubelet.container_cgroup_cpu(second)
    assert (cpu.shares, cpu.quota) == (2, -1)
    assert kubelet.container_cgroup_memory_limit(second) is None

    cgroup = kubelet.container_cgroup(first)
    assert cgroup.membership.v1["cpuset"] == f"{pod.cgroup_parent}/{first}"
    assert cgroup_dirs(pod.cgroup_parent)

    kubelet.remove_pod(pod)
    assert kubelet.list_pods() == []
    assert kubelet.list_containers() == []
    assert cgroup_dirs(pod.cgroup_parent) == []
    assert kubelet.containerd.leftover_shims() == []


def test_qos_classes_set_pod_cgroup_and_oom_score(kubelet: Kubelet) -> None:
    guaranteed = Resources.of(limits={"cpu": "100m", "memory": "32Mi"})
    burstable = Resources.of(requests={"cpu": "100m", "memory": "32Mi"})
    pods = {
        qos: kubelet.run_pod(PodSpec(f"qos-{qos.name.lower()}", (ContainerSpec("c", res),)))
        for qos, res in (
            (QOSClass.GUARANTEED, guaranteed),
            (QOSClass.BURSTABLE, burstable),
            (QOSClass.BESTEFFORT, Resources()),
        )
    }
    for qos, pod in pods.items():
        assert pod.qos is qos
        cid = pod.container_id("c")
        assert (
            kubelet.container_cgroup(cid).membership.v1["cpu"].startswith(pod.cgroup_parent + "/")
        )
        pid = kubelet.container_pid(cid)
        oom = int(Path(f"/proc/{pid}/oom_score_adj").read_text())
        expected = kubelet.linux_resources(pod.spec.containers[0].resources, qos).oom_score_adj
        if qos is QOSClass.GUARANTEED:
            # restrict_oom_score_adj: containerd cannot go below its own score (root here lacks
            # CAP_SYS_RESOURCE), so -997 is raised to containerd's own value
            assert expected == -997 and oom >= expected
        else:
            assert oom == expected
    assert pods[QOSClass.GUARANTEED].cgroup_parent.startswith("/kubepods/pod")
    assert pods[QOSClass.BESTEFFORT].cgroup_parent.startswith("/kubepods/besteffort/pod")
    assert (
        int(
            Path(
                f"/proc/{kubelet.container_pid(pods[QOSClass.BESTEFFORT].container_id('c'))}/oom_score_adj"
            ).read_text()
        )
        == 1000
    )
    cpu = kubelet.container_cgroup_cpu(pods[QOSClass.GUARANTEED].container_id("c"))
    assert (cpu.shares, cpu.quota) == (102, 10_000)


def test_update_container_resources(kubelet: Kubelet) -> None:
    require_cpus(2)
    pod = kubelet.run_pod(PodSpec("upd", (ContainerSpec("c", cpuset_cpus="0"),)))
    cid = pod.container_id("c")
    assert kubelet.container_cgroup_cpuset(cid) == "0"
    kubelet.update_container_resources(
        cid, Resources.of(limits={"cpu": "300m", "memory": "48Mi"}), cpuset_cpus="1"
    )
    assert kubelet.container_cgroup_cpuset(cid) == "1"
    assert kubelet.container_cpus_allowed(cid) == "1"
    cpu = kubelet.container_cgroup_cpu(cid)
    assert (cpu.shares, cpu.quota) == (307, 30_000)
    assert kubelet.container_cgroup_memory_limit(cid) == 48 * 2**20


def test_exec_and_cri_errors(kubelet: Kubelet) -> None:
    pod = kubelet.run_pod(PodSpec("exec", (ContainerSpec("c"),)))
    cid = pod.container_id("c")
    result = kubelet.exec_sync(cid, ["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (result.exit_code, result.stdout, result.stderr) == (3, "out\n", "err\n")
    with pytest.raises(RuntimeError, match="exited 3"):
        kubelet.exec_ok(cid, ["sh", "-c", "exit 3"])
    with pytest.raises(CriError) as failure:
        kubelet.start_container("no-such-container")
    assert failure.value.method == "StartContainer"
    assert failure.value.code.name == "NOT_FOUND"


def test_stop_and_remove_single_container(kubelet: Kubelet) -> None:
    pod = kubelet.run_pod(PodSpec("single", (ContainerSpec("a"), ContainerSpec("b"))))
    a = pod.container_id("a")
    kubelet.stop_container(a)
    states = {c.name: c.state for c in kubelet.list_containers(pod_id=pod.id)}
    assert states == {"a": "CONTAINER_EXITED", "b": "CONTAINER_RUNNING"}
    assert [c.name for c in kubelet.list_containers(state="CONTAINER_RUNNING")] == ["b"]
    kubelet.remove_container(a)
    assert [c.name for c in kubelet.list_containers(pod_id=pod.id)] == ["b"]
    assert "a" not in pod.containers
