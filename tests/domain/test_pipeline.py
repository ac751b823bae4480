from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from typing import Any

import attrs
import pytest

from nrirp.adapters.memory import InMemoryHostControl, RecordingDecisionLog, RecordingMetrics
from nrirp.domain.cache import SnapshotEncoder
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import ContainerState, HostChange, LinuxResources, Update, policy_key
from nrirp.domain.pipeline import (
    NotStartedError,
    OperationFailedError,
    ReentrantCallError,
    ResourceManager,
)
from nrirp.domain.policy import UPDATES_FAILED, PolicyError, PolicyEvent
from nrirp.domain.ports.decisions import Decision, Notice, Severity

from .support import (
    FakeCodec,
    FakeConfig,
    RecordingController,
    RecordingPolicy,
    make_container,
    make_pod,
    make_rig,
    small_machine,
)


def test_operations_need_start() -> None:
    rig = make_rig(start=False)
    with pytest.raises(NotStartedError, match="not started"):
        rig.manager.run_pod(make_pod())
    assert rig.manager.cache.pods() == [] and rig.store.saves == 0


def test_create_returns_adjustment_and_persists_once() -> None:
    rig = make_rig()
    saves = rig.store.saves
    pod = make_pod()
    rig.manager.run_pod(pod)
    assert rig.store.saves == saves + 1
    result = rig.manager.create_container(pod, make_container(pod, "a"))
    assert result.adjustment.container_id == "id-pod0-a"
    assert result.adjustment.resources == LinuxResources(cpus=CPUSet.of(0), mems=CPUSet.of(0))
    assert result.updates == ()
    assert rig.store.saves == saves + 2  # one save for the whole create
    ctr = rig.manager.container("id-pod0-a")
    assert ctr is not None and ctr.state is ContainerState.CREATING
    assert ctr.cpus == CPUSet.of(0)
    assert ctr.pending.controllers == frozenset()
    assert ctr.requirements.cpu_request == 500
    decision = rig.log.decisions[-1]
    assert (decision.container, decision.pod, decision.reason) == ("a", "pod0", "cpu 0")
    assert decision.operation == "create-container"
    assert decision.cpus == CPUSet.of(0) and decision.mems == CPUSet.of(0)


def test_pipeline_order_lookup_policy_controllers_response() -> None:
    log: list[str] = []
    policy = RecordingPolicy(log)
    rig = make_rig(policy=policy, controllers=[RecordingController(log)])
    pod = make_pod()
    rig.manager.run_pod(pod)
    log.clear()

    real_allocate = policy.allocate

    def allocate(container: Any) -> None:
        # the container is already in the cache when the policy runs (lookup/create first)
        cached = rig.manager.cache.container(container.id)
        log.append(
            f"lookup {cached.name if cached else None} {cached.state.value if cached else ''}"
        )
        real_allocate(container)

    policy.allocate = allocate  # type: ignore[method-assign]
    rig.manager.create_container(pod, make_container(pod, "a"))
    assert log == ["lookup a creating", "policy.allocate a", "recorder.pre_create a"]
    log.clear()
    rig.manager.post_create(pod, make_container(pod, "a"))
    rig.manager.start_container(pod, make_container(pod, "a"))
    rig.manager.post_start(pod, make_container(pod, "a"))
    rig.manager.stop_container(pod, make_container(pod, "a"))
    assert log == [
        "recorder.pre_start a",
        "recorder.post_start a",
        "policy.release a",
        "recorder.post_stop a",
    ]


def test_lifecycle_states_and_release() -> None:
    rig = make_rig()
    pod = make_pod()
    ctr = make_container(pod, "a")
    m = rig.manager
    m.run_pod(pod)
    m.create_container(pod, ctr)
    m.post_create(pod, ctr)
    assert m.container(ctr.id).state is ContainerState.CREATED  # type: ignore[union-attr]
    m.start_container(pod, ctr)
    m.post_start(pod, ctr)
    assert m.container(ctr.id).state is ContainerState.RUNNING  # type: ignore[union-attr]
    m.stop_container(pod, ctr)
    assert m.container(ctr.id).state is ContainerState.STOPPED  # type: ignore[union-attr]
    assert rig.policy.owner == {}
    m.remove_container(pod, ctr)
    assert m.container(ctr.id) is None
    m.remove_pod(pod)
    assert m.pods() == []


def test_pod_known_only_from_synchronize_is_forgotten_with_its_last_container() -> None:
    # containerd 1.7.24 sends no StopPodSandbox/RemovePodSandbox for pods that survived its
    # restart: only their containers' StopContainer/RemoveContainer arrive
    rig = make_rig()
    m = rig.manager
    pod = make_pod()
    a = make_container(pod, "a", state=ContainerState.RUNNING)
    b = make_container(pod, "b", state=ContainerState.RUNNING)
    m.synchronize([pod], [a, b])
    for ctr in (a, b):
        m.stop_container(pod, ctr)
        m.remove_container(pod, ctr)
        assert m.container(ctr.id) is None
        if ctr is a:
            assert [p.id for p in m.pods()] == [pod.id]  # b still runs in it
    assert m.pods() == []
    saved = rig.store.load()
    assert saved is not None and saved["pods"] == [] and saved["containers"] == []
    assert rig.policy.owner == {}
    # late sandbox events for the forgotten pod are harmless
    m.stop_pod(pod)
    m.remove_pod(pod)
    assert m.pods() == []


def test_pod_comes_back_with_a_new_container_after_its_last_one_was_removed() -> None:
    rig = make_rig()
    m = rig.manager
    pod = make_pod()
    m.run_pod(pod)
    assert [p.id for p in m.pods()] == [pod.id]  # a pod without containers yet stays
    first = make_container(pod, "first")
    m.create_container(pod, first)
    m.remove_container(pod, first)
    assert m.pods() == []
    second = make_container(pod, "second")
    m.create_container(pod, second)
    assert [p.id for p in m.pods()] == [pod.id]
    assert m.container(second.id) is not None


def test_remove_pod_releases_remaining_containers() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    for name in ("a", "b"):
        rig.manager.create_container(pod, make_container(pod, name))
    rig.manager.remove_pod(pod)
    assert rig.policy.owner == {}
    assert rig.manager.containers() == []
    assert [entry for entry in rig.policy.log if "release" in entry] == [
        "policy.release a",
        "policy.release b",
    ]


def test_failing_allocate_leaves_cache_exactly_as_it_was() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, make_container(pod, "a"))
    before_pods, before_ctrs = rig.manager.pods(), rig.manager.containers()
    before_data = rig.manager.cache.all_policy_data()
    saves = rig.store.saves
    saved = rig.store.raw
    rig.policy.fail_allocate = "no room on any NUMA node"
    other_pod = make_pod("other", cgroup_parent="")
    with pytest.raises(OperationFailedError) as info:
        rig.manager.create_container(other_pod, make_container(other_pod, "b"))
    assert info.value.reason == "no room on any NUMA node"
    assert str(info.value) == (
        "create-container container default/other/b: no room on any NUMA node"
    )
    assert rig.manager.pods() == before_pods  # the new pod was rolled back too
    assert rig.manager.containers() == before_ctrs
    assert rig.manager.cache.all_policy_data() == before_data
    assert not rig.manager.cache.dirty
    assert rig.store.saves == saves and rig.store.raw == saved
    assert rig.log.notices[-1].severity is Severity.ERROR
    assert "no room on any NUMA node" in rig.log.notices[-1].message
    assert rig.log.decisions[-1].container == "a"  # no decision for the failed one


def test_bugs_in_a_policy_are_reported_as_internal_errors() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)

    def broken(container: Any) -> None:
        raise KeyError("pools")

    rig.policy.allocate = broken  # type: ignore[method-assign]
    with pytest.raises(OperationFailedError, match="internal error: KeyError"):
        rig.manager.create_container(pod, make_container(pod, "a"))
    assert rig.manager.containers() == []


def test_create_reports_updates_to_other_containers() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, make_container(pod, "a"))
    real = rig.policy.allocate

    def allocate_and_shrink_a(container: Any) -> None:
        real(container)
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpu_quota("id-pod0-a", 50_000)

    rig.policy.allocate = allocate_and_shrink_a  # type: ignore[method-assign]
    result = rig.manager.create_container(pod, make_container(pod, "b"))
    assert result.adjustment.resources.cpus == CPUSet.of(1)
    assert result.updates == (Update("id-pod0-a", LinuxResources(cpu_quota=50_000)),)


def test_update_container_reestimates_and_returns_updates() -> None:
    rig = make_rig()
    pod = make_pod()
    ctr = make_container(pod, "a", state=ContainerState.RUNNING)
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, ctr)
    new = LinuxResources(cpu_shares=2048, memory_limit=1 << 30)
    updates = rig.manager.update_container(pod, ctr, new)
    cached = rig.manager.container(ctr.id)
    assert cached is not None
    assert cached.requirements.cpu_request == 2000
    assert cached.resources.cpu_shares == 2048
    assert cached.cpus == CPUSet.of(0)  # kept
    # the recording policy re-asserts the memory limit -> nothing differs -> no update
    assert updates == []
    assert rig.policy.log[-1] == "policy.update a"


def test_stop_returns_updates_and_other_ops_submit_them_asynchronously() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    a, b, c = (make_container(pod, name) for name in "abc")
    for ctr in (a, b, c):
        rig.manager.create_container(pod, ctr)
        rig.manager.post_create(pod, ctr)
    real = rig.policy.release

    def release_and_resize_b(container: Any) -> None:
        real(container)
        assert rig.policy.ctx is not None
        cpus = CPUSet.parse("0-1") if container.name == "a" else CPUSet.of(1)
        rig.policy.ctx.cache.set_cpus("id-pod0-b", cpus)

    rig.policy.release = release_and_resize_b  # type: ignore[method-assign]
    # StopContainer's reply carries updates: they are returned, not submitted
    updates = rig.manager.stop_container(pod, a)
    assert updates == [Update("id-pod0-b", LinuxResources(cpus=CPUSet.parse("0-1")))]
    assert rig.updates.batches == []
    # RemoveContainer's reply cannot: the updates go out through the RuntimeUpdates port
    rig.manager.remove_container(pod, c)
    assert rig.updates.batches == [[Update("id-pod0-b", LinuxResources(cpus=CPUSet.of(1)))]]
    assert [x.name for x in rig.manager.containers()] == ["a", "b"]


def test_injected_event_from_inside_is_queued_until_the_operation_ends() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    real = rig.policy.allocate

    def allocate_and_inject(container: Any) -> None:
        assert rig.policy.ctx is not None
        rig.policy.ctx.inject_event(PolicyEvent("rebalance", "test"))
        rig.policy.log.append("allocate returns")
        real(container)

    rig.policy.allocate = allocate_and_inject  # type: ignore[method-assign]
    rig.policy.log.clear()

    def on_event(event: PolicyEvent) -> None:
        # the event runs after the operation committed, as its own step
        ctr = rig.manager.cache.require_container("id-pod0-a")
        assert ctr.cpus == CPUSet.of(0) and not ctr.pending.controllers
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpus("id-pod0-a", CPUSet.parse("0-1"))

    rig.policy.on_event = on_event
    result = rig.manager.create_container(pod, make_container(pod, "a"))
    assert rig.policy.log == ["allocate returns", "policy.allocate a", "policy.event rebalance"]
    assert result.adjustment.resources.cpus == CPUSet.of(0)
    # the event's changes could not ride on the response: they went out asynchronously
    assert rig.updates.updates == [Update("id-pod0-a", LinuxResources(cpus=CPUSet.parse("0-1")))]


def test_event_from_another_thread_is_handled_under_the_lock() -> None:
    rig = make_rig()
    done = threading.Event()

    def inject() -> None:
        rig.manager.inject_event(PolicyEvent("timer", "cold-start"))
        done.set()

    t = threading.Thread(target=inject)
    t.start()
    t.join(5)
    assert done.is_set()
    assert [e.kind for e in rig.policy.events] == ["timer"]


def test_failing_event_is_reported_and_rolled_back() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, make_container(pod, "a"))

    def on_event(event: PolicyEvent) -> None:
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpus("id-pod0-a", CPUSet.of(7))
        raise RuntimeError("boom")

    rig.policy.on_event = on_event
    rig.manager.inject_event(PolicyEvent("x"))
    assert rig.manager.container("id-pod0-a").cpus == CPUSet.of(0)  # type: ignore[union-attr]
    assert "boom" in rig.log.notices[-1].message
    assert rig.updates.batches == []


def test_pipeline_calls_from_inside_the_policy_are_refused() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)

    def reenter(container: Any) -> None:
        rig.manager.run_pod(make_pod("x"))

    rig.policy.allocate = reenter  # type: ignore[method-assign]
    with pytest.raises(OperationFailedError) as info:
        rig.manager.create_container(pod, make_container(pod, "a"))
    assert isinstance(info.value.__cause__, ReentrantCallError)


def test_updates_failed_reaches_the_policy_as_an_event() -> None:
    rig = make_rig()
    rig.manager.updates_failed(
        [Update("c1", LinuxResources(cpus=CPUSet.of(1)))], "no such container"
    )
    assert rig.policy.events[-1].kind == UPDATES_FAILED
    assert rig.policy.events[-1].data.container_ids == ("c1",)
    assert "no such container" in rig.log.notices[0].message


def test_reconfigure_good_and_bad() -> None:
    rig = make_rig()
    good = FakeConfig("recording", cpus="0-3")
    outcome = rig.manager.reconfigure(good)
    assert outcome.applied and outcome.reason == ""
    assert rig.manager.config == good
    rig.policy.fail_reconfigure = "reservedResources.cpu: 9 CPUs requested, 8 available"
    bad = FakeConfig("recording", cpus="0-8")
    outcome = rig.manager.reconfigure(bad)
    assert not outcome.applied
    assert outcome.reason == "reservedResources.cpu: 9 CPUs requested, 8 available"
    assert rig.manager.config == good
    outcome = rig.manager.reconfigure(FakeConfig("balloons"))
    assert not outcome.applied and "needs a restart" in outcome.reason
    assert rig.manager.config == good


def test_bad_reconfigure_rolls_back_cache_changes() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, make_container(pod, "a"))
    real = rig.policy.reconfigure

    def half_reconfigure(config: Any) -> None:
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpus("id-pod0-a", CPUSet.of(5))
        raise ValueError("cpu 9 does not exist")

    rig.policy.reconfigure = half_reconfigure  # type: ignore[method-assign]
    outcome = rig.manager.reconfigure(FakeConfig("recording", "0-9"))
    assert outcome == type(outcome)(False, "cpu 9 does not exist")
    assert rig.manager.container("id-pod0-a").cpus == CPUSet.of(0)  # type: ignore[union-attr]
    assert rig.updates.batches == []
    rig.policy.reconfigure = real  # type: ignore[method-assign]


def test_reconfigure_sends_the_resulting_updates() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    ctr = make_container(pod, "a")
    rig.manager.create_container(pod, ctr)
    rig.manager.post_create(pod, ctr)

    def move(config: Any) -> None:
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpus(ctr.id, CPUSet.of(6))

    rig.policy.reconfigure = move  # type: ignore[method-assign]
    outcome = rig.manager.reconfigure(FakeConfig("recording", "4-7"))
    assert outcome.applied and outcome.updates == 1
    assert rig.updates.updates == [Update(ctr.id, LinuxResources(cpus=CPUSet.of(6)))]
    assert rig.log.decisions[-1].operation == "reconfigure"
    assert rig.log.decisions[-1].cpus == CPUSet.of(6)


def test_failed_save_is_reported_and_retried() -> None:
    rig = make_rig()
    rig.store.fail_saves = True
    pod = make_pod()
    rig.manager.run_pod(pod)
    assert "state not saved" in rig.log.notices[-1].message
    assert rig.manager.cache.dirty
    rig.store.fail_saves = False
    rig.manager.post_update(pod, make_container(pod))  # any later operation saves
    assert not rig.manager.cache.dirty
    assert "id-pod0" in (rig.store.raw or "")


def test_serialization_no_operations_interleave() -> None:
    active = 0
    overlaps = 0
    lock = threading.Lock()

    class Probe(RecordingPolicy):
        def _enter(self) -> None:
            nonlocal active, overlaps
            with lock:
                active += 1
                if active > 1:
                    overlaps += 1
            time.sleep(0)  # let other threads run
            with lock:
                active -= 1

        def allocate(self, container: Any) -> None:
            self._enter()
            super().allocate(container)

        def release(self, container: Any) -> None:
            self._enter()
            super().release(container)

        def handle_event(self, event: PolicyEvent) -> None:
            self._enter()
            super().handle_event(event)

    policy = Probe()
    policy.free = CPUSet()
    manager = ResourceManager(policy=policy, machine=small_machine())
    manager.start(FakeConfig("recording", cpus="0-7"))
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(40):
                pod = make_pod(f"w{n}-{i}")
                ctr = make_container(pod, "c")
                manager.run_pod(pod)
                manager.create_container(pod, ctr)
                manager.inject_event(PolicyEvent("tick"))
                manager.stop_container(pod, ctr)
                manager.remove_pod(pod)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []
    assert overlaps == 0
    assert manager.containers() == [] and manager.pods() == []
    assert policy.free == CPUSet.parse("0-7")
    assert len(policy.events) == 240


def test_host_settings_reach_host_control_once_the_container_runs() -> None:
    host = InMemoryHostControl()
    rig = make_rig(host=host)
    pod = make_pod(cgroup_parent="/kubepods/burstable/podq")
    ctr = make_container(pod, "a", cgroups_path="/kubepods/burstable/podq/a")
    real = rig.policy.allocate

    def allocate_with_class(container: Any) -> None:
        real(container)
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_host_change(container.id, HostChange(cpu_class="turbo"))

    rig.policy.allocate = allocate_with_class  # type: ignore[method-assign]
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, ctr)
    rig.manager.post_create(pod, ctr)
    rig.manager.start_container(pod, ctr)
    assert host.calls == []
    rig.manager.post_start(pod, ctr)
    [call] = host.calls
    assert call.target.cgroups_path == "/kubepods/burstable/podq/a"
    assert call.target.cpus == CPUSet.of(0)
    assert call.change == HostChange(cpu_class="turbo")
    rig.manager.stop_container(pod, ctr)
    assert [c.action for c in host.calls] == ["apply", "forget"]


def test_pid_reported_at_start_reaches_host_control_and_the_state() -> None:
    # regression: post-start ignored the pid, so a container without a cgroups path or
    # parent could never be located by the host control's /proc/<pid>/cgroup fallback
    host = InMemoryHostControl()
    rig = make_rig(host=host)
    pod = make_pod(cgroup_parent="")
    ctr = make_container(pod, "a")
    real = rig.policy.allocate

    def allocate_with_setting(container: Any) -> None:
        real(container)
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_host_change(container.id, HostChange(cgroup={"cpu.idle": "1"}))

    rig.policy.allocate = allocate_with_setting  # type: ignore[method-assign]
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, ctr)
    rig.manager.post_create(pod, ctr)
    rig.manager.start_container(pod, ctr)
    started = attrs.evolve(ctr, pid=4242, cgroups_path="/kubepods/pod0/a")
    rig.manager.post_start(pod, started)
    [call] = host.calls
    assert call.target.pid == 4242
    assert call.target.cgroups_path == "/kubepods/pod0/a"
    cached = rig.manager.container(ctr.id)
    assert cached is not None and cached.state is ContainerState.RUNNING
    assert cached.pid == 4242
    saved = rig.store.load()
    assert saved is not None
    [saved_ctr] = saved["containers"]
    assert saved_ctr["pid"] == 4242
    # a later event without a pid keeps the known one
    rig.manager.post_update(pod, ctr)
    assert rig.manager.container(ctr.id).pid == 4242  # type: ignore[union-attr]


def test_bad_annotations_are_reported_without_failing() -> None:
    rig = make_rig()
    key = policy_key("prefer-isolated-cpus")
    pod = make_pod(annotations={f"{key}/container.a": "maybe"})
    seen: list[bool] = []
    real = rig.policy.allocate

    def allocate_reading_annotation(container: Any) -> None:
        assert rig.policy.ctx is not None
        seen.append(rig.policy.ctx.annotations(container).get_bool(key, default=True))
        real(container)

    rig.policy.allocate = allocate_reading_annotation  # type: ignore[method-assign]
    rig.manager.run_pod(pod)
    result = rig.manager.create_container(pod, make_container(pod, "a"))
    assert seen == [True]
    assert result.adjustment.resources.cpus == CPUSet.of(0)
    [notice] = [n for n in rig.log.notices if n.source == "annotations"]
    assert f"{key}/container.a" in notice.message and "'maybe'" in notice.message


def test_operation_timings_go_to_metrics() -> None:
    metrics = RecordingMetrics()
    rig = make_rig(metrics=metrics)
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.policy.fail_allocate = "full"
    with pytest.raises(OperationFailedError):
        rig.manager.create_container(pod, make_container(pod))
    assert [(op, ok) for op, _, ok in metrics.operations] == [
        ("start", True),
        ("run-pod", True),
        ("create-container", False),
    ]
    assert rig.manager.policy_metrics()[0].name == "free_cpus"


def test_update_of_an_unknown_container_allocates_it() -> None:
    rig = make_rig()
    pod = make_pod()
    ctr = make_container(pod, "late", state=ContainerState.RUNNING)
    updates = rig.manager.update_container(pod, ctr, LinuxResources(cpu_shares=1024))
    assert rig.policy.log[-1] == "policy.allocate late"
    assert updates == [Update(ctr.id, LinuxResources(cpus=CPUSet.of(0), mems=CPUSet.of(0)))]
    cached = rig.manager.container(ctr.id)
    assert cached is not None and cached.requirements.cpu_request == 1000


def test_duplicate_create_is_refused_without_touching_the_policy() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, make_container(pod, "a"))
    rig.policy.log.clear()
    with pytest.raises(OperationFailedError, match="already exists \\(state creating\\)"):
        rig.manager.create_container(pod, make_container(pod, "a"))
    assert rig.policy.log == []
    assert rig.policy.owner == {"id-pod0-a": 0}


def test_failing_release_is_reported_and_the_container_still_stops() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    ctr = make_container(pod, "a")
    rig.manager.create_container(pod, ctr)

    def broken_release(container: Any) -> None:
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpus(container.id, CPUSet.of(7))
        raise PolicyError("pool bookkeeping lost")

    rig.policy.release = broken_release  # type: ignore[method-assign]
    assert rig.manager.stop_container(pod, ctr) == []
    stopped = rig.manager.container(ctr.id)
    assert stopped is not None and stopped.state is ContainerState.STOPPED
    assert stopped.cpus == CPUSet.of(0)  # the failed release's own changes were undone
    assert "pool bookkeeping lost" in rig.log.notices[-1].message


def test_late_lifecycle_events_do_not_resurrect_a_stopped_container() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    ctr = make_container(pod, "a")
    rig.manager.create_container(pod, ctr)
    rig.manager.post_create(pod, ctr)
    rig.manager.post_start(pod, ctr)
    rig.manager.post_create(pod, ctr)  # late and out of order
    assert rig.manager.container(ctr.id).state is ContainerState.RUNNING  # type: ignore[union-attr]
    rig.manager.stop_container(pod, ctr)
    rig.manager.post_start(pod, ctr)
    assert rig.manager.container(ctr.id).state is ContainerState.STOPPED  # type: ignore[union-attr]


def test_saving_leaves_the_encoding_to_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pipeline hands the store a snapshot of immutable values; it is unstructured only
    when the store reads it (here: the in-memory store's flush), once for a burst of saves."""
    dumped: list[Any] = []
    dump = FakeCodec.dump

    def counting_dump(self: FakeCodec, config: Any) -> Any:
        dumped.append(config)
        return dump(self, config)

    monkeypatch.setattr(FakeCodec, "dump", counting_dump)
    rig = make_rig()
    encoded: list[Any] = []
    encode = SnapshotEncoder._encode_locked

    def counting(self: SnapshotEncoder, snapshot: Any) -> Any:
        encoded.append(snapshot)
        return encode(self, snapshot)

    monkeypatch.setattr(SnapshotEncoder, "_encode_locked", counting)
    pod = make_pod()
    rig.manager.run_pod(pod)
    saves = rig.store.saves
    for name in "abc":
        rig.manager.create_container(pod, make_container(pod, name))
    assert rig.store.saves == saves + 3 and encoded == []
    saved = json.loads(rig.store.raw or "")
    assert len(encoded) == 1
    assert [c["name"] for c in saved["containers"]] == ["a", "b", "c"]
    assert saved["config"] == {"policy": "recording", "cpus": "0-7"}
    assert len(dumped) == 1  # the configuration document is made once, not per save


# ---------------------------------------------------------------- decisions in batches


class _BatchLog(RecordingDecisionLog):
    """Records how decisions arrive: one batch per operation."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        self.batches.append([d.container for d in decisions])
        super().decision_batch(decisions)


class _OneAtATimeLog:
    """A sink written before ``decision_batch`` existed: only the two original methods."""

    def __init__(self) -> None:
        self.decisions: list[Decision] = []
        self.notices: list[Notice] = []

    def decision(self, decision: Decision) -> None:
        self.decisions.append(decision)

    def notice(self, notice: Notice) -> None:
        self.notices.append(notice)


def _manager_logging_to(log: Any) -> ResourceManager:
    manager = ResourceManager(policy=RecordingPolicy(), machine=small_machine(), decisions=log)
    manager.start(FakeConfig("recording"))  # type: ignore[arg-type]
    return manager


def test_decisions_of_an_operation_reach_the_log_in_one_batch() -> None:
    log = _BatchLog()
    manager = _manager_logging_to(log)
    pod = make_pod()
    manager.run_pod(pod)
    running = [make_container(pod, name, state=ContainerState.RUNNING) for name in "abc"]
    manager.synchronize([pod], running)
    manager.create_container(pod, make_container(pod, "d"))
    assert log.batches == [["a", "b", "c"], ["d"]]  # nothing for operations that decide nothing


def test_a_log_without_batches_gets_every_decision_one_at_a_time() -> None:
    log = _OneAtATimeLog()
    manager = _manager_logging_to(log)
    pod = make_pod()
    manager.run_pod(pod)
    running = [make_container(pod, name, state=ContainerState.RUNNING) for name in "ab"]
    manager.synchronize([pod], running)
    assert [d.container for d in log.decisions] == ["a", "b"]


def test_no_checkpoint_stays_open_after_operations_fail_or_succeed() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    rig.policy.fail_allocate = "refused"
    with pytest.raises(OperationFailedError):
        rig.manager.create_container(pod, make_container(pod, "a"))
    rig.policy.fail_allocate = None
    rig.manager.create_container(pod, make_container(pod, "b"))
    assert rig.manager.cache._open == [] and rig.manager.cache._journal is None
