"""The unit of work on its own: checkpoint, rollback unless committed, and what a commit
publishes (decisions in one batch, one save, the duration, then the updates), in that order."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest

from nrirp.adapters.memory import FakeClock, RecordingDecisionLog, RecordingMetrics
from nrirp.domain.cache import Cache
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import LinuxResources, Update
from nrirp.domain.pipeline import OperationFailedError, PipelineError
from nrirp.domain.pipeline.unit_of_work import UnitOfWork, failure_reason
from nrirp.domain.policy import PolicyError
from nrirp.domain.ports.decisions import Decision, Notice, Severity, batch_writer

from .support import make_container, make_pod


def _update(name: str) -> Update:
    return Update(f"id-pod0-{name}", LinuxResources(cpu_shares=2))


class Rig:
    """A unit of work over a cache holding one pod with containers a, b, c; every sink
    records into ``events`` so the order of what a commit does can be checked."""

    def __init__(self, save: Callable[[], None] | None = None) -> None:
        self.cache = Cache()
        self.pod = make_pod()
        self.cache.put_pod(self.pod)
        for name in "abc":
            self.cache.put_container(make_container(self.pod, name))
        self.cache.mark_clean()
        self.events: list[str] = []
        self.clock = FakeClock()
        self.log = _OrderedLog(self.events)
        self.metrics = RecordingMetrics()
        self.submitted: list[list[Update]] = []
        self.problems: list[tuple[str, object]] = []
        self.work = UnitOfWork(
            cache=self.cache,
            clock=self.clock,
            log=self.log,
            metrics=self.metrics,
            save=save or (lambda: self.events.append("save")),
            submit=self._submit,
            annotation_problems=self._take_problems,
        )

    def ctr(self, name: str) -> Any:
        return self.cache.require_container(f"id-pod0-{name}")

    def state(self) -> tuple[Any, ...]:
        return (tuple(self.cache.containers()), tuple(self.cache.pods()), self.cache.dirty)

    def _submit(self, updates: list[Update]) -> None:
        self.events.append("submit")
        self.submitted.append(list(updates))

    def _take_problems(self) -> list[tuple[str, object]]:
        taken, self.problems = self.problems, []
        return taken


class _OrderedLog(RecordingDecisionLog):
    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events
        self.batches: list[list[str]] = []

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        self.events.append("decisions")
        self.batches.append([d.container for d in decisions])
        super().decision_batch(decisions)

    def notice(self, notice: Notice) -> None:
        self.events.append(f"notice {notice.source}")
        super().notice(notice)


def test_commit_keeps_the_changes_and_publishes_decisions_problems_save_duration_updates() -> None:
    rig = Rig()
    with rig.work.begin("create-container", "container default/pod0/a") as work:
        rig.cache.set_cpus(rig.ctr("a").id, CPUSet.of(1))
        work.record_decision(rig.ctr("a"), "cpu 1", True)
        work.send_after_commit([_update("b")])
        rig.problems.append(("a", "bad annotation"))
        rig.clock.advance(0.25)
        work.commit()
    assert rig.ctr("a").cpus == CPUSet.of(1)
    assert rig.events == ["decisions", "notice annotations", "save", "submit"]
    assert rig.metrics.operations == [("create-container", 0.25, True)]
    assert rig.submitted == [[_update("b")]]
    assert rig.log.decisions[0].operation == "create-container"
    assert rig.cache._open == []


def test_commit_saves_once_and_sends_nothing_when_nothing_was_queued() -> None:
    rig = Rig()
    with rig.work.begin("run-pod") as work:
        work.commit()
    assert rig.events == ["save"]
    assert rig.submitted == [] and rig.log.batches == []


def test_decisions_of_a_unit_reach_the_log_in_one_batch_in_the_order_made() -> None:
    rig = Rig()
    with rig.work.begin("synchronize") as work:
        for name in "cab":
            work.record_decision(rig.ctr(name), f"for {name}", True)
        assert rig.work.decided == {f"id-pod0-{n}" for n in "abc"}
        work.commit()
    assert rig.log.batches == [["c", "a", "b"]]
    assert [d.reason for d in rig.log.decisions] == ["for c", "for a", "for b"]
    assert rig.work.decided == set()  # the next operation decides afresh
    with rig.work.begin("post-start") as work:
        work.record_decision(rig.ctr("a"), "again", True)
        work.commit()
    assert rig.log.batches == [["c", "a", "b"], ["a"]]


def test_an_exception_rolls_back_drops_the_records_and_reports_the_failure() -> None:
    rig = Rig()
    before = rig.state()
    with pytest.raises(OperationFailedError) as info, rig.work.begin("stop-pod", "pod x") as work:
        rig.cache.set_cpus(rig.ctr("a").id, CPUSet.of(3))
        rig.cache.remove_container(rig.ctr("b").id)
        work.record_decision(rig.ctr("a"), "cpu 3", True)
        work.send_after_commit([_update("a")])
        rig.problems.append(("a", "bad annotation"))
        rig.clock.advance(0.5)
        raise PolicyError("no room")
    assert rig.state() == before
    assert (str(info.value), info.value.reason) == ("stop-pod pod x: no room", "no room")
    assert isinstance(info.value.__cause__, PolicyError) and not info.value.internal
    assert rig.log.notices == [Notice("stop-pod", "stop-pod pod x failed: no room", Severity.ERROR)]
    assert rig.metrics.operations == [("stop-pod", 0.5, False)]
    assert rig.events == ["notice stop-pod"]  # no decisions, no save, nothing sent
    assert rig.problems == [] and rig.work.decided == set()
    # the dropped records do not leak into the next unit
    with rig.work.begin("run-pod") as work:
        work.commit()
    assert rig.log.decisions == [] and rig.submitted == []
    assert rig.log.notices[1:] == [] and rig.cache._open == []


def test_an_unexpected_exception_is_reported_by_its_type() -> None:
    rig = Rig()
    with pytest.raises(OperationFailedError) as info, rig.work.begin("run-pod", "pod p"):
        raise KeyError("x")
    assert info.value.reason == "internal error: KeyError: 'x'" and info.value.internal
    assert failure_reason(ValueError("plain words")) == "plain words"
    assert failure_reason(RuntimeError()) == "RuntimeError"


def test_a_reason_is_one_bounded_line_whatever_names_it_carries() -> None:
    # a policy names the pod in its refusal; a pod may be named "\n" or be very long
    reason = failure_reason(PolicyError("default/a\nb\x1b/c: no pool has 2 CPUs"))
    assert reason == "default/a\\nb\\x1b/c: no pool has 2 CPUs"
    long = failure_reason(PolicyError("x" * 5000))
    assert len(long) == 1000 and long.endswith("...")
    assert failure_reason(KeyError("a\tb")) == "internal error: KeyError: 'a\\tb'"


def test_leaving_without_commit_rolls_back_quietly() -> None:
    rig = Rig()
    before = rig.state()
    with rig.work.begin("post-create") as work:
        rig.cache.set_cpus(rig.ctr("c").id, CPUSet.of(2))
        work.record_decision(rig.ctr("c"), "cpu 2", True)
        work.send_after_commit([_update("c")])
    assert rig.state() == before
    assert rig.events == [] and rig.metrics.operations == []
    assert rig.cache._open == [] and not rig.work.is_open


def test_a_base_exception_rolls_back_and_passes_through_unreported() -> None:
    rig = Rig()
    before = rig.state()
    with pytest.raises(KeyboardInterrupt), rig.work.begin("run-pod") as work:
        rig.cache.set_cpus(rig.ctr("a").id, CPUSet.of(1))
        work.record_decision(rig.ctr("a"), "cpu 1", True)
        raise KeyboardInterrupt
    assert rig.state() == before
    assert rig.events == [] and rig.metrics.operations == []
    with rig.work.begin("run-pod") as work:
        work.commit()
    assert rig.log.decisions == []


def test_a_failure_after_commit_reaches_the_caller_as_it_is_and_keeps_the_changes() -> None:
    def failing_save() -> None:
        raise RuntimeError("disk on fire")

    rig = Rig(save=failing_save)
    with pytest.raises(RuntimeError, match="disk on fire"), rig.work.begin("run-pod") as work:
        rig.cache.set_cpus(rig.ctr("a").id, CPUSet.of(1))
        work.commit()
    assert rig.ctr("a").cpus == CPUSet.of(1)
    assert rig.metrics.operations == [] and rig.cache._open == []


def test_units_do_not_nest_savepoints_do() -> None:
    rig = Rig()
    with rig.work.begin("remove-pod") as work:
        with pytest.raises(PipelineError, match="unit of work of remove-pod is still open"):
            rig.work.begin("event tick")
        rig.cache.set_cpus(rig.ctr("a").id, CPUSet.of(1))
        # a failing step inside: only its own changes are undone, the unit goes on
        with pytest.raises(PolicyError), work.savepoint():
            rig.cache.set_cpus(rig.ctr("b").id, CPUSet.of(2))
            rig.cache.set_cpus(rig.ctr("a").id, CPUSet.of(3))
            raise PolicyError("release refused")
        assert (rig.ctr("a").cpus, rig.ctr("b").cpus) == (CPUSet.of(1), None)
        # a step that succeeds keeps its changes, until the unit itself rolls back
        with work.savepoint():
            rig.cache.set_cpus(rig.ctr("c").id, CPUSet.of(4))
        assert rig.ctr("c").cpus == CPUSet.of(4)
    assert [rig.ctr(n).cpus for n in "abc"] == [None, None, None]
    assert rig.cache._open == []


def test_savepoints_need_an_open_unit_and_commit_needs_one_too() -> None:
    rig = Rig()
    with pytest.raises(PipelineError, match="no unit of work is open"):
        rig.work.savepoint()
    with pytest.raises(PipelineError, match="no unit of work is open"):
        rig.work.commit()


def test_a_sink_without_decision_batch_gets_one_call_per_decision() -> None:
    class OldSink:
        def __init__(self) -> None:
            self.seen: list[str] = []

        def decision(self, decision: Decision) -> None:
            self.seen.append(decision.container)

        def notice(self, notice: Notice) -> None:
            pass

    sink = OldSink()
    pod = make_pod()
    decisions = [
        Decision("op", f"id-{n}", n, pod.name, pod.namespace, None, None, "r") for n in "xyz"
    ]
    batch_writer(sink)(decisions)
    assert sink.seen == ["x", "y", "z"]
    log = RecordingDecisionLog()
    assert batch_writer(log) == log.decision_batch  # a sink with batches is called directly


def test_metrics_get_the_decision_count_and_a_refusal_class_never_free_text() -> None:
    from nrirp.domain.cpuallocator import CPUAllocationError
    from nrirp.domain.memalloc import MemoryAllocationError, MemoryRequest
    from nrirp.domain.pipeline.unit_of_work import REFUSAL_CLASSES, refusal_class
    from nrirp.domain.topology import MemoryType

    rig = Rig()
    with rig.work.begin("create-container") as work:
        work.record_decision(rig.ctr("a"), "cpu 1", True)
        work.record_decision(rig.ctr("b"), "cpu 2", True)
        work.commit()
    assert rig.metrics.decisions == [("create-container", 2)]

    def fail(operation: str, error: BaseException) -> None:
        with pytest.raises(OperationFailedError), rig.work.begin(operation):
            raise error

    def wrapped(inner: Exception) -> PolicyError:  # as policies report allocator failures
        try:
            raise inner
        except Exception:
            try:
                raise PolicyError(f"no room for c0: {inner}") from None
            except PolicyError as outer:
                return outer

    fail("create-container", PolicyError("no room for pod0/c0 in pool socket #1"))
    fail("create-container", wrapped(CPUAllocationError("2 CPUs wanted, 1 free")))
    request = MemoryRequest("c0", 1 << 30, CPUSet.of(3), frozenset({MemoryType.DRAM}))
    fail("update-container", wrapped(MemoryAllocationError(request, "node 3 full")))
    fail("stop-pod", KeyError("bug"))
    fail("run-pod", ValueError("bad request"))
    assert rig.metrics.refusals == [
        ("create-container", "policy"),
        ("create-container", "cpu"),
        ("update-container", "memory"),
        ("stop-pod", "internal"),
        ("run-pod", "invalid-request"),
    ]
    assert all(reason in REFUSAL_CLASSES for _, reason in rig.metrics.refusals)
    assert refusal_class(OperationFailedError("x", "y", "z", internal=True)) == "internal"
