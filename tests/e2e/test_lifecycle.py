"""Harness self-tests of the runtime's lifecycle: restart with state, and complete teardown."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Containerd, ContainerSpec, Kubelet, PodSpec, Resources
from .harness.fixtures import ContainerdFactory, PluginProcesses
from .harness.mounts import mounts_under
from .harness.processes import pid_alive
from .helpers import cgroup_dirs

pytestmark = pytest.mark.e2e


def test_restart_keeps_pods_and_serves_nri_again(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    nristub: Path,
) -> None:
    pod = fresh_kubelet.run_pod(PodSpec("survivor", (ContainerSpec("c"),)))
    cid = pod.container_id("c")
    plugin = plugin_processes.start([nristub, "-socket", fresh_containerd.nri_socket])
    plugin.wait_for_line("configured by containerd")
    first_pid = fresh_containerd.pid
    container_pid = fresh_kubelet.container_pid(cid)
    assert plugin.running

    fresh_containerd.stop()
    assert not fresh_containerd.running and first_pid is not None and not pid_alive(first_pid)
    # The Go stub sees its connection drop and exits 0 (ours would redial). Not its "connection
    # closed" line: pkg/stub closes its server, which makes Run return and main exit, before it
    # calls the on-close callback that prints the line, so the line is sometimes never written.
    assert plugin.wait_exit() == 0, plugin.log_text()
    assert pid_alive(container_pid), "stopping the runtime must not stop its containers"

    fresh_containerd.start()
    assert fresh_containerd.pid != first_pid and fresh_containerd.starts == 2
    assert fresh_containerd.nri_socket.is_socket()
    assert [p.id for p in fresh_kubelet.list_pods(state="SANDBOX_READY")] == [pod.id]
    assert [c.state for c in fresh_kubelet.list_containers(pod_id=pod.id)] == ["CONTAINER_RUNNING"]
    assert fresh_kubelet.container_pid(cid) == container_pid
    assert fresh_kubelet.exec_ok(cid, ["echo", "still here"]) == "still here\n"

    again = plugin_processes.start([nristub, "-socket", fresh_containerd.nri_socket])
    assert (
        again.wait_for_line(r"synchronize \d+ pods") == "nristub: synchronize 1 pods 1 containers"
    )


def _busy_instance(factory: ContainerdFactory, label: str) -> tuple[Containerd, dict[str, object]]:
    runtime = factory.create(label)
    kubelet = Kubelet(runtime)
    pod = kubelet.run_pod(
        PodSpec(
            "left-behind",
            (ContainerSpec("a", Resources.of(requests={"cpu": "100m"})), ContainerSpec("b")),
        )
    )
    seen = {
        "root": runtime.root,
        "cgroup": pod.cgroup_parent,
        "shims": runtime.leftover_shims(),
        "pids": [kubelet.container_pid(cid) for cid in pod.containers.values()],
        "mounts": mounts_under(runtime.root),
    }
    return runtime, seen


def _assert_clean(runtime: Containerd, seen: dict[str, object], problems: list[str]) -> None:
    assert problems == []
    root = seen["root"]
    assert isinstance(root, Path) and not root.exists()
    assert mounts_under(root) == []
    assert isinstance(seen["cgroup"], str) and cgroup_dirs(seen["cgroup"]) == []
    for pid in [*seen["shims"], *seen["pids"]]:  # type: ignore[misc]
        assert not pid_alive(pid), f"process {pid} survived teardown"
    assert runtime.leftover_shims() == []
    assert not runtime.running


def test_teardown_removes_running_pods_mounts_and_cgroups(
    containerd_factory: ContainerdFactory,
) -> None:
    runtime, seen = _busy_instance(containerd_factory, "teardown-live")
    assert seen["shims"] and seen["mounts"], "the pod should have a shim and rootfs/shm mounts"
    logs = containerd_factory.logs_dir_for(runtime)
    problems = containerd_factory.destroy(runtime)
    _assert_clean(runtime, seen, problems)
    assert "RemovePodSandbox" in (logs / "containerd.log").read_text()


def test_teardown_after_runtime_crash(containerd_factory: ContainerdFactory) -> None:
    """With containerd killed, teardown falls back to runc and the shims' PIDs."""
    runtime, seen = _busy_instance(containerd_factory, "teardown-crash")
    runtime.kill()
    assert runtime.leftover_shims() == seen["shims"]
    problems = containerd_factory.destroy(runtime)
    _assert_clean(runtime, seen, problems)
