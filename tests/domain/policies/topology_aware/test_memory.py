"""Memory: what is accounted, how a pool's memory fit is judged, and how refusals read."""

from __future__ import annotations

import random
from typing import Any

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryRequest
from nrirp.domain.pipeline import OperationFailedError
from nrirp.domain.policies.topology_aware.memory_view import MemoryView

from .support import GiB, make_container, make_pod, make_rig

MiB = 1 << 20


def _oom_score_adj(request: int, capacity: int) -> int:
    """kubelet's Burstable OOM score adjustment for a memory request."""
    return 1000 - (1000 * request) // capacity


def test_memory_fit_agrees_with_the_allocators_offer(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scoring item 4 ("fits without widening anyone") is what the allocator would do, also
    when zones around the pool hold widened containers."""
    disagreements: list[tuple[str, str, bool, bool]] = []
    checked = 0
    original = MemoryView.fit

    def compare(self: MemoryView, request: Any, pool: Any, types: Any, size: int, *rest: Any):  # type: ignore[no-untyped-def]
        nonlocal checked
        fit = original(self, request, pool, types, size, *rest)
        if size:
            nodes = self.pool_nodes(pool, types)
            try:
                offer = self.memory.offer(
                    MemoryRequest(owner=request.container_id, size=size, nodes=nodes, types=types)
                )
                truth = offer.fits
            except MemoryAllocationError:
                truth = False
            checked += 1
            if truth != fit.fits:
                disagreements.append((request.label, pool.name, fit.fits, truth))
        return fit

    monkeypatch.setattr(MemoryView, "fit", compare)
    for seed in range(6):
        rng = random.Random(seed)
        rig = make_rig("box-16")  # 4 GiB per NUMA node
        live = []
        for i in range(40):
            if live and rng.random() < 0.35:
                rig.stop(*live.pop(rng.randrange(len(live))))
                continue
            memory = rng.choice([512, 1024, 1536, 2048, 3072]) * MiB
            try:
                pod, ctr, _ = rig.run(
                    f"s{seed}x{i}", "Guaranteed", cpu=rng.choice([100, 200, 1000]), memory=memory
                )
            except OperationFailedError:
                continue
            live.append((pod, ctr))
    assert checked > 500
    assert disagreements == []


def test_a_node_inside_an_overcommitted_zone_does_not_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    """review #1: node 0 has room of its own, but nodes 0-1 hold a widened container."""
    rig = make_rig("box-16")  # 4 GiB per node
    pod = make_pod("p", "Guaranteed", annotations={"resource-policy.nri.io/affinity": "b: [a]"})
    a = make_container(pod, "a", cpu=1000, limit=1000, memory=3 * GiB)
    b = make_container(pod, "b", cpu=1000, limit=1000, memory=2 * GiB)
    rig.manager.run_pod(pod)
    for c in (a, b):
        rig.manager.create_container(pod, c)
    assert rig.alloc.memory.zones() == {CPUSet.of(1): 3 * GiB, CPUSet.parse("0-1"): 2 * GiB}
    seen: dict[str, bool] = {}
    original = MemoryView.fit

    def record(self: MemoryView, request: Any, pool: Any, *rest: Any):  # type: ignore[no-untyped-def]
        fit = original(self, request, pool, *rest)
        seen[pool.name] = fit.fits
        return fit

    monkeypatch.setattr(MemoryView, "fit", record)
    # 3.5 GiB fit in node 0 alone, but nodes 0-1 would then hold 8.5 GiB in 8
    _, x, _ = rig.run("x", "Guaranteed", cpu=100, memory=3 * GiB + GiB // 2)
    assert seen["NUMA node #0"] is False and seen["NUMA node #1"] is False
    assert seen["NUMA node #2"] is True and seen["NUMA node #3"] is True
    assert rig.pool(x) in ("NUMA node #2", "NUMA node #3") and len(rig.mems(x)) == 1


def test_burstable_memory_accounts_the_request_not_the_limit() -> None:
    rig = make_rig("box-16")  # 16 GiB, 4 GiB per node
    capacity = sum(n.memory_bytes for n in rig.machine.nodes.values())
    # a 32 GiB limit on a 16 GiB node is legal for a Burstable pod requesting 1 GiB
    _, big, _ = rig.run(
        "big", cpu=100, memory=32 * GiB, oom_score_adj=_oom_score_adj(GiB, capacity)
    )
    grant = rig.alloc.grants[big.id]
    assert GiB * 0.95 < grant.memory_size <= GiB
    # Burstable containers whose limits add up past the machine's memory are all admitted
    small = [
        rig.run(f"b{i}", cpu=100, memory=6 * GiB, oom_score_adj=_oom_score_adj(GiB // 4, capacity))[
            1
        ]
        for i in range(6)
    ]
    assert all(rig.alloc.grants[c.id].memory_size <= GiB // 4 for c in small)
    assert rig.alloc.memory_granted < 3 * GiB


def test_burstable_memory_limit_prefers_pools_that_could_hold_it() -> None:
    rig = make_rig("box-16")
    capacity = sum(n.memory_bytes for n in rig.machine.nodes.values())
    adj = _oom_score_adj(GiB // 2, capacity)
    # a CPU limit makes the deepest pool (a 4 GiB NUMA node) the natural choice...
    _, fits, _ = rig.run("fits", cpu=100, limit=200, memory=3 * GiB, oom_score_adj=adj)
    assert rig.pool(fits).startswith("NUMA node")
    # ...unless the memory limit is more than a node holds (scoring item 4)
    _, wide, _ = rig.run("wide", cpu=100, limit=200, memory=6 * GiB, oom_score_adj=adj)
    assert rig.pool(wide).startswith("socket")


def test_memory_refusal_names_the_container_and_the_pool() -> None:
    rig = make_rig("box-16")
    for i in range(4):
        rig.run(f"m{i}", "Guaranteed", cpu=100, memory=3 * GiB + GiB // 2)
    with pytest.raises(OperationFailedError) as failure:
        rig.run("last", "Guaranteed", cpu=100, memory=3 * GiB)
    message = str(failure.value)
    # the pipeline names the operation and the container, once; the reason does not repeat it
    assert message.startswith("create-container container default/last/c: cannot get 3.0 GiB ")
    assert message.count("default/last/c") == 1
    assert "not even by widening" in message and "nodes 0-3 hold 16.0 GiB" in message
    assert "owner" not in message and "pod-last-c" not in message
