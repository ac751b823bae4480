"""Prove the NRI path of the harness with the Go reference plugin (``nristub`` from gomockrt).

CRI asks for cpuset "0"; the Go plugin adjusts every new container to "1"; the container must
really run on CPU 1 (inside: Cpus_allowed_list, outside: the cgroup's cpuset.cpus).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.gomockrt import REPO_ROOT

from .harness import (
    Containerd,
    ContainerdError,
    ContainerdOptions,
    ContainerSpec,
    Kubelet,
    PodSpec,
)
from .harness.facts import runtime_facts
from .harness.fixtures import PluginProcesses
from .helpers import require_cpus

pytestmark = pytest.mark.e2e

PROBE = "tests.e2e.harness.probe_plugin"


def _run_one(kubelet: Kubelet, name: str, cpuset: str = "0") -> str:
    pod = kubelet.run_pod(PodSpec(name, (ContainerSpec("c", cpuset_cpus=cpuset),)))
    return pod.container_id("c")


def test_external_go_plugin_adjusts_cpuset(
    containerd: Containerd, kubelet: Kubelet, plugin_processes: PluginProcesses, nristub: Path
) -> None:
    require_cpus(2)
    before = _run_one(kubelet, "before-plugin")
    plugin = plugin_processes.start(
        [nristub, "-socket", containerd.nri_socket, "-cpus", "1", "-name", "gostub", "-idx", "10"]
    )
    version = re.escape(containerd.binaries.containerd_version)
    plugin.wait_for_line(rf"nristub: configured by containerd {version}")
    # the plugin connected while a pod ran: it is told about it in Synchronize
    assert plugin.wait_for_line(r"nristub: synchronize \d+ pods") == (
        "nristub: synchronize 1 pods 1 containers"
    )

    cid = _run_one(kubelet, "with-plugin")
    assert kubelet.container_cpus_allowed(cid) == "1"
    assert kubelet.container_cgroup_cpuset(cid) == "1"
    # CRI still reports what CRI asked for: only /proc and the cgroup show the NRI adjustment
    status = kubelet.container_status(cid).status
    assert status.resources.linux.cpuset_cpus == "0"
    assert kubelet.container_cgroup_cpuset(before) == "0"  # created before the plugin: untouched
    assert re.search(r'plugin \\?"external:10-gostub\[\d+\]\\?" registered', containerd.log_text())

    plugin.stop()
    # once the plugin is gone, containerd drops it and new containers get what CRI asked for
    cid = _run_one(kubelet, "after-plugin")
    assert kubelet.container_cgroup_cpuset(cid) == "0"
    assert kubelet.container_cpus_allowed(cid) == "0"


def _probe_report(log: Path) -> dict[str, object]:
    for line in log.read_text().splitlines():
        if line.startswith("probe {"):
            report: dict[str, object] = json.loads(line.removeprefix("probe "))
            return report
    raise AssertionError(f"no probe report in {log}:\n{log.read_text()}")


def test_prelaunched_python_wrapper_runs_a_plugin(
    make_containerd: Callable[..., Containerd], nristub: Path
) -> None:
    require_cpus(2)
    runtime = make_containerd(start=False)
    plugin = runtime.install_python_plugin(
        7,
        "probe",
        PROBE,
        ["--exec", str(nristub), "-cpus", "1"],
        config="probe: config\n",
        pythonpath=[REPO_ROOT],
    )
    assert plugin.path == runtime.plugin_dir / "07-probe"
    assert plugin.config_path == runtime.plugin_config_dir / "07-probe.conf"
    assert plugin.config_path.read_text() == "probe: config\n"
    runtime.start()

    report = _probe_report(plugin.log_path)
    env = report["env"]
    assert isinstance(env, dict)
    # containerd's exact plugin environment: identity + fd number, and no PATH
    assert env["NRI_PLUGIN_NAME"] == "probe"
    assert env["NRI_PLUGIN_IDX"] == "07"
    assert env["NRI_PLUGIN_SOCKET"] == "3"
    assert "PATH" not in env
    assert report["fd3_is_socket"] is True
    assert "nristub: configured by containerd" in plugin.log_path.read_text()

    kubelet = Kubelet(runtime)
    cid = _run_one(kubelet, "prelaunched")
    assert kubelet.container_cpus_allowed(cid) == "1"
    assert kubelet.container_cgroup_cpuset(cid) == "1"


def test_prelaunched_plugin_that_never_registers_times_out(
    make_containerd: Callable[..., Containerd],
) -> None:
    """A pre-launched plugin that misses the registration timeout: containerd 1.7.24 exits (the
    harness reports it with containerd's own message), 2.x logs it and goes on without the
    plugin. Also proves the timeout option is used."""
    runtime = make_containerd(ContainerdOptions(registration_timeout="1s"), start=False)
    plugin = runtime.install_python_plugin(9, "silent", PROBE, pythonpath=[REPO_ROOT])
    started = time.monotonic()
    if runtime_facts(runtime).prelaunched_timeout_is_fatal:
        with pytest.raises(ContainerdError, match="plugin registration timed out"):
            runtime.start()
        elapsed = time.monotonic() - started
        assert not runtime.running
    else:
        runtime.start()
        message = re.compile(
            r'failed to start pre-installed NRI plugin \\?"silent\\?": plugin '
            r"registration timed out"
        )
        deadline = started + 10
        while not message.search(runtime.log_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        elapsed = time.monotonic() - started
        assert message.search(runtime.log_text()), runtime.log_tail()
        assert runtime.running
    assert 1.0 <= elapsed < 5.0, elapsed  # the default timeout would be 5 s
    assert _probe_report(plugin.log_path)["fd3_is_socket"] is True
