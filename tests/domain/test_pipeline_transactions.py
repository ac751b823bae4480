"""Every resource-manager operation is one transaction: what each reports when it commits or
fails (notices, metrics, saves), including operations that find nothing to do."""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.adapters.memory import RecordingMetrics
from nrirp.domain.model import ContainerState
from nrirp.domain.pipeline import OperationFailedError
from nrirp.domain.policy import PolicyError, PolicyEvent
from nrirp.domain.ports.decisions import Notice, Severity

from .support import FakeConfig, RecordingPolicy, make_container, make_pod, make_rig


def test_operations_about_an_unknown_container_still_commit() -> None:
    metrics = RecordingMetrics()
    rig = make_rig(metrics=metrics)
    pod = make_pod()
    ghost = make_container(pod, "ghost")
    saves = rig.store.saves
    rig.manager.post_start(pod, ghost)
    assert rig.manager.stop_container(pod, ghost) == []
    rig.manager.remove_container(pod, ghost)
    assert [(op, ok) for op, _, ok in metrics.operations[1:]] == [
        ("post-start", True),
        ("stop-container", True),
        ("remove-container", True),
    ]
    assert rig.store.saves == saves  # nothing changed, nothing saved
    assert rig.log.notices == []


def test_a_refused_start_is_reported_once_and_names_the_policy_in_the_error() -> None:
    metrics = RecordingMetrics()

    class Refuses(RecordingPolicy):
        def start(self, ctx: Any, config: Any) -> None:
            raise PolicyError("no reserved CPUs")

    rig = make_rig(policy=Refuses(), start=False, metrics=metrics)
    with pytest.raises(OperationFailedError) as info:
        rig.manager.start(FakeConfig("recording"))
    assert str(info.value) == "start policy recording: no reserved CPUs"
    assert isinstance(info.value.__cause__, PolicyError)
    assert rig.log.notices == [Notice("start", "start failed: no reserved CPUs", Severity.ERROR)]
    assert [(op, ok) for op, _, ok in metrics.operations] == [("start", False)]
    assert rig.store.saves == 0 and not rig.manager.started


def test_a_refused_reconfiguration_is_reported_and_measured() -> None:
    metrics = RecordingMetrics()
    rig = make_rig(metrics=metrics)
    rig.policy.fail_reconfigure = "bad cpus"
    saves = rig.store.saves
    outcome = rig.manager.reconfigure(FakeConfig("recording", cpus="0-3"))
    assert (outcome.applied, outcome.reason) == (False, "bad cpus")
    assert rig.log.notices == [
        Notice("reconfigure", "reconfigure failed: bad cpus", Severity.ERROR)
    ]
    assert [(op, ok) for op, _, ok in metrics.operations] == [
        ("start", True),
        ("reconfigure", False),
    ]
    assert rig.store.saves == saves and rig.manager.config == FakeConfig("recording")


def test_a_failing_event_drops_its_decisions_and_names_its_source() -> None:
    rig = make_rig()
    pod = make_pod()
    rig.manager.run_pod(pod)
    ctr = make_container(pod, "a")
    rig.manager.create_container(pod, ctr)
    decided = len(rig.log.decisions)

    def decide_then_fail(event: PolicyEvent) -> None:
        assert rig.policy.ctx is not None
        current = rig.manager.cache.require_container(ctr.id)
        rig.policy.ctx.record_decision(current, "about to fail")
        raise PolicyError("tick refused")

    rig.policy.on_event = decide_then_fail
    rig.manager.inject_event(PolicyEvent("tick", "timer"))
    assert len(rig.log.decisions) == decided
    assert rig.log.notices[-1] == Notice(
        "event tick", "event tick timer failed: tick refused", Severity.ERROR
    )
    # the next operation's decisions are its own
    rig.policy.on_event = None
    other = make_container(pod, "b")
    rig.manager.create_container(pod, other)
    assert [d.reason for d in rig.log.decisions[decided:]] == ["cpu 1"]
    stopped = rig.manager.stop_container(pod, other)
    assert stopped == [] and rig.manager.container(other.id) is not None
    assert rig.manager.container(other.id).state is ContainerState.STOPPED  # type: ignore[union-attr]
