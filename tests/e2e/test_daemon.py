"""``nrirp run`` on a real containerd 1.7.24: registration, a pod's lifecycle, persistence,
SIGKILL + restart with reconciliation, adjustments reaching containers, refusals failing
creation, configuration errors and reloads.

The daemon runs on a fake machine's sysfs tree (``nrirp hardware --write-sysfs``) against the
real runtime; pinned CPUs stay within this host's CPUs 0-1.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .daemon_process import REPO, DaemonProcess
from .harness import Containerd, ContainerSpec, CriError, Kubelet, PodSpec, Resources
from .harness.fixtures import PluginProcesses
from .helpers import require_cpus

pytestmark = pytest.mark.e2e

PIN = "cpus.annotation-pin.nrirp.test"
REFUSE = "refuse.annotation-pin.nrirp.test"


@pytest.fixture(scope="module")
def sysfs_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """box-16's sysfs tree, written by the CLI the way an operator would."""
    root = tmp_path_factory.mktemp("fake-hw") / "sys"
    subprocess.run(
        [sys.executable, "-m", "nrirp", "hardware", "--machine", "box-16", "--write-sysfs", root],
        check=True,
        capture_output=True,
    )
    return root


class Daemon(DaemonProcess):
    """One ``nrirp run`` process (JSON logs) on a fake machine's sysfs tree, with the e2e test
    policies importable."""

    def __init__(
        self,
        processes: PluginProcesses,
        runtime: Containerd,
        state_dir: Path,
        sysfs: Path,
        *extra: str,
        policy: str = "template",
    ) -> None:
        super().__init__(
            processes,
            runtime,
            state_dir,
            policy=policy,
            args=["--sysfs-root", str(sysfs), *extra],
            env={"NRIRP_POLICY_MODULES": "tests.e2e.daemon_policies"},
        )


def container_ids(state: dict[str, Any]) -> set[str]:
    return {c["id"] for c in state.get("containers", [])}


def states(state: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: c.get("state", "creating") for c in state.get("containers", [])}


def test_template_daemon_lifecycle_persistence_and_restart(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    sysfs_tree: Path,
) -> None:
    state_dir = tmp_path / "state"
    daemon = Daemon(plugin_processes, fresh_containerd, state_dir, sysfs_tree)
    daemon.registered()
    assert daemon.wait_for("^no saved state in")["level"] == "info"

    kube = fresh_kubelet
    spec = PodSpec(
        "web",
        (
            ContainerSpec("a", Resources.of(requests={"cpu": "250m"}, limits={"memory": "64Mi"})),
            ContainerSpec("b"),
        ),
    )
    pod = kube.run_pod(spec)
    a, b = pod.container_id("a"), pod.container_id("b")
    daemon.wait_state(lambda s: states(s) == {a: "running", b: "running"})
    state = daemon.state()
    assert [p["id"] for p in state["pods"]] == [pod.id]
    by_id = {c["id"]: c for c in state["containers"]}
    assert by_id[a]["requirements"]["cpu_request"] == 250
    assert by_id[a]["requirements"]["memory_limit"] == 64 << 20
    assert state["policy"] == "template" and oct(state_dir.stat().st_mode & 0o777) == "0o700"

    # crash the daemon while the pod runs; change the pod behind its back
    daemon.kill9()
    kube.stop_container(b, grace=1)
    kube.remove_container(b)
    c = kube.create_container(pod, ContainerSpec("c"))
    kube.start_container(c)
    live = {x.id for x in kube.list_containers(pod_id=pod.id)}
    assert live == {a, c}

    again = Daemon(plugin_processes, fresh_containerd, state_dir, sysfs_tree)
    restored = again.wait_for("^restored state from")
    assert restored["msg"].endswith(": 1 pods, 2 containers")
    synced = again.wait_for("^synchronized with the runtime")
    assert (synced["released"], synced["admitted"], synced["kept"]) == (b, c, a)
    again.wait_state(lambda s: container_ids(s) == live)

    kube.remove_pod(pod)
    again.wait_state(lambda s: not s.get("pods") and not s.get("containers"))
    again.process.stop()
    assert again.process.returncode == 0
    assert again.wait_for("^state saved to")


def test_pinning_policy_adjusts_refuses_and_reconciles(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    sysfs_tree: Path,
) -> None:
    require_cpus(2)
    state_dir = tmp_path / "state"
    daemon = Daemon(
        plugin_processes, fresh_containerd, state_dir, sysfs_tree, policy="annotation-pin"
    )
    daemon.registered()
    kube = fresh_kubelet
    annotations = {
        f"{PIN}/container.a": "1",
        f"{PIN}/container.b": "0",
        f"{PIN}/container.late": "0",
        f"{REFUSE}/container.bad": "true",
    }
    pod = kube.run_pod(
        PodSpec("pinned", (ContainerSpec("a"), ContainerSpec("b")), annotations=annotations)
    )
    a, b = pod.container_id("a"), pod.container_id("b")
    assert kube.container_cpus_allowed(a) == "1" and kube.container_cgroup_cpuset(a) == "1"
    assert kube.container_cpus_allowed(b) == "0" and kube.container_cgroup_cpuset(b) == "0"
    decisions = [r for r in daemon.records() if r["msg"] == "decision"]
    assert [(d["container"], d["pod"], d["cpus"], d["reason"]) for d in decisions] == [
        ("a", "pinned", "1", "pinned by annotation"),
        ("b", "pinned", "0", "pinned by annotation"),
    ]

    # a refused decision fails the creation with the policy's reason; nothing is cached
    with pytest.raises(CriError, match="container bad refused by annotation"):
        kube.create_container(pod, ContainerSpec("bad"))
    daemon.wait_state(lambda s: container_ids(s) == {a, b})

    # killed: a container created meanwhile runs unpinned until the daemon is back
    daemon.kill9()
    late = kube.create_container(pod, ContainerSpec("late"))
    kube.start_container(late)
    assert kube.container_cpus_allowed(late) == "0-1"

    again = Daemon(
        plugin_processes, fresh_containerd, state_dir, sysfs_tree, policy="annotation-pin"
    )
    synced = again.wait_for("^synchronized with the runtime")
    assert (synced["admitted"], synced["kept"]) == (late, ",".join(sorted([a, b])))
    # the Synchronize reply carried the update: the real container is pinned now
    deadline = time.monotonic() + 10
    while kube.container_cgroup_cpuset(late) != "0" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kube.container_cgroup_cpuset(late) == "0"
    assert kube.container_cpus_allowed(late) == "0"
    # survivors keep their assignment
    assert kube.container_cgroup_cpuset(a) == "1" and kube.container_cgroup_cpuset(b) == "0"
    kube.remove_pod(pod)
    again.process.stop()


def test_config_errors_and_sighup_reload(
    containerd: Containerd,
    kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    sysfs_tree: Path,
) -> None:
    config = tmp_path / "template.yaml"
    config.write_text("availableResources:\n  cpu: cpuset:0-1\nnoSuchField: 1\n")
    bad = Daemon(
        plugin_processes, containerd, tmp_path / "s1", sysfs_tree, "--config-file", str(config)
    )
    assert bad.process.wait_exit(30) == 2
    error = bad.wait_for("is invalid")
    assert error["errors"] == ["noSuchField: unknown field"]

    config.write_text("availableResources:\n  cpu: cpuset:0-1\n")
    daemon = Daemon(
        plugin_processes,
        containerd,
        tmp_path / "s2",
        sysfs_tree,
        "--config-file",
        str(config),
        "--config-poll-interval",
        "0",
    )
    daemon.registered()
    config.write_text("availableResources: {cpu: 'cpuset:zero'}\n")
    mark = len(daemon.records())
    os.kill(daemon.process.pid, signal.SIGHUP)
    refused = daemon.wait_for("not applied, the old one stays", after=mark)
    assert "availableResources.cpu" in refused["errors"][0]
    # still serving, with the old configuration in force and in the state
    pod = kubelet.run_pod(PodSpec("after-reload", (ContainerSpec("x"),)))
    daemon.wait_state(lambda s: container_ids(s) == {pod.container_id("x")})
    assert daemon.state()["config"]["availableResources"]["cpu"] == "cpuset:0-1"
    kubelet.remove_pod(pod)
    daemon.process.stop()
    assert daemon.process.returncode == 0


def test_prelaunched_daemon_registers_over_fd_3(
    make_containerd: Callable[..., Containerd], tmp_path: Path, sysfs_tree: Path
) -> None:
    runtime = make_containerd(start=False)
    state_dir = tmp_path / "state"
    plugin = runtime.install_python_plugin(
        90,
        "resource-manager",
        "nrirp",
        [
            *("run", "--policy", "template", "--state-dir", str(state_dir)),
            *("--sysfs-root", str(sysfs_tree), "--log-format", "json"),
        ],
        pythonpath=[REPO],
    )
    runtime.start()
    kube = Kubelet(runtime)
    pod = kube.run_pod(PodSpec("pre", (ContainerSpec("x"),)))
    cid = pod.container_id("x")
    deadline = time.monotonic() + 10
    registered: list[str] = []
    while time.monotonic() < deadline:  # log lines are written at quiet moments (<= 250 ms late)
        cache = state_dir / "cache"
        records = [json.loads(line) for line in plugin.log_path.read_text().splitlines()]
        registered = [r["msg"] for r in records if "registered with containerd" in r["msg"]]
        if (
            registered
            and cache.exists()
            and cid in {c["id"] for c in json.loads(cache.read_text())["containers"]}
        ):
            break
        time.sleep(0.05)
    assert len(registered) == 1 and registered[0].startswith("90-resource-manager: ")
    state = json.loads((state_dir / "cache").read_text())
    assert [p["id"] for p in state["pods"]] == [pod.id]
    assert [c["id"] for c in state["containers"]] == [cid]
    kube.remove_pod(pod)
