"""``nrirp run`` across repeated restarts of a real containerd 1.7.24: after each one the daemon
registers again within a second of the NRI socket reappearing, whatever the downtime and
however many restarts (and crashes, which leave a stale socket) came before.

Measured from the socket's creation (its ctime) to the daemon's ``registered with`` log record;
both are wall-clock times of the same host.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from .harness import Containerd, ContainerSpec, Kubelet, PodSpec
from .harness.fixtures import PluginProcesses
from .helpers import require_cpus
from .test_daemon import Daemon, sysfs_tree  # noqa: F401 (sysfs_tree: a fixture)

pytestmark = pytest.mark.e2e

# (how containerd goes away, how long it stays away in s)
OUTAGES = [("stop", 0.2), ("stop", 1.5), ("kill", 3.0), ("stop", 6.0), ("kill", 0.5)]


def test_daemon_registers_again_within_a_second_of_each_containerd_restart(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
    sysfs_tree: Path,  # noqa: F811
) -> None:
    require_cpus(2)
    survivor = fresh_kubelet.run_pod(PodSpec("survivor", (ContainerSpec("c"),)))
    daemon = Daemon(plugin_processes, fresh_containerd, tmp_path / "state", sysfs_tree)
    daemon.registered()
    cid = survivor.container_id("c")
    daemon.wait_state(lambda s: cid in {c["id"] for c in s.get("containers", [])})
    latencies = []
    for how, downtime in OUTAGES:
        seen = len(daemon.records())
        if how == "kill":
            fresh_containerd.kill()  # a crash: the socket stays behind, refusing
        else:
            fresh_containerd.stop()  # containerd removes its socket
        daemon.wait_for("connection to the runtime lost", after=seen)
        time.sleep(downtime)
        fresh_containerd.start()
        appeared = fresh_containerd.nri_socket.stat().st_ctime
        registered = daemon.wait_for("registered with containerd", after=seen)
        synced = daemon.wait_for("^synchronized with the runtime", after=seen)
        assert synced["kept"] == cid  # the survivor keeps its resources through every restart
        latencies.append((how, downtime, registered["time"] - appeared))
    print("re-registration after the NRI socket reappeared (how, downtime s, latency s):")
    for how, downtime, latency in latencies:
        print(f"  {how} {downtime:.1f} {latency:.3f}")
    assert all(latency < 1.0 for _how, _down, latency in latencies), latencies
    assert daemon.process.running
