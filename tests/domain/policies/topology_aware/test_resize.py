"""In-place resizes (UpdateContainer): what moves, what stays, and failures that change
nothing."""

from __future__ import annotations

import contextlib

import attrs
import pytest

from nrirp.domain.model import ContainerState, LinuxResources
from nrirp.domain.pipeline import OperationFailedError

from .support import GiB, Rig, make_container, make_pod, make_rig, tiny_machine

AFFINITY_TO_A = "b: [a]"


def test_failed_resize_changes_no_other_containers_memory() -> None:
    rig = make_rig("box-16")  # 4 GiB per node
    pod = make_pod(
        "p", "Guaranteed", annotations={"resource-policy.nri.io/affinity": AFFINITY_TO_A}
    )
    a = make_container(pod, "a", cpu=1000, limit=1000, memory=3 * GiB)
    b = make_container(pod, "b", cpu=1000, limit=1000, memory=2 * GiB)
    rig.manager.run_pod(pod)
    for c in (a, b):
        rig.manager.create_container(pod, c)
        running = attrs.evolve(c, state=ContainerState.RUNNING)
        rig.manager.post_create(pod, running)
        rig.manager.post_start(pod, running)
    assert rig.pool(a) == rig.pool(b)
    zones = {c.id: rig.alloc.memory.zone_of(c.id) for c in (a, b)}
    assert len(zones[b.id] or ()) == 2, "b is widened next to a"
    usage = dict(rig.alloc.memory.zones())
    with pytest.raises(OperationFailedError, match=r"no pool has 100\.0 GiB"):
        rig.manager.update_container(pod, rig.ctr(a), LinuxResources(memory_limit=100 * GiB))
    assert {c.id: rig.alloc.memory.zone_of(c.id) for c in (a, b)} == zones
    assert dict(rig.alloc.memory.zones()) == usage
    assert rig.alloc.grants[b.id].memory == zones[b.id] == rig.mems(b)
    # nothing is left over for the next, unrelated operation
    _, _, result = rig.run("other", "BestEffort")
    assert list(result.updates) == []


def test_memory_only_resize_keeps_exclusive_cpus_and_moves_nobody() -> None:
    rig = make_rig(tiny_machine(8))
    pod_d, d, _ = rig.run("d", "Guaranteed", cpu=2000)
    pod_c, c, _ = rig.run("c", "Guaranteed", cpu=2000)
    _, s, _ = rig.run("s", cpu=100, limit=200)
    rig.stop(pod_d, d)  # d's CPUs go back to the shared set
    before = {x.id: rig.cpus(x) for x in (c, s)}
    updates = rig.manager.update_container(pod_c, rig.ctr(c), LinuxResources(memory_limit=2 * GiB))
    assert {x.id: rig.cpus(x) for x in (c, s)} == before
    assert [u for u in updates if u.container_id != c.id] == []
    assert rig.alloc.grants[c.id].memory_size == 2 * GiB


def test_resize_that_changes_the_cpu_count_reallocates_in_the_old_pool() -> None:
    rig = make_rig(tiny_machine(8))
    pod, c, _ = rig.run("c", "Guaranteed", cpu=2000)
    old = rig.cpus(c)
    bigger = LinuxResources(cpu_shares=3072, cpu_quota=300_000, cpu_period=100_000)
    rig.manager.update_container(pod, rig.ctr(c), bigger)
    assert len(rig.cpus(c)) == 3 and rig.kind(c) == "exclusive"
    assert rig.alloc.supply.sharable[0].isdisjoint(rig.cpus(c))
    assert old != rig.cpus(c) or len(old) == 3


def _engine_state(rig: Rig) -> tuple[object, ...]:
    """Everything the engine accounts, as plain values."""
    alloc = rig.alloc
    supply = alloc.supply
    return (
        list(supply.sharable),
        list(supply.isolated),
        list(supply.shared_granted),
        list(supply.count),
        {pid: dict(m) for pid, m in enumerate(supply.members)},
        dict(alloc.memory.zones()),
        dict(alloc.grants),
        {k: dict(v) for k, v in alloc.colocated.items()},
        dict(alloc.cold_starts),
        alloc.memory_granted,
        list(alloc.memory_view.pool_touch),
    )


@pytest.mark.parametrize("fails", [True, False], ids=["block raises", "block commits nothing"])
def test_resizing_puts_the_old_grant_back_unless_a_new_one_is_committed(fails: bool) -> None:
    rig = make_rig("box-16")
    _, a, _ = rig.run("a", "Guaranteed", cpu=2000, memory=3 * GiB)
    _, b, _ = rig.run("b", cpu=300, memory=GiB)
    before = _engine_state(rig)
    grant = rig.alloc.grants[a.id]
    with contextlib.ExitStack() as stack:
        if fails:
            stack.enter_context(pytest.raises(RuntimeError))
        with rig.alloc.resizing(a.id) as old:
            assert old is grant
            assert a.id not in rig.alloc.grants, "out of the accounting meanwhile"
            assert rig.alloc.memory.zone_of(a.id) == grant.memory, "its memory stays placed"
            if fails:
                raise RuntimeError("planning failed")
    assert _engine_state(rig) == before
    assert rig.alloc.grants[a.id] is grant
    with rig.alloc.resizing("no-such-container") as none:
        assert none is None
    assert _engine_state(rig) == before
    assert b.id in rig.alloc.grants
