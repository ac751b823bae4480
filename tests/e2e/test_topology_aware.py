"""``nrirp run --policy topology-aware`` on a real containerd 1.7.24: the cpusets the daemon
decides are the ones the containers get (cgroup ``cpuset.cpus``/``cpuset.mems`` and the
container's own ``/proc/1/status``), on this machine's /sys and on a fake two-socket machine
via ``--sysfs-root``; shared containers move when an exclusive one arrives and leaves; a
SIGKILL + restart keeps every allocation.

This host has CPUs 0-1 and memory node 0, and container cgroups can only hold those, so the
fake machine keeps those ids with another topology (see ``topology_aware_support``). With
``reservedResources: {cpu: cpuset:0}`` CPU 1 is the only shared CPU; an exclusive grant of it
leaves the shared set empty, and shared containers then run on the reserved CPU 0
until it returns, as kubelet's static CPU manager does.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .harness import Containerd, CriError, Kubelet
from .harness.fixtures import PluginProcesses
from .topology_aware_support import (
    CpusetWatcher,
    TopologyAwareDaemon,
    besteffort_pod,
    decided,
    guaranteed_pod,
    hardware,
    topology_summary,
    wait_placed,
    write_two_socket_tree,
)

pytestmark = pytest.mark.e2e

RESERVED_CPU0 = "reservedResources:\n  cpu: cpuset:0\n"


def _config(tmp_path: Path, text: str = RESERVED_CPU0) -> Path:
    path = tmp_path / "topology-aware.yaml"
    path.write_text(text)
    return path


def _require_two_cpu_host() -> None:
    """The expectations on the real /sys assume this project's machine: CPUs 0-1, node 0."""
    summary = topology_summary(hardware())
    if summary["cpus"] != "0-1" or set(summary["nodes"]) != {0}:
        pytest.fail(
            f"this test expects a host with CPUs 0-1 on NUMA node 0, found {summary}",
            pytrace=False,
        )


@pytest.fixture
def two_socket(tmp_path: Path) -> Path:
    """The fake two-socket machine (CPU 0 on socket 0, CPU 1 on socket 1, node 0)."""
    root = write_two_socket_tree(tmp_path / "two-socket-sys")
    assert topology_summary(hardware(root)) == {
        "cpus": "0-1",
        "isolated": "",
        "packages": {0: ("0", "0"), 1: ("1", "0")},
        "nodes": {0: ("0-1", "dram")},
    }
    return root


@pytest.fixture
def two_socket_isolated(tmp_path: Path) -> Path:
    """The fake two-socket machine with CPU 1 kernel-isolated."""
    root = write_two_socket_tree(tmp_path / "two-socket-isolated-sys", isolated="1")
    assert topology_summary(hardware(root)) == {
        "cpus": "0-1",
        "isolated": "1",
        "packages": {0: ("0", "0"), 1: ("1", "0")},
        "nodes": {0: ("0-1", "dram")},
    }
    return root


def _start(
    processes: PluginProcesses,
    runtime: Containerd,
    tmp_path: Path,
    sysfs: Path | None = None,
    config: str = RESERVED_CPU0,
) -> TopologyAwareDaemon:
    daemon = TopologyAwareDaemon(
        processes, runtime, tmp_path / "state", _config(tmp_path, config), sysfs
    )
    daemon.registered()
    return daemon


def _moves_for_exclusive(
    kube: Kubelet, daemon: TopologyAwareDaemon, shared_pool: str | None = None
) -> None:
    """S (BestEffort) on CPU 1; E (Guaranteed, 1 CPU) takes CPU 1 and S moves to the reserved
    CPU 0; E leaves and S moves back to CPU 1."""
    s_pod = kube.run_pod(besteffort_pod("shared-s"))
    s = s_pod.container_id("c")
    first = wait_placed(kube, daemon, s, "1", kind="shared")
    if shared_pool is not None:
        assert first.pool == shared_pool

    e_pod = kube.run_pod(guaranteed_pod("exclusive-e"))
    e = e_pod.container_id("c")
    granted = wait_placed(kube, daemon, e, "1", kind="exclusive")
    assert granted.tags.get("topology-aware.exclusive") == "1"
    wait_placed(kube, daemon, s, "0")

    kube.remove_pod(e_pod)
    daemon.wait_state(lambda st: decided(st, e) is None)
    back = wait_placed(kube, daemon, s, "1", kind="shared")
    assert back.pool == first.pool


def test_reserved_and_shared_cpus_on_this_machine(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
) -> None:
    _require_two_cpu_host()
    daemon = _start(plugin_processes, fresh_containerd, tmp_path)
    kube = fresh_kubelet
    s = kube.run_pod(besteffort_pod("besteffort")).container_id("c")
    k = kube.run_pod(besteffort_pod("system", namespace="kube-system")).container_id("c")
    wait_placed(kube, daemon, s, "1", kind="shared")
    wait_placed(kube, daemon, k, "0", kind="reserved")
    # the decision lines name what the state records
    assert [(d["cpus"], d["mems"]) for d in daemon.decisions(s)][-1] == ("1", "0")
    assert [(d["cpus"], d["mems"]) for d in daemon.decisions(k)][-1] == ("0", "0")


def test_shared_container_moves_when_exclusive_arrives_and_leaves(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
) -> None:
    _require_two_cpu_host()
    daemon = _start(plugin_processes, fresh_containerd, tmp_path)
    _moves_for_exclusive(fresh_kubelet, daemon)


def test_fake_two_socket_machine_places_and_moves(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket: Path,
) -> None:
    daemon = _start(plugin_processes, fresh_containerd, tmp_path, two_socket)
    kube = fresh_kubelet
    k = kube.run_pod(besteffort_pod("system", namespace="kube-system")).container_id("c")
    reserved = wait_placed(kube, daemon, k, "0", kind="reserved")
    assert reserved.pool == "root"  # reserved containers live in the root pool (the reference)
    _moves_for_exclusive(kube, daemon, shared_pool="socket #1")


def test_fake_machine_isolated_cpu_goes_to_a_guaranteed_container(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket_isolated: Path,
) -> None:
    daemon = _start(plugin_processes, fresh_containerd, tmp_path, two_socket_isolated)
    kube = fresh_kubelet
    g = kube.run_pod(guaranteed_pod("isolated-g")).container_id("c")
    granted = wait_placed(kube, daemon, g, "1", kind="isolated")
    assert granted.pool == "socket #1"
    # CPU 0 is reserved and CPU 1 isolated: no shared CPU is left, shared containers run on
    # the reserved CPU
    s = kube.run_pod(besteffort_pod("besteffort")).container_id("c")
    wait_placed(kube, daemon, s, "0", kind="shared")


def test_restart_keeps_allocations_and_admits_consistently(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket: Path,
) -> None:
    daemon = _start(plugin_processes, fresh_containerd, tmp_path, two_socket)
    kube = fresh_kubelet
    s = kube.run_pod(besteffort_pod("shared-s")).container_id("c")
    wait_placed(kube, daemon, s, "1", kind="shared")
    k = kube.run_pod(besteffort_pod("system", namespace="kube-system")).container_id("c")
    e_pod = kube.run_pod(guaranteed_pod("exclusive-e"))
    e = e_pod.container_id("c")
    before = {
        e: wait_placed(kube, daemon, e, "1", kind="exclusive"),
        s: wait_placed(kube, daemon, s, "0", kind="shared"),
        k: wait_placed(kube, daemon, k, "0", kind="reserved"),
    }

    with CpusetWatcher(kube, [s, k, e]) as watcher:
        daemon.kill9()
        again = TopologyAwareDaemon(
            plugin_processes,
            fresh_containerd,
            tmp_path / "state",
            tmp_path / "topology-aware.yaml",
            two_socket,
        )
        assert again.wait_for("^restored state from")["msg"].endswith(": 3 pods, 3 containers")
        synced = again.wait_for("^synchronized with the runtime")
        # a new pod is admitted consistently: no shared CPU is free anywhere while E holds
        # CPU 1, so it runs on the reserved CPU like S, in socket #1 (socket #0 holds only the
        # reserved CPU and can never have a shared one)
        n = kube.run_pod(besteffort_pod("shared-n")).container_id("c")
        placed = wait_placed(kube, again, n, "0", kind="shared")
        assert placed.pool == "socket #1"
    assert (synced["released"], synced["admitted"]) == ("", "")
    assert synced["kept"] == ",".join(sorted(before))
    updates = re.search(r"(\d+) updates$", synced["msg"])
    assert updates is not None and updates.group(1) == "0", synced["msg"]
    state = again.state()
    for cid, was in before.items():
        assert decided(state, cid) == was, f"{cid} changed across the restart"
        assert watcher.seen[cid] == [(was.cpus, was.mems)], (
            f"{cid}'s cgroup changed across the restart ({watcher.samples} samples)"
        )

    # the restored state still knows CPU 1 is taken: another exclusive request is refused
    with pytest.raises(CriError, match="exclusive CPU"):
        kube.run_pod(guaranteed_pod("exclusive-late"))
    # and when E leaves, CPU 1 is shared again: S and N move back to it
    kube.remove_pod(e_pod)
    wait_placed(kube, again, s, "1", kind="shared")
    wait_placed(kube, again, n, "1", kind="shared")
    first_decision = again.decisions(n)[0]
    assert (first_decision["cpus"], first_decision["mems"]) == ("0", "0")
