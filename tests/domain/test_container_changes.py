from __future__ import annotations

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    HOST_CONTROLLER,
    RUNTIME_CONTROLLER,
    ContainerChangeError,
    ContainerState,
    HostChange,
    LinuxResources,
    Mount,
    Scheduling,
    SchedulingPolicy,
)

from .support import make_container, make_pod


def test_setting_a_value_marks_runtime_pending() -> None:
    ctr = make_container(make_pod())
    changed = ctr.with_cpus(CPUSet.parse("1-2")).with_mems(CPUSet.of(0))
    assert changed.cpus == CPUSet.parse("1-2")
    assert changed.pending.resources == LinuxResources(cpus=CPUSet.parse("1-2"), mems=CPUSet.of(0))
    assert changed.pending.controllers == {RUNTIME_CONTROLLER}
    assert ctr.pending.controllers == frozenset()  # values are immutable


def test_setting_the_current_value_is_not_a_change() -> None:
    ctr = make_container(make_pod())
    same = ctr.with_resources(LinuxResources(cpu_shares=ctr.resources.cpu_shares))
    assert same is ctr
    assert not same.pending.controllers


def test_delivered_changes_are_forgotten_per_controller() -> None:
    ctr = make_container(make_pod(), state=ContainerState.RUNNING)
    ctr = ctr.with_cpus(CPUSet.of(3)).with_host_change(HostChange(cgroup={"memory.high": "1G"}))
    assert ctr.pending.controllers == {RUNTIME_CONTROLLER, HOST_CONTROLLER}
    after_runtime = ctr.without_pending(RUNTIME_CONTROLLER)
    assert after_runtime.pending.controllers == {HOST_CONTROLLER}
    assert after_runtime.pending.resources.is_empty()
    assert after_runtime.pending.host.cgroup == {"memory.high": "1G"}
    assert after_runtime.cpus == CPUSet.of(3)  # the decision itself stays
    assert after_runtime.without_pending(HOST_CONTROLLER).pending.controllers == frozenset()


def test_creation_extras_only_while_creating() -> None:
    pod = make_pod()
    creating = make_container(pod)
    mount = Mount("/.nri-resource-policy/resources.sh", "/var/lib/x/resources.sh")
    changed = creating.with_creation_extras(env={"A": "1"}, annotations={"k": "v"}, mounts=(mount,))
    assert changed.pending.env == {"A": "1"}
    assert changed.pending.mounts == (mount,)
    running = make_container(pod, state=ContainerState.RUNNING)
    with pytest.raises(ContainerChangeError, match="only be set at creation"):
        running.with_creation_extras(env={"A": "1"})


def test_scheduling_goes_to_runtime_at_creation_and_host_afterwards() -> None:
    pod = make_pod()
    sched = Scheduling(SchedulingPolicy.BATCH, nice=5)
    creating = make_container(pod).with_scheduling(sched)
    assert creating.pending.scheduling == sched
    assert creating.pending.controllers == {RUNTIME_CONTROLLER}
    running = make_container(pod, state=ContainerState.RUNNING).with_scheduling(sched)
    assert running.pending.host.scheduling == sched
    assert running.pending.controllers == {HOST_CONTROLLER}


def test_resources_merge_and_difference() -> None:
    base = LinuxResources(cpu_shares=2, unified={"a": "1"}, cpus=CPUSet.of(1))
    change = LinuxResources(cpu_shares=2, unified={"a": "1", "b": "2"}, cpus=CPUSet.of(2))
    assert change.difference(base) == LinuxResources(unified={"b": "2"}, cpus=CPUSet.of(2))
    merged = base.merged(change.difference(base))
    assert merged == LinuxResources(cpu_shares=2, unified={"a": "1", "b": "2"}, cpus=CPUSet.of(2))
    assert LinuxResources().is_empty()
    assert base.set_fields() == ("cpu_shares", "cpus", "unified")
