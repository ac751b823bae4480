"""Property tests: random lifecycles keep the cache consistent and survive a restart."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import ContainerState
from nrirp.domain.pipeline import OperationFailedError

from .support import FakeConfig, make_container, make_pod, make_rig

ops = st.lists(
    st.tuples(
        st.sampled_from(["create", "start", "stop", "remove", "remove-pod", "fail-create"]),
        st.integers(min_value=0, max_value=5),
    ),
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_random_lifecycles_stay_consistent_and_restore_exactly(
    steps: list[tuple[str, int]],
) -> None:
    store = InMemoryStateStore()
    rig = make_rig(store=store, config=FakeConfig("recording", cpus="0-5"))
    m = rig.manager
    pods = [make_pod(f"p{i % 3}") for i in range(6)]
    ctrs = [make_container(pods[i], f"c{i}") for i in range(6)]
    for op, i in steps:
        pod, ctr = pods[i], ctrs[i]
        before = (m.pods(), m.containers())
        try:
            if op == "create":
                m.run_pod(pod)
                m.create_container(pod, ctr)
            elif op == "fail-create":
                rig.policy.fail_allocate = "refused"
                try:
                    m.create_container(pod, ctr)
                finally:
                    rig.policy.fail_allocate = None
            elif op == "start":
                m.post_create(pod, ctr)
                m.post_start(pod, ctr)
            elif op == "stop":
                m.stop_container(pod, ctr)
            elif op == "remove":
                m.remove_container(pod, ctr)
            else:
                m.remove_pod(pod)
        except OperationFailedError:
            assert (m.pods(), m.containers()) == before  # failures change nothing
        active = m.cache.active_containers()
        # every active container owns exactly the CPU the policy thinks it owns, no overlap
        assert {c.id: c.cpus for c in active} == {
            cid: CPUSet.of(cpu) for cid, cpu in rig.policy.owner.items()
        }
        assert rig.policy.free | CPUSet.from_ids(rig.policy.owner.values()) == CPUSet.parse("0-5")
        assert all(not c.pending.controllers for c in m.containers())
        assert all(m.cache.pod(c.pod_id) is not None for c in m.containers())

    restarted = make_rig(store=store, start=False)
    restarted.manager.start()
    assert restarted.manager.pods() == m.pods()
    assert restarted.manager.containers() == m.containers()
    assert restarted.policy.owner == rig.policy.owner
    assert restarted.manager.config == m.config
    # reconcile with a runtime that reports exactly what we have: nothing to do
    reported = [c for c in m.containers() if c.state is not ContainerState.CREATING]
    saves = store.saves
    updates = restarted.manager.synchronize(m.pods(), reported)
    assert store.saves <= saves + 1  # at most one save for the whole synchronize
    assert updates == []
    assert {c.id for c in restarted.manager.containers()} == {c.id for c in reported}
