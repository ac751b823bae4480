"""The example plugins on a real containerd 1.7.24 (NRI 0.6.1), through the e2e harness.

External logger: every lifecycle event is logged, and the subscription is trimmed to what NRI 0.6.1
accepts. pin_cpus: an annotation pins a new container, and an unsolicited UpdateContainers (SIGUSR1
+ control file) really changes a running container's cpuset (cgroup and /proc). Pre-launched
logger: containerd starts it from its plugin directory with fd 3 and the config file, and nothing
reaches stdout/stderr.
"""

from __future__ import annotations

import json
import os
import re
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.e2e import conftest as e2e_fixtures
from tests.e2e.harness import Containerd, ContainerSpec, Kubelet, PodSpec
from tests.e2e.harness.fixtures import PluginProcesses
from tests.e2e.harness.gomockrt import REPO_ROOT
from tests.e2e.helpers import require_cpus

pytestmark = pytest.mark.e2e

# The e2e suite's fixtures (a real containerd, a CRI client playing kubelet, plugin processes).
e2e_host = e2e_fixtures.e2e_host
runtime_binaries = e2e_fixtures.runtime_binaries
cri_api = e2e_fixtures.cri_api
busybox_image = e2e_fixtures.busybox_image
e2e_logs_dir = e2e_fixtures.e2e_logs_dir
containerd_factory = e2e_fixtures.containerd_factory
containerd = e2e_fixtures.containerd
make_containerd = e2e_fixtures.make_containerd
kubelet = e2e_fixtures.kubelet
plugin_processes = e2e_fixtures.plugin_processes

LOGGER = "nrirp.adapters.nri.examples.logger"
PIN_CPUS = "nrirp.adapters.nri.examples.pin_cpus"


def test_external_logger_logs_every_event_of_a_real_pod(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses
) -> None:
    plugin = plugin_processes.python(
        LOGGER,
        ["--socket", str(containerd.nri_socket), "--name", "pylogger", "--index", "20"],
    )
    configured = plugin.wait_for_line(r"Configure runtime=containerd version=\S+")
    assert "nri=-" in configured  # NRI 0.6.1 does not send its version
    registered = plugin.wait_for_line(r"20-pylogger: registered with containerd")
    assert "NRI v0.6.1 (inferred from the runtime version)" in registered
    assert "ValidateContainerAdjustment" not in registered  # trimmed for NRI <= 0.9
    assert registered.endswith("subscribed to " + ",".join(LIFECYCLE))

    pod = kubelet.run_pod(PodSpec("logged", (ContainerSpec("c"),)))
    cid = pod.container_id("c")
    kubelet.remove_pod(pod)
    container = f"pod=default/logged container=c id={cid}"
    for line in [
        "RunPodSandbox pod=default/logged",
        f"CreateContainer {container}",
        f"PostCreateContainer {container}",
        f"StartContainer {container}",
        f"PostStartContainer {container}",
        f"StopContainer {container}",
        f"RemoveContainer {container}",
        "StopPodSandbox pod=default/logged",
        "RemovePodSandbox pod=default/logged",
    ]:
        plugin.wait_for_line(re.escape(line))


LIFECYCLE = [
    "RunPodSandbox",
    "StopPodSandbox",
    "RemovePodSandbox",
    "CreateContainer",
    "PostCreateContainer",
    "StartContainer",
    "PostStartContainer",
    "UpdateContainer",
    "PostUpdateContainer",
    "StopContainer",
    "RemoveContainer",
]


def test_pin_cpus_pins_by_annotation_and_repins_a_running_container_by_update(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses, tmp_path: Path
) -> None:
    require_cpus(2)
    control = tmp_path / "pins.json"
    plugin = plugin_processes.python(
        PIN_CPUS,
        ["--socket", str(containerd.nri_socket), "--index", "21", "--control-file", str(control)],
    )
    plugin.wait_for_line(r"synchronized \d+ containers")
    spec = PodSpec(
        "pinned",
        (ContainerSpec("c", cpuset_cpus="0"),),
        annotations={"cpus.pin-cpus.nrirp.io/pod": "1"},
    )
    cid = kubelet.run_pod(spec).container_id("c")
    assert kubelet.container_cgroup_cpuset(cid) == "1"  # CRI asked for 0, the annotation won
    assert kubelet.container_cpus_allowed(cid) == "1"

    control.write_text(json.dumps({cid: "0"}))
    os.kill(plugin.pid, signal.SIGUSR1)
    plugin.wait_for_line(re.escape("re-pinned 1 container(s), 0 failed"))
    assert kubelet.container_cgroup_cpuset(cid) == "0"  # the running container moved
    assert kubelet.container_cpus_allowed(cid) == "0"


def test_prelaunched_logger_started_by_containerd(
    make_containerd: Callable[..., Containerd], tmp_path: Path
) -> None:
    events = tmp_path / "events.log"
    runtime = make_containerd(start=False)
    plugin = runtime.install_python_plugin(
        8,
        "pylogger",
        LOGGER,
        ["--log-file", str(events)],
        config="some: config\n",
        pythonpath=[REPO_ROOT],
    )
    runtime.start()  # containerd waits for pre-launched plugins to register
    text = events.read_text()
    assert "08-pylogger: registered with containerd" in text  # identity from NRI_PLUGIN_*
    assert "config=13 bytes" in text  # 08-pylogger.conf arrived in Configure

    cid = Kubelet(runtime).run_pod(PodSpec("pre", (ContainerSpec("c"),))).container_id("c")
    assert f"CreateContainer pod=default/pre container=c id={cid}" in _wait_for(
        events, f"StartContainer pod=default/pre container=c id={cid}"
    )
    assert plugin.log_path.read_text() == ""  # nothing on stdout or stderr


def _wait_for(path: Path, text: str, timeout: float = 10.0) -> str:
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        content = path.read_text()
        if text in content:
            return content
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in {path}:\n{path.read_text()}")
