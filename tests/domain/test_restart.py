from __future__ import annotations

import json

import attrs
import pytest

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod, Update
from nrirp.domain.pipeline import OperationFailedError, StateRestoreError

from .support import FakeConfig, RecordingPolicy, make_container, make_pod, make_rig


def running(
    pod: Pod, name: str, cpus: CPUSet | None = None, mems: CPUSet | None = None
) -> Container:
    """The container as the runtime reports it after a restart."""
    ctr = make_container(pod, name, state=ContainerState.RUNNING)
    return attrs.evolve(ctr, resources=attrs.evolve(ctr.resources, cpus=cpus, mems=mems))


def first_life(store: InMemoryStateStore) -> tuple[Pod, dict[str, CPUSet]]:
    """Run three containers, then 'crash' (just drop the manager)."""
    rig = make_rig(store=store, config=FakeConfig("recording", cpus="2-7"))
    pod = make_pod("web")
    rig.manager.run_pod(pod)
    cpus = {}
    for name in ("a", "b", "c"):
        ctr = make_container(pod, name)
        result = rig.manager.create_container(pod, ctr)
        rig.manager.post_create(pod, ctr)
        rig.manager.post_start(pod, ctr)
        assert result.adjustment.resources.cpus is not None
        cpus[name] = result.adjustment.resources.cpus
    return pod, cpus


def test_restart_reconciles_gone_new_and_survivors() -> None:
    store = InMemoryStateStore()
    pod, cpus = first_life(store)
    assert cpus == {"a": CPUSet.of(2), "b": CPUSet.of(3), "c": CPUSet.of(4)}

    rig = make_rig(store=store, start=False)
    outcome = rig.manager.start()  # no config given: the saved one is used
    assert outcome.restored and outcome.pods == 1 and outcome.containers == 3
    assert rig.manager.config == FakeConfig("recording", cpus="2-7")
    assert rig.policy.owner == {"id-web-a": 2, "id-web-b": 3, "id-web-c": 4}

    # the runtime now reports: a is gone, b as we left it, c with other cpus, d is new
    d = running(pod, "d")
    updates = rig.manager.synchronize(
        [pod],
        [
            running(pod, "b", CPUSet.of(3), CPUSet.of(0)),
            running(pod, "c", CPUSet.parse("0-7"), CPUSet.of(1)),
            d,
        ],
    )
    assert rig.policy.synced == [(["id-web-d"], ["id-web-a"])]
    by_name = {c.name: c for c in rig.manager.containers()}
    assert set(by_name) == {"b", "c", "d"}
    assert by_name["b"].cpus == CPUSet.of(3)  # survivors keep their resources
    assert by_name["c"].cpus == CPUSet.of(4)
    assert by_name["d"].cpus == CPUSet.of(2)  # a's CPU was released and reused
    assert all(c.state is ContainerState.RUNNING for c in by_name.values())
    # c drifted in the runtime: ours is applied again; d is allocated with an update
    assert sorted(updates, key=lambda u: u.container_id) == [
        Update("id-web-c", LinuxResources(cpus=CPUSet.of(4))),
        Update("id-web-d", LinuxResources(cpus=CPUSet.of(2), mems=CPUSet.of(0))),
    ]
    saved = json.loads(store.raw or "{}")
    assert sorted(c["name"] for c in saved["containers"]) == ["b", "c", "d"]
    assert saved["policy_data"]["recording"] == {
        "owner": {"id-web-b": 3, "id-web-c": 4, "id-web-d": 2}
    }


def test_pods_gone_take_their_containers() -> None:
    store = InMemoryStateStore()
    first_life(store)
    rig = make_rig(store=store, start=False)
    rig.manager.start()
    other = make_pod("other")
    rig.manager.synchronize([other], [running(other, "x")])
    assert [p.name for p in rig.manager.pods()] == ["other"]
    assert [c.name for c in rig.manager.containers()] == ["x"]
    assert sorted(rig.policy.synced[0][1]) == ["id-web-a", "id-web-b", "id-web-c"]


def test_stopped_survivor_is_released() -> None:
    store = InMemoryStateStore()
    pod, _ = first_life(store)
    rig = make_rig(store=store, start=False)
    rig.manager.start()
    stopped = make_container(pod, "a", state=ContainerState.STOPPED)
    rig.manager.synchronize([pod], [stopped, running(pod, "b", CPUSet.of(3), CPUSet.of(0))])
    added, removed = rig.policy.synced[0]
    assert added == [] and sorted(removed) == ["id-web-a", "id-web-c"]
    assert rig.manager.container("id-web-a").state is ContainerState.STOPPED  # type: ignore[union-attr]


def test_state_of_another_policy_reallocates_everything() -> None:
    store = InMemoryStateStore()
    pod, _ = first_life(store)

    class Other(RecordingPolicy):
        name = "other"

    rig = make_rig(store=store, policy=Other(), start=False)
    outcome = rig.manager.start(FakeConfig("other", cpus="4-7"))
    assert outcome.policy_changed
    assert rig.manager.cache.policy_data("recording") is None
    rig.manager.synchronize([pod], [running(pod, "a", CPUSet.of(2))])
    assert rig.policy.synced[0][0] == ["id-web-a"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("{not json", "cannot read saved state"),
        ('{"version": 7, "policy": "recording"}', "unsupported state version 7"),
        ('{"version": 1, "policy": "recording", "pods": 3}', "state.pods"),
    ],
)
def test_unusable_state_is_refused_and_nothing_changes(raw: str, message: str) -> None:
    store = InMemoryStateStore()
    store.set_raw(raw)
    rig = make_rig(store=store, start=False)
    with pytest.raises(StateRestoreError, match=message):
        rig.manager.start(FakeConfig("recording"))
    assert not rig.manager.started
    assert rig.manager.cache.pods() == [] and rig.manager.cache.containers() == []
    assert rig.policy.log == []
    assert store.raw == raw  # the evidence is left alone


def test_policy_refusing_to_start_leaves_cache_empty() -> None:
    store = InMemoryStateStore()
    first_life(store)

    class Refuses(RecordingPolicy):
        def start(self, ctx, config):  # type: ignore[no-untyped-def]
            super().start(ctx, config)
            raise ValueError("reservedResources is required")

    rig = make_rig(store=store, policy=Refuses(), start=False)
    with pytest.raises(OperationFailedError, match="reservedResources is required"):
        rig.manager.start(FakeConfig("recording"))
    assert not rig.manager.started
    assert rig.manager.cache.containers() == []
