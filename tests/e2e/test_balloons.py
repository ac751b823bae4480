"""``nrirp run --policy balloons`` on a real containerd 1.7.24, on the fake two-socket machine
(CPU 0 on socket 0, CPU 1 on socket 1, both on NUMA node 0; see ``topology_aware_support``):
containers created through CRI get the cpusets of their balloons (cgroup ``cpuset.cpus`` and
the container's own ``/proc/1/status``), a balloon inflates when a second container joins and
deflates when it leaves, a reconfiguration (SIGHUP) moves containers to their new balloons,
and a SIGKILL + restart keeps every balloon and cpuset.

With ``reservedResources: {cpu: cpuset:0}`` the reserved balloon starts empty and other
balloons keep away from CPU 0 while CPU 1 is free.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from .harness import Containerd, ContainerSpec, Kubelet, PodSpec, Resources
from .harness.fixtures import PluginProcesses
from .topology_aware_support import (
    CpusetWatcher,
    TopologyAwareDaemon,
    observe,
    write_two_socket_tree,
)

pytestmark = pytest.mark.e2e

POLICY = "balloons"
TAG_BALLOON = "balloons.balloon"
CONFIG = """\
reservedResources: {cpu: "cpuset:0"}
balloonTypes:
  - name: app
    namespaces: [app]
"""


def burstable_pod(name: str, cpu: str, namespace: str = "app") -> PodSpec:
    resources = Resources.of(requests={"cpu": cpu}, limits={"memory": "64Mi"})
    return PodSpec(name, (ContainerSpec("c", resources),), namespace=namespace)


def besteffort_pod(name: str, namespace: str) -> PodSpec:
    return PodSpec(name, (ContainerSpec("c"),), namespace=namespace)


@pytest.fixture
def two_socket(tmp_path: Path) -> Path:
    return write_two_socket_tree(tmp_path / "two-socket-sys")


def start(
    processes: PluginProcesses, runtime: Containerd, tmp_path: Path, sysfs: Path
) -> TopologyAwareDaemon:
    config = tmp_path / "balloons.yaml"
    if not config.exists():
        config.write_text(CONFIG)
    daemon = TopologyAwareDaemon(
        processes, runtime, tmp_path / "state", config, sysfs, policy=POLICY
    )
    daemon.registered()
    return daemon


def placed(state: dict[str, Any], container_id: str) -> tuple[str, str, str] | None:
    """(balloon, cpus, mems) the state file records for the container."""
    for container in state.get("containers", []):
        if container["id"] == container_id:
            resources = container.get("resources") or {}
            tags = container.get("tags") or {}
            return (
                tags.get(TAG_BALLOON, ""),
                resources.get("cpus") or "",
                resources.get("mems") or "",
            )
    return None


def wait_in(
    kube: Kubelet,
    daemon: TopologyAwareDaemon,
    container_id: str,
    balloon: str,
    cpus: str | None = None,
    timeout: float = 10.0,
) -> tuple[str, str, str]:
    """Wait until the state puts the container in ``balloon`` (on ``cpus`` when given) and
    its cgroup and /proc view hold exactly the recorded cpus and mems."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            record = placed(daemon.state(), container_id)
        except (FileNotFoundError, ValueError):
            record = None
        seen = observe(kube, container_id)
        if (
            record is not None
            and record[0] == balloon
            and (cpus is None or record[1] == cpus)
            and seen.matches(record[1], record[2])
        ):
            return record
        if time.monotonic() > deadline:
            raise AssertionError(
                f"container {container_id}: expected balloon {balloon} cpus {cpus}; the daemon"
                f" recorded {record}, the container has {seen}; decisions:"
                f" {daemon.decisions(container_id)}"
            )
        time.sleep(0.1)


def balloon_cpus(state: dict[str, Any], name: str) -> str:
    saved = state["policy_data"][POLICY]["balloons"]
    return next(b["cpus"] for b in saved if f"{b['type']}[{b['index']}]" == name)


def test_containers_get_their_balloons_cpusets(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket: Path,
) -> None:
    daemon = start(plugin_processes, fresh_containerd, tmp_path, two_socket)
    kube = fresh_kubelet
    a = kube.run_pod(besteffort_pod("a", "app")).container_id("c")
    k = kube.run_pod(besteffort_pod("k", "kube-system")).container_id("c")
    # app[0] keeps away from the reserved CPU; kube-system inflates the reserved balloon there
    wait_in(kube, daemon, a, "app[0]", "1")
    wait_in(kube, daemon, k, "reserved[0]", "0")
    state = daemon.state()
    assert balloon_cpus(state, "app[0]") == "1" and balloon_cpus(state, "reserved[0]") == "0"
    decisions = daemon.decisions(a)
    assert decisions and "app[0]" in decisions[-1]["reason"]


def test_balloon_inflates_and_deflates(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket: Path,
) -> None:
    daemon = start(plugin_processes, fresh_containerd, tmp_path, two_socket)
    kube = fresh_kubelet
    a = kube.run_pod(burstable_pod("a", "600m")).container_id("c")
    wait_in(kube, daemon, a, "app[0]", "1")
    # 1100m: app[0] inflates to both CPUs (the reserved one too, as nothing else is free);
    # the first container is updated to the bigger cpuset
    b_pod = kube.run_pod(burstable_pod("b", "500m"))
    b = b_pod.container_id("c")
    wait_in(kube, daemon, b, "app[0]", "0-1")
    wait_in(kube, daemon, a, "app[0]", "0-1")
    # b leaves: app[0] deflates to one CPU and a runs there
    kube.remove_pod(b_pod)
    daemon.wait_state(lambda st: placed(st, b) is None)
    deadline = time.monotonic() + 10
    while len(balloon_cpus(daemon.state(), "app[0]").split(",")) != 1 or "-" in balloon_cpus(
        daemon.state(), "app[0]"
    ):
        assert time.monotonic() < deadline, daemon.state()
        time.sleep(0.1)
    left = balloon_cpus(daemon.state(), "app[0]")
    wait_in(kube, daemon, a, "app[0]", left)
    assert left in ("0", "1")


def test_containers_move_on_reconfiguration(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket: Path,
) -> None:
    daemon = start(plugin_processes, fresh_containerd, tmp_path, two_socket)
    kube = fresh_kubelet
    x = kube.run_pod(burstable_pod("x", "500m")).container_id("c")
    wait_in(kube, daemon, x, "app[0]", "1")
    # the reserved CPU is now 1 and app containers belong to a new type: x moves to moved[0]
    # on CPU 0, away from the reserved CPU
    (tmp_path / "balloons.yaml").write_text(
        'reservedResources: {cpu: "cpuset:1"}\n'
        "balloonTypes:\n"
        "  - {name: moved, namespaces: [app]}\n"
    )
    mark = len(daemon.records())
    os.kill(daemon.process.pid, signal.SIGHUP)
    daemon.wait_for(r"configuration .* applied", after=mark)
    wait_in(kube, daemon, x, "moved[0]", "0")
    # a configuration the policy cannot honour is refused; x stays where it is
    (tmp_path / "balloons.yaml").write_text(
        'reservedResources: {cpu: "cpuset:1"}\n'
        "balloonTypes:\n"
        "  - {name: moved, namespaces: [app], minBalloons: 1, minCPUs: 3}\n"
    )
    mark = len(daemon.records())
    os.kill(daemon.process.pid, signal.SIGHUP)
    refused = daemon.wait_for("policy refused configuration", after=mark)
    assert "cannot create its minBalloons" in refused["msg"]
    wait_in(kube, daemon, x, "moved[0]", "0")


def test_restart_keeps_every_balloon(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    two_socket: Path,
) -> None:
    daemon = start(plugin_processes, fresh_containerd, tmp_path, two_socket)
    kube = fresh_kubelet
    a = kube.run_pod(burstable_pod("a", "300m")).container_id("c")
    b = kube.run_pod(burstable_pod("b", "300m")).container_id("c")
    k = kube.run_pod(besteffort_pod("k", "kube-system")).container_id("c")
    before = {
        a: wait_in(kube, daemon, a, "app[0]", "1"),
        b: wait_in(kube, daemon, b, "app[0]", "1"),
        k: wait_in(kube, daemon, k, "reserved[0]", "0"),
    }
    with CpusetWatcher(kube, list(before)) as watcher:
        daemon.kill9()
        again = start(plugin_processes, fresh_containerd, tmp_path, two_socket)
        synced = again.wait_for("^synchronized with the runtime")
    updates = re.search(r"(\d+) updates$", synced["msg"])
    assert updates is not None and updates.group(1) == "0", synced["msg"]
    for cid, was in before.items():
        assert placed(again.state(), cid) == was
        assert watcher.seen[cid] == [(was[1], was[2])], f"{cid}'s cgroup changed"
    # and it goes on: a third app container joins app[0] (900m: still one CPU)
    c = kube.run_pod(burstable_pod("c", "300m")).container_id("c")
    wait_in(kube, again, c, "app[0]", "1")
