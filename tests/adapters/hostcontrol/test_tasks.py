"""Scheduling class and I/O priority on real processes; the composite host adapter; the
resources.sh export directory."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.hostcontrol.export import DirectoryResourceExport
from nrirp.adapters.hostcontrol.host import HostAdapter
from nrirp.adapters.hostcontrol.sched import ProcessScheduler, ioprio_value
from nrirp.domain.model import (
    HostChange,
    IOPriority,
    IOPriorityClass,
    Scheduling,
    SchedulingPolicy,
)
from nrirp.domain.ports.host_control import HostControlError, HostTarget


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "30"])
    yield process
    process.kill()
    process.wait()


def test_scheduling_and_io_priority_of_a_process(child: subprocess.Popen[bytes]) -> None:
    scheduler = ProcessScheduler()
    tids = scheduler.threads([child.pid])
    assert tids == [child.pid]
    scheduler.apply(
        tids,
        Scheduling(policy=SchedulingPolicy.BATCH, nice=7),
        IOPriority(IOPriorityClass.IDLE, 0),
    )
    assert os.sched_getscheduler(child.pid) == os.SCHED_BATCH
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == 7
    assert scheduler.io_priority(child.pid) == ioprio_value(IOPriority(IOPriorityClass.IDLE, 0))
    scheduler.apply(tids, Scheduling(policy=SchedulingPolicy.NONE, nice=3), None)
    assert os.sched_getscheduler(child.pid) == os.SCHED_BATCH  # the policy stays
    assert os.getpriority(os.PRIO_PROCESS, child.pid) == 3
    # tasks gone meanwhile are skipped
    scheduler.apply([2**22 + 1], Scheduling(policy=SchedulingPolicy.OTHER), None)


def test_an_invalid_class_is_reported(child: subprocess.Popen[bytes]) -> None:
    with pytest.raises(HostControlError, match=f"scheduling of task {child.pid}: "):
        ProcessScheduler().apply(
            [child.pid], Scheduling(policy=SchedulingPolicy.DEADLINE, runtime=5, deadline=1), None
        )


def test_the_host_adapter_finds_tasks_in_the_cgroup(
    tmp_path: Path, child: subprocess.Popen[bytes]
) -> None:
    root = tmp_path / "cgroup"
    (root / "pod" / "c1").mkdir(parents=True)
    (root / "cgroup.controllers").write_text("cpu\n")
    (root / "pod" / "c1" / "cgroup.procs").write_text(f"{child.pid}\n")
    (root / "pod" / "c1" / "cpu.weight").write_text("")
    host = HostAdapter(CgroupfsHostControl(str(root)))
    target = HostTarget("c1", "p1", "", "/pod/c1")
    host.apply(
        target,
        HostChange(
            cgroup={"cpu.weight": "50"},
            scheduling=Scheduling(policy=SchedulingPolicy.IDLE),
            io_priority=IOPriority(IOPriorityClass.BEST_EFFORT, 6),
        ),
    )
    assert (root / "pod" / "c1" / "cpu.weight").read_text() == "50"
    assert os.sched_getscheduler(child.pid) == os.SCHED_IDLE
    # without a cgroup, its main process
    lone = HostTarget("c2", "p1", "", "/gone", pid=child.pid)
    host.apply(lone, HostChange(scheduling=Scheduling(policy=SchedulingPolicy.OTHER, nice=1)))
    assert os.sched_getscheduler(child.pid) == os.SCHED_OTHER
    with pytest.raises(HostControlError, match="no process to apply the scheduling class to"):
        host.apply(HostTarget("c3", "p1", "", "/gone"), HostChange(scheduling=Scheduling()))


def test_export_directory(tmp_path: Path) -> None:
    export = DirectoryResourceExport(str(tmp_path / "containers"))
    export.write("abc", 'SHARED_CPUS="0-3"\n')
    path = tmp_path / "containers" / "abc" / "resources.sh"
    assert path.read_text() == 'SHARED_CPUS="0-3"\n'
    assert oct(path.stat().st_mode & 0o777) == "0o644"
    export.remove("abc")
    export.remove("abc")
    assert not (tmp_path / "containers" / "abc").exists()
    with pytest.raises(HostControlError, match="cannot name a directory"):
        export.location("../x")
