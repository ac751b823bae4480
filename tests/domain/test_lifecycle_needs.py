"""The lifecycle events the pipeline needs (PostStartContainer only when host-side settings
can wait for a container's process) and the states StartContainer moves containers to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from nrirp.adapters.memory import InMemoryHostControl, RecordingDecisionLog
from nrirp.domain.config import load_policy_config
from nrirp.domain.control import RuntimeFeatures
from nrirp.domain.model import ContainerState, HostChange
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.pipeline.lifecycle import LifecycleNeeds, lifecycle_needs
from nrirp.domain.policies import builtin_registry
from nrirp.domain.policy.settings import (
    ALL_SETTINGS,
    NO_SETTINGS,
    ContainerSettings,
    container_settings,
)
from tests.domain.support import make_container, make_pod, make_rig, small_machine

OLD_RUNTIME = RuntimeFeatures(scheduling=False, io_priority=False)
NEW_RUNTIME = RuntimeFeatures()
SCHEDULING = ContainerSettings(scheduling=True, host=False)


@pytest.mark.parametrize(
    ("host", "settings", "features", "pending", "post_start"),
    [
        (False, ALL_SETTINGS, OLD_RUNTIME, True, False),  # nobody applies host settings
        (True, NO_SETTINGS, NEW_RUNTIME, False, False),
        (True, NO_SETTINGS, OLD_RUNTIME, False, False),
        (True, SCHEDULING, NEW_RUNTIME, False, False),  # the runtime applies them
        (True, SCHEDULING, OLD_RUNTIME, False, True),  # the host controller, after start
        (True, SCHEDULING, RuntimeFeatures(io_priority=False), False, True),
        (True, ContainerSettings(scheduling=False, host=True), NEW_RUNTIME, False, True),
        (True, NO_SETTINGS, NEW_RUNTIME, True, True),  # restored, still waiting
    ],
)
def test_post_start_only_when_settings_wait_for_the_process(
    host: bool,
    settings: ContainerSettings,
    features: RuntimeFeatures,
    pending: bool,
    post_start: bool,
) -> None:
    needs = lifecycle_needs(
        host_controller=host, settings=settings, features=features, pending_host=pending
    )
    assert needs.post_start is post_start
    assert needs.reason


def test_a_policy_without_the_hook_is_taken_to_use_everything() -> None:
    assert container_settings(object()) == ALL_SETTINGS

    class Wrong:
        def container_settings(self) -> object:
            return True

    with pytest.raises(TypeError, match="not a ContainerSettings"):
        container_settings(Wrong())


def manager(
    policy: str, spec: Mapping[str, Any] | None, features: RuntimeFeatures
) -> ResourceManager:
    m = ResourceManager(
        policy=builtin_registry().create(policy),
        machine=small_machine(),
        host=InMemoryHostControl(),
    )
    m.start(load_policy_config(policy, spec) if spec is not None else None)
    m.set_runtime_features(features)
    return m


RESERVED = {"reservedResources": {"cpu": "cpuset:0"}}
SCHED = {**RESERVED, "schedulingClasses": [{"name": "batch", "policy": "batch"}]}


@pytest.mark.parametrize("policy", ["topology-aware", "balloons"])
def test_builtin_policies_need_post_start_for_scheduling_classes_on_old_runtimes(
    policy: str,
) -> None:
    assert not manager(policy, None, OLD_RUNTIME).lifecycle_needs().post_start
    assert not manager(policy, RESERVED, OLD_RUNTIME).lifecycle_needs().post_start
    assert manager(policy, SCHED, OLD_RUNTIME).lifecycle_needs().post_start
    assert not manager(policy, SCHED, NEW_RUNTIME).lifecycle_needs().post_start


def test_none_policy_needs_nothing_and_without_a_host_controller_nothing_is_needed() -> None:
    assert not manager("none", None, OLD_RUNTIME).lifecycle_needs().post_start
    rig = make_rig()  # no host controller
    assert rig.manager.lifecycle_needs() == LifecycleNeeds(False, "no host controller")


def test_start_moves_a_container_to_running_unless_host_settings_wait() -> None:
    rig = make_rig(host=InMemoryHostControl())
    pod = make_pod()
    plain, waiting = make_container(pod, "plain"), make_container(pod, "waiting")
    for ctr in (plain, waiting):
        rig.manager.create_container(pod, ctr)
    rig.manager.cache.set_host_change(waiting.id, HostChange(cgroup={"cpu.idle": "1"}))
    for ctr in (plain, waiting):
        rig.manager.start_container(pod, ctr)
    assert rig.manager.container(plain.id).state is ContainerState.RUNNING  # type: ignore[union-attr]
    assert rig.manager.container(waiting.id).state is ContainerState.CREATED  # type: ignore[union-attr]
    assert rig.manager.lifecycle_needs().post_start  # something waits: keep listening
    rig.manager.post_start(pod, waiting)
    assert rig.manager.container(waiting.id).state is ContainerState.RUNNING  # type: ignore[union-attr]


def hostless(policy: str, spec: Mapping[str, Any]) -> tuple[ResourceManager, RecordingDecisionLog]:
    """A pipeline without a host controller (an embedder's default) on an old runtime."""
    log = RecordingDecisionLog()
    m = ResourceManager(
        policy=builtin_registry().create(policy), machine=small_machine(), decisions=log
    )
    m.start(load_policy_config(policy, spec))
    m.set_runtime_features(OLD_RUNTIME)
    return m, log


def host_notices(log: RecordingDecisionLog) -> list[tuple[str | None, str]]:
    return [(n.container_id, n.message) for n in log.notices if n.source == "host"]


@pytest.mark.parametrize("policy", ["topology-aware", "balloons"])
def test_without_a_host_controller_dropped_scheduling_is_noticed_once_per_container(
    policy: str,
) -> None:
    spec: dict[str, Any] = {**SCHED}
    if policy == "topology-aware":
        spec["podQoSSchedulingClasses"] = {"Burstable": "batch"}
    else:
        spec["balloonTypes"] = [{"name": "b", "namespaces": ["*"], "schedulingClass": "batch"}]
    m, log = hostless(policy, spec)
    pod = make_pod()
    a, b = make_container(pod, "a"), make_container(pod, "b")
    result = m.create_container(pod, a)
    assert result.adjustment.scheduling is None  # the runtime cannot carry it
    assert host_notices(log) == [
        (
            a.id,
            "container default/pod0/a: scheduling class not applied: no host control "
            "(settings the runtime cannot carry need one)",
        )
    ]
    # nothing waits for a process nobody would tell about: started means running
    m.start_container(pod, a)
    assert m.container(a.id).state is ContainerState.RUNNING  # type: ignore[union-attr]
    # later requests say nothing more about it; the next container gets its own notice
    m.create_container(pod, b)
    m.update_container(pod, a, a.resources)
    m.stop_container(pod, a)
    assert [cid for cid, _ in host_notices(log)] == [a.id, b.id]
    assert not any("no controller" in n.message for n in log.notices)


def test_without_a_host_controller_host_settings_of_others_are_noticed() -> None:
    rig = make_rig()
    pod = make_pod()
    a, b = make_container(pod, "a"), make_container(pod, "b")
    rig.manager.create_container(pod, a)
    rig.manager.cache.set_host_change(
        a.id, HostChange(cgroup={"cpu.idle": "1", "memory.high": "1G"}, cpu_class="eco")
    )
    rig.manager.create_container(pod, b)
    assert [(n.source, n.container_id, n.message) for n in rig.log.notices] == [
        (
            "host",
            a.id,
            "container default/pod0/a: CPU class eco and cgroup settings cpu.idle, memory.high "
            "not applied: no host control (settings the runtime cannot carry need one)",
        )
    ]
    assert not rig.manager.cache.pending_containers()
