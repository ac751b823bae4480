"""The NRI v0.1 exec plugin on a real containerd 1.6.20 (Debian bookworm's, unpacked privately,
in a private mount namespace for /etc/nri and /opt/nri/bin): pods created through CRI get the
cpusets the daemon decided (read from their cgroups), an exclusive pod shrinks the first pod's
shared CPUs (its cgroup is updated), deleting pods gives them back, the standalone path decides
the same, and a bad plugin conf fails the pod's start with our message."""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from .harness import Containerd, CriApi, ImageArchive, Kubelet, RuntimeBinaries
from .harness.config import ContainerdOptions
from .harness.containerd16 import Containerd16, fetch_containerd16
from .harness.fixtures import PluginProcesses, private_base
from .harness.kubelet import CriError
from .topology_aware_support import besteffort_pod, guaranteed_pod, write_two_socket_tree

pytestmark = pytest.mark.e2e

EXEC = shutil.which("nrirp-nri-v01", path=os.path.dirname(sys.executable))
CONFIG = "reservedResources:\n  cpu: cpuset:0\n"


@pytest.fixture(scope="module")
def containerd16(
    runtime_binaries: RuntimeBinaries,
    cri_api: CriApi,
    busybox_image: ImageArchive,
    e2e_logs_dir: Path,
) -> Iterator[Containerd16]:
    binaries = fetch_containerd16(runtime_binaries)
    root = Path(tempfile.mkdtemp(prefix="nrirp-ctrd16-", dir=private_base()))
    instance = Containerd16(
        binaries, cri_api, busybox_image, root, ContainerdOptions(nri_enabled=False)
    )
    assert EXEC is not None, "nrirp-nri-v01 is not installed next to this Python"
    instance.install_exec_plugin("nrirp", Path(EXEC))
    try:
        instance.start()
        yield instance
    finally:
        problems = instance.destroy(logs_to=e2e_logs_dir / "nri-v01")
        assert not problems, problems


@pytest.fixture
def kubelet16(containerd16: Containerd16) -> Iterator[Kubelet]:
    kube = Kubelet(containerd16)
    try:
        yield kube
    finally:
        containerd16.write_nri_conf([])  # remove the pods without any plugin
        kube.remove_all()


def conf(tmp_path: Path, mode: str) -> dict[str, object]:
    (tmp_path / "config.yaml").write_text(CONFIG)
    return {
        "socket": str(tmp_path / "engine.sock"),
        "mode": mode,
        "policy": "topology-aware",
        "configFile": str(tmp_path / "config.yaml"),
        "stateDir": str(tmp_path / "state"),
        "sysfsRoot": str(write_two_socket_tree(tmp_path / "sys")),
        "timeout": 30,
    }


def wait_cpuset(kube: Kubelet, container_id: str, expected: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while (found := kube.container_cgroup_cpuset(container_id)) != expected:
        assert time.monotonic() < deadline, f"{container_id[:12]}: cpuset {found}, not {expected}"
        time.sleep(0.05)


def moves(kube: Kubelet, runtime: Containerd) -> None:
    """S (BestEffort) on the shared CPU 1; E (Guaranteed, 1 CPU) takes CPU 1 and S's cgroup is
    moved to the reserved CPU 0; removing E moves S back."""
    s = kube.run_pod(besteffort_pod("shared-s")).container_id("c")
    wait_cpuset(kube, s, "1", timeout=0)  # written before the task started: no waiting
    e_pod = kube.run_pod(guaranteed_pod("exclusive-e"))
    wait_cpuset(kube, e_pod.container_id("c"), "1", timeout=0)
    wait_cpuset(kube, s, "0", timeout=0)  # the other container's cgroup, before E started
    assert kube.exec_ok(s, ["grep", "Cpus_allowed_list", "/proc/1/status"]).split()[-1] == "0"
    kube.remove_pod(e_pod)  # the deletes release E's CPU: S grows back
    wait_cpuset(kube, s, "1")


@pytest.fixture
def daemon(
    plugin_processes: PluginProcesses, tmp_path: Path
) -> Callable[[dict[str, object]], object]:
    def start(settings: dict[str, object]) -> object:
        proc = plugin_processes.start(
            [
                sys.executable, "-m", "nrirp", "run", "--nri-v01",
                "--policy", "topology-aware", "--config-file", str(settings["configFile"]),
                "--engine-socket", str(settings["socket"]),
                "--state-dir", str(settings["stateDir"]),
                "--sysfs-root", str(settings["sysfsRoot"]),
                "--config-poll-interval", "0", "--disable-agent",
            ],
            name="nrirp-nri-v01-daemon",
        )  # fmt: skip
        proc.wait_for_line(r"serving the engine API and NRI v0\.1")
        return proc

    return start


def test_daemon_path_places_moves_and_releases(
    containerd16: Containerd16,
    kubelet16: Kubelet,
    daemon: Callable[[dict[str, object]], object],
    tmp_path: Path,
) -> None:
    assert containerd16.binaries.containerd_version == "1.6.20"
    settings = conf(tmp_path, "daemon")
    daemon(settings)
    containerd16.write_nri_conf([{"type": "nrirp", "conf": settings}])
    moves(kubelet16, containerd16)
    state = json.loads((tmp_path / "state" / "cache").read_text())
    assert {c["name"] for c in state["containers"]} == {"c"}  # E's container is gone


def test_standalone_path_decides_the_same(
    containerd16: Containerd16, kubelet16: Kubelet, tmp_path: Path
) -> None:
    containerd16.write_nri_conf([{"type": "nrirp", "conf": conf(tmp_path, "auto")}])
    moves(kubelet16, containerd16)  # no daemon: every invocation decides from the state


def test_a_bad_conf_fails_the_pod_start_with_our_message(
    containerd16: Containerd16, kubelet16: Kubelet, tmp_path: Path
) -> None:
    bad = {**conf(tmp_path, "auto"), "polcy": "topology-aware"}
    containerd16.write_nri_conf([{"type": "nrirp", "conf": bad}])
    with pytest.raises(CriError) as caught:
        kubelet16.run_pod(besteffort_pod("refused"))
    assert "nri invoke: plugin: nrirp: bad request: conf.polcy: unknown key" in str(caught.value)
