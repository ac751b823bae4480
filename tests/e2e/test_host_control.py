"""Scheduling classes on the real containerd 1.7.24 (and 2.x in ``test_containerd2.py``), whose
NRI (v0.6.1; v0.8.0 in Debian's 2.1) cannot carry them:
``nrirp run`` knows it from the runtime's version and its host controller gives every task of
the container the class once it started (``sched_setattr``, ``ioprio_set``). What the
container's process runs with is read from the host: ``sched_getscheduler``, ``getpriority``,
``ioprio_get`` and ``/proc/<pid>/sched``.

Only the ``sched`` host control is on (``--host-control sched``): the test machine's interrupts
and CPU settings are left alone.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nrirp.adapters.hostcontrol.sched import ProcessScheduler, ioprio_value
from nrirp.domain.model import IOPriority, IOPriorityClass

from .daemon_process import DaemonProcess
from .harness import Containerd, ContainerSpec, Kubelet, PodSpec
from .harness.fixtures import PluginProcesses

pytestmark = pytest.mark.e2e

CONFIG = """\
reservedResources: {cpu: "cpuset:0"}
schedulingClasses:
  - {name: batchy, policy: batch, nice: 7, ioClass: be, ioPriority: 6}
  - {name: quiet, policy: idle, ioClass: idle}
"""
KEY = "scheduling-class.resource-policy.nri.io"


def _pod(name: str, scheduling_class: str | None) -> PodSpec:
    annotations = {KEY: scheduling_class} if scheduling_class else {}
    return PodSpec(name, (ContainerSpec("c"),), annotations=annotations)


def _wait(check: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}", pytrace=False)
        time.sleep(0.05)


def _sched_policy(pid: int) -> int:
    """``policy`` of ``/proc/<pid>/sched`` (what the kernel reports for the task)."""
    text = Path(f"/proc/{pid}/sched").read_text()
    match = re.search(r"^policy\s*:\s*(\d+)", text, re.MULTILINE)
    assert match is not None, text
    return int(match[1])


def _tasks(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def test_scheduling_classes_reach_the_tasks_when_nri_cannot_carry_them(
    fresh_containerd: Containerd,
    fresh_kubelet: Kubelet,
    plugin_processes: PluginProcesses,
    tmp_path: Path,
) -> None:
    config = tmp_path / "topology-aware.yaml"
    config.write_text(CONFIG)
    daemon = DaemonProcess(
        plugin_processes,
        fresh_containerd,
        tmp_path / "state",
        policy="topology-aware",
        args=[
            *("--config-file", str(config), "--config-poll-interval", "0"),
            *("--host-control", "sched"),
        ],
        name="nrirp-host-control",
    )
    daemon.registered()
    daemon.wait_for("does not apply scheduling classes from NRI")
    kube = fresh_kubelet
    scheduler = ProcessScheduler()

    batchy = kube.container_pid(kube.run_pod(_pod("batchy", "batchy")).container_id("c"))
    _wait(lambda: os.sched_getscheduler(batchy) == os.SCHED_BATCH, "SCHED_BATCH on the task")
    assert _sched_policy(batchy) == os.SCHED_BATCH
    for task in _tasks(batchy):
        assert os.sched_getscheduler(task) == os.SCHED_BATCH
        assert os.getpriority(os.PRIO_PROCESS, task) == 7
        assert scheduler.io_priority(task) == ioprio_value(
            IOPriority(IOPriorityClass.BEST_EFFORT, 6)
        )

    quiet = kube.container_pid(kube.run_pod(_pod("quiet", "quiet")).container_id("c"))
    _wait(lambda: os.sched_getscheduler(quiet) == os.SCHED_IDLE, "SCHED_IDLE on the task")
    assert _sched_policy(quiet) == os.SCHED_IDLE
    assert scheduler.io_priority(quiet) >> 13 == 3  # IOPRIO_CLASS_IDLE

    plain = kube.container_pid(kube.run_pod(_pod("plain", None)).container_id("c"))
    time.sleep(0.5)  # what a class would have changed by now
    assert os.sched_getscheduler(plain) == os.SCHED_OTHER
    assert os.getpriority(os.PRIO_PROCESS, plain) == 0
    # the daemon said how it applied them: on the host, not through NRI
    assert not [r for r in daemon.records() if r.get("levelname") == "ERROR"]
