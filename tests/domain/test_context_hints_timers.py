"""PolicyContext.topology_hints and schedule_event, through the real ResourceManager."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from nrirp.adapters.memory import ManualTimers
from nrirp.adapters.system import ThreadTimers
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Device, Mount
from nrirp.domain.policy import NoTimersError, PolicyEvent
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.topology import HintOrigin, TopologyHint
from tests.domain.support import make_container, make_pod, make_rig

GPU = "/sys/devices/pci0000:00/0000:00:02.0"
NIC = "/sys/devices/pci0000:80/0000:80:03.0"


class CountingSource:
    """A hint source that records which containers it was asked about."""

    def __init__(self, fail: bool = False) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def hints(self, container: Container) -> Mapping[str, TopologyHint]:
        self.calls.append(container.id)
        if self.fail:
            raise RuntimeError("sysfs exploded")
        out = {}
        for device in container.devices:
            out[GPU] = TopologyHint(GPU, cpus=CPUSet.parse("0-3"), path=device.path)
        for mount in container.mounts:
            out[NIC] = TopologyHint(
                NIC, nodes=CPUSet.of(1), origin=HintOrigin.MOUNTS, path=mount.source
            )
        return out


def hinted_container(pod_annotations: dict[str, str] | None = None) -> tuple[object, Container]:
    pod = make_pod(annotations=pod_annotations or {})
    ctr = make_container(
        pod,
        devices=(Device("/dev/dri/card0", "c", 226, 0),),
        mounts=(Mount("/data", "/mnt/nic"),),
    )
    return pod, ctr


def test_topology_hints_reach_the_policy_filtered_by_annotations() -> None:
    source = CountingSource()
    rig = make_rig(hints=source)
    seen: list[set[str]] = []

    def allocate(container: Container) -> None:
        assert rig.policy.ctx is not None
        seen.append(set(rig.policy.ctx.topology_hints(container)))
        seen.append(set(rig.policy.ctx.topology_hints(container)))

    rig.policy.allocate = allocate  # type: ignore[method-assign]
    pod, ctr = hinted_container({"topologyhints.resource-policy.nri.io/container.ctr0": "devices"})
    rig.manager.run_pod(pod)  # type: ignore[arg-type]
    rig.manager.create_container(pod, ctr)  # type: ignore[arg-type]
    assert seen == [{GPU}, {GPU}]
    assert source.calls == [ctr.id]  # looked up once, then cached


def test_topology_hints_default_to_mounts_and_devices_and_report_bad_annotations() -> None:
    rig = make_rig(hints=CountingSource())
    assert rig.policy.ctx is not None
    pod, ctr = hinted_container({"topologyhints.resource-policy.nri.io": "gpus"})
    rig.manager.run_pod(pod)  # type: ignore[arg-type]
    rig.manager.create_container(pod, ctr)  # type: ignore[arg-type]
    cached = rig.manager.container(ctr.id)
    assert cached is not None
    found = rig.policy.ctx.topology_hints(cached)
    assert set(found) == {GPU, NIC}
    assert found[GPU].path == "/dev/dri/card0"
    problems = rig.policy.ctx.take_annotation_problems()
    assert [(name, p.key) for name, p in problems] == [
        ("ctr0", "topologyhints.resource-policy.nri.io")
    ]


def test_no_source_means_no_hints() -> None:
    rig = make_rig()
    assert rig.policy.ctx is not None
    _, ctr = hinted_container()
    assert rig.policy.ctx.topology_hints(ctr) == {}


def test_a_failing_source_gives_no_hints_and_a_notice() -> None:
    rig = make_rig(hints=CountingSource(fail=True))
    assert rig.policy.ctx is not None
    _, ctr = hinted_container()
    assert rig.policy.ctx.topology_hints(ctr) == {}
    (notice,) = [n for n in rig.log.notices if "topology hints" in n.message]
    assert "sysfs exploded" in notice.message
    assert notice.container_id == ctr.id


def test_changed_devices_are_looked_up_again() -> None:
    source = CountingSource()
    rig = make_rig(hints=source)
    assert rig.policy.ctx is not None
    _, ctr = hinted_container()
    rig.policy.ctx.topology_hints(ctr)
    bare = make_container(make_pod())
    assert bare.id == ctr.id
    assert rig.policy.ctx.topology_hints(bare) == {}
    assert source.calls == [ctr.id, ctr.id]


def test_hint_cache_drops_containers_gone_from_the_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    import nrirp.domain.policy.context as context_module

    monkeypatch.setattr(context_module, "_HINT_CACHE_PRUNE_AT", 4)
    source = CountingSource()
    rig = make_rig(hints=source)
    ctx = rig.policy.ctx
    assert ctx is not None
    pod = make_pod()
    ctx.cache.put_pod(pod)
    ctrs = [make_container(pod, f"c{i}") for i in range(8)]
    for ctr in ctrs[:4]:
        ctx.cache.put_container(ctr)
        ctx.topology_hints(ctr)
    for ctr in ctrs[:3]:
        ctx.cache.remove_container(ctr.id)
    ctx.cache.put_container(ctrs[4])
    ctx.topology_hints(ctrs[4])  # the fifth lookup prunes the three gone
    assert set(ctx._hint_cache) == {ctrs[3].id, ctrs[4].id}
    for ctr in ctrs[5:]:  # at 4 entries again nothing is gone: the limit doubles past them
        ctx.cache.put_container(ctr)
        ctx.topology_hints(ctr)
    assert len(ctx._hint_cache) == 5 and ctx._hint_cache_limit == 8
    ctx.topology_hints(ctrs[3])
    assert source.calls.count(ctrs[3].id) == 1  # still cached


# ---------------------------------------------------------------------- timers
def test_schedule_event_reaches_handle_event_when_the_timer_fires() -> None:
    timers = ManualTimers()
    rig = make_rig(timers=timers)
    assert rig.policy.ctx is not None
    event = PolicyEvent("cold-start-done", "test", {"container": "x"})
    handle = rig.policy.ctx.schedule_event(30.0, event)
    assert timers.advance(29.9) == 0
    assert rig.policy.events == []
    assert timers.advance(0.1) == 1
    assert rig.policy.events == [event]
    assert handle is not None


def test_cancelled_event_never_arrives() -> None:
    timers = ManualTimers()
    rig = make_rig(timers=timers)
    assert rig.policy.ctx is not None
    rig.policy.ctx.schedule_event(5, PolicyEvent("a")).cancel()
    rig.policy.ctx.schedule_event(6, PolicyEvent("b"))
    timers.advance(10)
    assert [e.kind for e in rig.policy.events] == ["b"]


def test_event_scheduled_from_a_policy_call_runs_serialized_after_it() -> None:
    timers = ManualTimers()
    rig = make_rig(timers=timers)
    real_allocate = rig.policy.allocate

    def allocate(container: Container) -> None:
        real_allocate(container)
        assert rig.policy.ctx is not None
        rig.policy.ctx.schedule_event(0, PolicyEvent("later", data=container.id))

    rig.policy.allocate = allocate  # type: ignore[method-assign]
    changed: list[str] = []

    def on_event(event: PolicyEvent) -> None:
        # inside handle_event the pipeline is ours: the cache may be changed
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_cpus(event.data, CPUSet.of(7))
        changed.append(event.data)

    rig.policy.on_event = on_event
    pod = make_pod()
    ctr = make_container(pod)
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, ctr)
    assert changed == []  # timers fire only when they fire, never inside the operation
    timers.advance(0)
    assert changed == [ctr.id]
    current = rig.manager.container(ctr.id)
    assert current is not None and current.cpus == CPUSet.of(7)


def test_thread_timer_event_waits_for_the_pipeline() -> None:
    timers = ThreadTimers()
    rig = make_rig(timers=timers)
    assert rig.policy.ctx is not None
    done = threading.Event()
    rig.policy.on_event = lambda event: done.set()
    rig.policy.ctx.schedule_event(0.01, PolicyEvent("tick"))
    assert done.wait(5)
    assert [e.kind for e in rig.policy.events] == ["tick"]
    timers.close()


def test_undeliverable_event_is_reported_not_raised() -> None:
    timers = ManualTimers()
    rig = make_rig(timers=timers, start=False)
    # a context whose pipeline is not started: injecting fails
    ctx = rig.manager._ctx  # the context policies get once started
    ctx.schedule_event(1, PolicyEvent("early"))
    timers.advance(1)
    (notice,) = [n for n in rig.log.notices if "early" in n.message]
    assert notice.severity is Severity.ERROR
    assert "not delivered" in notice.message


def test_without_timers_schedule_event_fails_clearly() -> None:
    rig = make_rig()
    assert rig.policy.ctx is not None
    with pytest.raises(NoTimersError, match=r"'cold-start-done'.*no timers"):
        rig.policy.ctx.schedule_event(1, PolicyEvent("cold-start-done"))


@pytest.mark.parametrize("delay", [-1.0, float("nan"), float("inf")])
def test_bad_delays_are_refused(delay: float) -> None:
    timers = ManualTimers()
    rig = make_rig(timers=timers)
    assert rig.policy.ctx is not None
    with pytest.raises(ValueError, match="invalid timer delay"):
        rig.policy.ctx.schedule_event(delay, PolicyEvent("x"))
    assert timers.pending() == []
