"""The resource manager's inbound observer: every handled call, in the pipeline's order, with
what the driver passed and whether it was refused; the start with the restored state; every
saved snapshot."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.model import Container, LinuxResources, Pod
from nrirp.domain.pipeline import NotStartedError, OperationFailedError
from nrirp.domain.ports.inbound import InboundCall

from .support import FakeConfig, make_container, make_pod, make_rig


class Heard:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []
        self.threads: set[int] = set()
        self.latest_state: Callable[[], Mapping[str, Any] | None] | None = None

    def started(
        self,
        config: Any,
        restored: Mapping[str, Any] | None,
        latest_state: Callable[[], Mapping[str, Any] | None],
    ) -> None:
        self.latest_state = latest_state
        self.events.append(("started", (config, None if restored is None else dict(restored))))

    def handled(
        self,
        operation: str,
        pod: Pod | None = None,
        container: Container | None = None,
        resources: LinuxResources | None = None,
        pods: tuple[Pod, ...] = (),
        containers: tuple[Container, ...] = (),
        config: Any = None,
        failure: str | None = None,
    ) -> None:
        self.threads.add(threading.get_ident())
        call = InboundCall(operation, pod, container, resources, pods, containers, config, failure)
        self.events.append(("handled", call))
        if self.latest_state is not None:
            self.events.append(("state", self.latest_state()))

    def calls(self) -> list[InboundCall]:
        return [value for kind, value in self.events if kind == "handled"]


def test_every_call_in_order_with_its_values_and_refusals() -> None:
    heard = Heard()
    rig = make_rig(observer=heard)
    assert heard.events[-1] == ("started", (FakeConfig("recording"), None))
    pod = make_pod()
    a, b = make_container(pod, "a"), make_container(pod, "b")
    rig.manager.synchronize([pod], [])
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, a)
    rig.manager.post_create(pod, a)
    rig.manager.start_container(pod, a)
    rig.manager.post_start(pod, a)
    resized = LinuxResources(cpu_shares=1024)
    rig.manager.update_container(pod, a, resized)
    rig.manager.post_update(pod, a)
    rig.policy.fail_allocate = "no room"
    with pytest.raises(OperationFailedError):
        rig.manager.create_container(pod, b)
    rig.policy.fail_allocate = None
    rig.manager.stop_container(pod, a)
    rig.manager.remove_container(pod, a)
    rig.manager.stop_pod(pod)
    rig.manager.remove_pod(pod)
    assert rig.manager.reconfigure(FakeConfig("recording", "0-3")).applied
    rig.policy.fail_reconfigure = "not that"
    assert not rig.manager.reconfigure(FakeConfig("recording", "0-1")).applied

    calls = heard.calls()
    assert [c.operation for c in calls] == [
        "synchronize",
        "run-pod",
        "create-container",
        "post-create",
        "start-container",
        "post-start",
        "update-container",
        "post-update",
        "create-container",
        "stop-container",
        "remove-container",
        "stop-pod",
        "remove-pod",
        "reconfigure",
        "reconfigure",
    ]
    assert calls[0] == InboundCall("synchronize", pods=(pod,), containers=())
    assert calls[2] == InboundCall("create-container", pod, a)
    assert calls[6] == InboundCall("update-container", pod, a, resized)
    assert calls[8].container is b and calls[8].failure == "no room"
    assert [c.failure for c in calls[:8]] == [None] * 8
    assert calls[13] == InboundCall("reconfigure", config=FakeConfig("recording", "0-3"))
    assert calls[14].failure == "not that"
    assert heard.threads == {threading.get_ident()}  # on the caller's path, under the lock


def test_the_latest_state_is_the_stores_snapshot_after_the_call() -> None:
    """Nothing is pushed per save: the observer reads the state where it wants it, and read
    while a call is reported it is the snapshot the store got after that call."""
    heard = Heard()
    store = InMemoryStateStore()
    rig = make_rig(store=store, observer=heard)
    assert heard.latest_state is not None
    at_start = heard.latest_state()  # the start saves before it reports
    assert at_start is not None and list(at_start["pods"]) == []
    pod = make_pod()
    rig.manager.run_pod(pod)
    assert [kind for kind, _ in heard.events] == ["started", "handled", "state"]
    snapshot = heard.events[2][1]
    store.flush()
    assert snapshot is not at_start and dict(snapshot) == dict(store.load() or {})
    assert [p["id"] for p in snapshot["pods"]] == [pod.id]
    store.fail_saves = True  # a save that fails leaves the one the store has
    rig.manager.stop_pod(pod)
    assert heard.events[-1] == ("state", snapshot)
    store.fail_saves = False
    rig.manager.remove_pod(pod)
    after = heard.events[-1][1]
    assert after is not snapshot and list(after["pods"]) == []


def test_the_start_reports_the_restored_state() -> None:
    store = InMemoryStateStore()
    first = make_rig(store=store)
    pod = make_pod()
    first.manager.run_pod(pod)
    store.flush()
    saved = store.load()
    heard = Heard()
    make_rig(store=InMemoryStateStore(saved), observer=heard)
    started = [value for kind, value in heard.events if kind == "started"]
    assert started == [(FakeConfig("recording"), saved)]


def test_calls_refused_before_the_start_are_not_reported() -> None:
    heard = Heard()
    rig = make_rig(start=False, observer=heard)
    with pytest.raises(NotStartedError):
        rig.manager.run_pod(make_pod())
    assert heard.events == []


def test_a_deferring_thread_s_calls_are_heard_when_told_in_the_same_order() -> None:
    """``defer_observer``: the calls of the thread that asked are heard only at
    ``tell_observer`` (after the driver's reply), or before the next call runs, whichever is
    first; the observer hears every call once, in order, with the state after that call."""
    heard = Heard()
    store = InMemoryStateStore()
    rig = make_rig(store=store, observer=heard)
    assert rig.manager.observed and rig.manager.defer_observer()
    pod = make_pod()
    a = make_container(pod, "a")
    rig.manager.run_pod(pod)
    assert heard.calls() == []  # not heard yet: the reply goes first
    rig.manager.tell_observer()
    assert heard.calls() == [InboundCall("run-pod", pod)]
    assert heard.events[-1][0] == "state" and [p["id"] for p in heard.events[-1][1]["pods"]] == [
        pod.id
    ]
    rig.manager.tell_observer()  # nothing left: nothing heard twice
    assert len(heard.calls()) == 1

    rig.manager.create_container(pod, a)  # not told: the next call tells it first
    rig.policy.fail_allocate = "no room"
    with pytest.raises(OperationFailedError):
        rig.manager.create_container(pod, make_container(pod, "b"))
    rig.policy.fail_allocate = None
    assert [c.operation for c in heard.calls()] == ["run-pod", "create-container"]
    rig.manager.tell_observer()
    assert [(c.operation, c.failure) for c in heard.calls()] == [
        ("run-pod", None),
        ("create-container", None),
        ("create-container", "no room"),
    ]

    other: list[BaseException] = []

    def reconfigure() -> None:  # another thread (the reload thread): heard at once, in order
        try:
            assert rig.manager.reconfigure(FakeConfig("recording", "0-3")).applied
        except BaseException as exc:
            other.append(exc)

    rig.manager.start_container(pod, a)
    thread = threading.Thread(target=reconfigure)
    thread.start()
    thread.join()
    assert other == []
    assert [c.operation for c in heard.calls()][-2:] == ["start-container", "reconfigure"]
    assert heard.threads == {threading.get_ident(), thread.ident}


def test_telling_the_observer_never_waits_for_a_running_call() -> None:
    """The event loop never blocks on the pipeline's lock to tell the observer: a call
    running on another thread holds it, and the next call tells the observer first."""
    heard = Heard()
    rig = make_rig(observer=heard)
    rig.manager.defer_observer()
    pod = make_pod()
    rig.manager.run_pod(pod)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with rig.manager._lock:  # as a running call holds it
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    rig.manager.tell_observer()  # returns at once
    assert heard.calls() == []
    release.set()
    holder.join()
    rig.manager.tell_observer()
    assert heard.calls() == [InboundCall("run-pod", pod)]


def test_without_an_observer_nothing_is_deferred() -> None:
    rig = make_rig()
    assert not rig.manager.observed
    assert not rig.manager.defer_observer()
    rig.manager.run_pod(make_pod())
    rig.manager.tell_observer()
    assert rig.manager._unheard == []
