"""``nrirp run --record`` on a real containerd 1.7.24: what the daemon records of a real
runtime's requests (its Synchronize, pods and containers with their real ids, mounts,
annotations and resources, a refusal) replays with ``nrirp simulate`` to the placements the
daemon made. The recorder hears of each call after its reply was sent (the NRI plugin's
``after_reply``), so this also checks that nothing is lost or reordered that way.

Same fake two-socket machine as ``test_topology_aware.py`` (this host's CPUs 0-1).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from .daemon_process import REPO, DaemonProcess
from .harness import Containerd, CriError, Kubelet
from .harness.fixtures import PluginProcesses
from .topology_aware_support import (
    besteffort_pod,
    decided,
    guaranteed_pod,
    wait_placed,
    write_two_socket_tree,
)

pytestmark = pytest.mark.e2e


def _placements(state: dict[str, Any]) -> dict[str, str]:
    return {c["id"]: (c.get("resources") or {}).get("cpus") or "" for c in state["containers"]}


def test_a_recording_of_a_real_runtime_replays_to_the_daemon_s_placements(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
) -> None:
    kube = fresh_kubelet
    before = kube.run_pod(besteffort_pod("before")).container_id("c")  # for the Synchronize
    sysfs = write_two_socket_tree(tmp_path / "sys")
    config = tmp_path / "config.yaml"
    config.write_text("reservedResources:\n  cpu: cpuset:0\n")
    record = tmp_path / "rec.yaml"
    daemon = DaemonProcess(
        plugin_processes,
        fresh_containerd,
        tmp_path / "state",
        policy="topology-aware",
        args=[
            "--sysfs-root", str(sysfs),
            "--config-file", str(config),
            "--config-poll-interval", "0",
            "--record", str(record),
        ],
    )  # fmt: skip
    daemon.registered()
    wait_placed(kube, daemon, before, "1", kind="shared")
    shared = kube.run_pod(besteffort_pod("shared")).container_id("c")
    wait_placed(kube, daemon, shared, "1", kind="shared")
    exclusive_pod = kube.run_pod(guaranteed_pod("exclusive"))
    wait_placed(kube, daemon, exclusive_pod.container_id("c"), "1", kind="exclusive")
    wait_placed(kube, daemon, shared, "0")  # moved off the exclusive CPU
    with pytest.raises(CriError):  # two whole CPUs on a machine with one to give: refused
        kube.run_pod(guaranteed_pod("too-big", cpus="2"))
    kube.remove_pod(exclusive_pod)
    wait_placed(kube, daemon, shared, "1")  # and back
    final = daemon.wait_state(lambda s: decided(s, shared) is not None)
    placements = _placements(final)
    daemon.process.stop()
    assert daemon.process.returncode == 0

    text = record.read_text()
    assert text.startswith("# nrirp recording")
    assert text.splitlines()[-1].startswith("# end of recording: the daemon stopped at ")
    done = subprocess.run(
        [sys.executable, "-m", "nrirp", "simulate", "--workload", str(record), "--json"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(REPO / "src"), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    replay = json.loads(done.stdout)
    steps = replay["steps"]
    assert steps[0]["kind"] == "synchronize" and "1 pod, 1 container" in steps[0]["description"]
    refused = [s for s in steps if not s["ok"]]
    assert refused and all(s["as_expected"] for s in refused)  # the refusal, as recorded
    assert any("no pool has 2 exclusive CPUs" in e for s in refused for e in s["errors"])
    replayed = {c["id"]: c["cpus"] or "" for c in steps[-1]["containers"]}
    assert replayed == placements
    assert set(placements) == {before, shared}
