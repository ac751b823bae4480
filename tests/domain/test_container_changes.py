from __future__ import annotations

from types import MappingProxyType
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    HOST_CONTROLLER,
    RUNTIME_CONTROLLER,
    Container,
    ContainerChangeError,
    ContainerState,
    HostChange,
    LinuxResources,
    Mount,
    PendingChanges,
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


# ---------------------------------------------------------------- against the plain definitions
# The model's change methods take shortcuts (cpus/mems-only changes, one dict copy per value
# instead of attrs.evolve); these are the definitions they must agree with.

_MAPS = ("hugepage_limits", "unified")


def _plain_merged(base: LinuxResources, other: LinuxResources) -> LinuxResources:
    changes: dict[str, Any] = {}
    for field in attrs.fields(LinuxResources):
        value = getattr(other, field.name)
        if field.name in _MAPS:
            if value:
                changes[field.name] = {**getattr(base, field.name), **value}
        elif value is not None:
            changes[field.name] = value
    return attrs.evolve(base, **changes)


def _plain_difference(change: LinuxResources, base: LinuxResources) -> LinuxResources:
    changes: dict[str, Any] = {}
    for field in attrs.fields(LinuxResources):
        mine, theirs = getattr(change, field.name), getattr(base, field.name)
        if field.name in _MAPS:
            diff = {k: v for k, v in mine.items() if theirs.get(k) != v}
            if diff:
                changes[field.name] = diff
        elif mine is not None and mine != theirs:
            changes[field.name] = mine
    return LinuxResources(**changes)


def _plain_with_resources(ctr: Container, change: LinuxResources) -> Container:
    effective = _plain_difference(change, ctr.resources)
    if effective == LinuxResources():
        return ctr
    return attrs.evolve(
        ctr,
        resources=_plain_merged(ctr.resources, effective),
        pending=attrs.evolve(
            ctr.pending,
            resources=_plain_merged(ctr.pending.resources, effective),
            controllers=ctr.pending.controllers | {RUNTIME_CONTROLLER},
        ),
    )


def _plain_without_pending(ctr: Container, controller: str) -> Container:
    pending = ctr.pending
    if controller not in pending.controllers:
        return ctr
    controllers = pending.controllers - {controller}
    if not controllers:
        return attrs.evolve(ctr, pending=PendingChanges())
    if controller == RUNTIME_CONTROLLER:
        pending = attrs.evolve(
            pending,
            resources=LinuxResources(),
            annotations={},
            env={},
            mounts=(),
            scheduling=None,
            io_priority=None,
            controllers=controllers,
        )
    else:
        pending = attrs.evolve(pending, host=HostChange(), controllers=controllers)
    return attrs.evolve(ctr, pending=pending)


_SETS = st.none() | st.sampled_from(["0", "1", "0-3", "4-7,12", "0-63,128-191"]).map(CPUSet.parse)
_NUMBERS = st.none() | st.sampled_from([0, 2, 1024, 100_000])
_changes = st.builds(
    LinuxResources,
    cpu_shares=_NUMBERS,
    cpu_quota=_NUMBERS,
    cpus=_SETS,
    mems=_SETS,
    memory_limit=_NUMBERS,
    hugepage_limits=st.dictionaries(st.sampled_from(["2MB", "1GB"]), st.sampled_from([0, 1])),
    unified=st.dictionaries(st.sampled_from(["memory.high", "cpu.idle"]), st.sampled_from("01")),
)
_cpuset_changes = st.builds(LinuxResources, cpus=_SETS, mems=_SETS)
_steps = st.lists(
    st.one_of(
        _changes,
        _cpuset_changes,
        st.sampled_from([RUNTIME_CONTROLLER, HOST_CONTROLLER, "host-change", "tags"]),
        st.tuples(
            _changes | _cpuset_changes,
            st.dictionaries(st.sampled_from(["pool", "kind", "step"]), st.sampled_from("xy")),
        ),
    ),
    min_size=1,
    max_size=8,
)


@settings(max_examples=300)
@given(_changes, _steps)
def test_changes_agree_with_the_plain_definitions(
    initial: LinuxResources,
    steps: list[LinuxResources | str | tuple[LinuxResources, dict[str, str]]],
) -> None:
    ctr = attrs.evolve(make_container(make_pod(), state=ContainerState.RUNNING), resources=initial)
    plain = ctr
    for step in steps:
        if isinstance(step, LinuxResources):
            assert step.difference(ctr.resources) == _plain_difference(step, ctr.resources)
            assert ctr.resources.merged(step) == _plain_merged(ctr.resources, step)
            assert step.is_empty() == (step.set_fields() == ())
            assert step.only_cpusets() == (set(step.set_fields()) <= {"cpus", "mems"})
            ctr, plain = ctr.with_resources(step), _plain_with_resources(plain, step)
        elif isinstance(step, tuple):  # resources and tags in one change
            change, tags = step
            ctr = ctr.with_resources(change, tags=tags)
            plain = _plain_with_resources(plain, change)
            plain = attrs.evolve(plain, tags={**plain.tags, **tags})
        elif step == "host-change":
            change = HostChange(cgroup={"memory.high": "1G"})
            ctr, plain = ctr.with_host_change(change), plain.with_host_change(change)
        elif step == "tags":
            ctr = ctr.with_tags(step="x")
            plain = attrs.evolve(plain, tags={**plain.tags, "step": "x"})
        else:
            ctr, plain = ctr.without_pending(step), _plain_without_pending(plain, step)
        assert ctr == plain
        assert attrs.asdict(ctr, recurse=False) == attrs.asdict(plain, recurse=False)
        for value in (ctr.resources, ctr.pending.resources):
            assert isinstance(value.unified, MappingProxyType)
            assert isinstance(value.hugepage_limits, MappingProxyType)
        assert isinstance(ctr.tags, MappingProxyType)


def test_first_tags_of_equal_grants_are_one_mapping() -> None:
    """Containers given the same first tags share one read-only mapping of them; tags added
    on top of others are a mapping of their own."""
    pod = make_pod()
    tags = {"pool": "socket #0", "kind": "shared"}
    one = make_container(pod, "a").with_resources(LinuxResources(cpus=CPUSet.of(1)), tags=tags)
    two = make_container(pod, "b").with_tags(**tags)
    assert one.tags is two.tags and dict(one.tags) == tags
    assert isinstance(one.tags, MappingProxyType)
    more = one.with_tags(step="x")
    assert more.tags is not one.tags and dict(more.tags) == {**tags, "step": "x"}
    assert dict(one.tags) == tags


def test_values_compare_by_fields_and_are_not_hashable() -> None:
    ctr = make_container(make_pod())
    assert ctr == attrs.evolve(ctr) and ctr != attrs.evolve(ctr, name="other")
    assert ctr != "a container" and ctr.resources != ctr
    assert LinuxResources(cpus=CPUSet.of(1)) == LinuxResources(cpus=CPUSet.of(1))
    assert LinuxResources(cpus=CPUSet.of(1)) != LinuxResources(cpus=CPUSet.of(2))
    for value in (ctr, ctr.resources, ctr.pending):
        with pytest.raises(TypeError):
            hash(value)
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            value.foo = 1  # type: ignore[attr-defined]


def test_containers_moved_to_the_same_set_one_after_the_other() -> None:
    """A pool's shared containers get the very same set object in a row; each must still end
    up with exactly its own change (the model hands out equal change values again)."""
    pod = make_pod()
    shared, other = CPUSet.parse("2-7"), CPUSet.parse("0-1")
    before = [
        attrs.evolve(make_container(pod, f"c{i}"), resources=LinuxResources(cpus=cpus, mems=mems))
        for i, (cpus, mems) in enumerate(
            [(other, CPUSet.of(0)), (shared, CPUSet.of(0)), (other, CPUSet.of(1)), (None, None)]
        )
    ]
    moved = [c.with_resources(LinuxResources(cpus=shared, mems=c.mems)) for c in before]
    moved.append(before[0].with_mems(CPUSet.of(1)).with_cpus(shared))
    assert [c.cpus for c in moved] == [shared] * 5
    assert moved[1] is before[1]  # already there: no change at all
    expected = [
        LinuxResources(cpus=shared),
        LinuxResources(),
        LinuxResources(cpus=shared),
        LinuxResources(cpus=shared),
        LinuxResources(cpus=shared, mems=CPUSet.of(1)),
    ]
    assert [c.pending.resources for c in moved] == expected
    assert [c.mems for c in moved] == [CPUSet.of(0), CPUSet.of(0), CPUSet.of(1), None, CPUSet.of(1)]
    assert all(c.pending.controllers == {RUNTIME_CONTROLLER} for i, c in enumerate(moved) if i != 1)
