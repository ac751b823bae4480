"""Pool choice details: pools that can never share, CPU priorities among the CPUs a request
would take, colocation without scanning containers."""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Sequence
from typing import Any

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import LinuxResources
from nrirp.domain.pipeline import OperationFailedError
from nrirp.domain.policies.topology_aware.score_cache import ScoreCache
from nrirp.domain.topology import CPU, Machine, NumaNode

from .support import GiB, anno, config, make_container, make_pod, make_rig


def two_sockets(
    freqs: Sequence[int] = (2000,) * 8, isolated: str = "", per_socket: int = 4
) -> Machine:
    """Two packages of ``per_socket`` single-thread cores, one NUMA node each; ``freqs``:
    base frequency (MHz) of every CPU."""
    cpus = [
        CPU(
            id=i,
            package_id=i // per_socket,
            die_id=0,
            cluster_id=i,
            core_id=i,
            node_id=i // per_socket,
            base_frequency_khz=freqs[i] * 1000,
        )
        for i in range(2 * per_socket)
    ]
    nodes = [
        NumaNode(
            id=n, cpus=CPUSet.range(n * per_socket, (n + 1) * per_socket), memory_bytes=4 * GiB
        )
        for n in range(2)
    ]
    return Machine.build(cpus, nodes, isolated=CPUSet.parse(isolated))


def one_cpu_sockets() -> Machine:
    """CPU 0 on socket 0, CPU 1 on socket 1, one NUMA node (the e2e fake machine)."""
    cpus = [CPU(id=i, package_id=i, die_id=0, cluster_id=0, core_id=0, node_id=0) for i in (0, 1)]
    return Machine.build(cpus, [NumaNode(id=0, cpus=CPUSet.parse("0-1"), memory_bytes=8 * GiB)])


def test_a_pool_whose_cpus_can_never_be_shared_loses() -> None:
    rig = make_rig(one_cpu_sockets(), config(reservedResources={"cpu": "cpuset:0"}))
    pod_e, e, _ = rig.run("e", "Guaranteed", cpu=1000)
    assert rig.cpus(e) == CPUSet.of(1)
    # no shared CPU is free anywhere; socket #0 holds only the reserved CPU and never will
    # have a shared one, socket #1 gets CPU 1 back when e leaves
    _, n, _ = rig.run("n", "BestEffort")
    assert rig.pool(n) == "socket #1" and rig.cpus(n) == CPUSet.of(0)
    rig.stop(pod_e, e)
    assert rig.cpus(n) == CPUSet.of(1)


def test_priority_is_counted_among_the_isolated_cpus_a_request_would_take() -> None:
    # socket #0: CPU 1 high, isolated 2-3 normal; socket #1: isolated 6-7 high
    freqs = (2000, 3000, 2000, 2000, 2000, 2000, 3000, 3000)
    rig = make_rig(
        two_sockets(freqs, isolated="2-3,6-7"), config(reservedResources={"cpu": "cpuset:0"})
    )
    _, hi, _ = rig.run(
        "hi", "Guaranteed", cpu=1000, annotations=anno("prefer-cpu-priority", "high")
    )
    assert rig.kind(hi) == "isolated" and rig.cpus(hi).issubset(CPUSet.parse("6-7"))


def test_normal_priority_requests_prefer_pools_with_enough_normal_cpus() -> None:
    # socket #0: CPUs 1-3 high, only 0 normal; socket #1: all normal (4 reserved)
    freqs = (2000, 3000, 3000, 3000, 2000, 2000, 2000, 2000)
    rig = make_rig(two_sockets(freqs), config(reservedResources={"cpu": "cpuset:4"}))
    # socket #0 has more sliceable capacity (4 CPUs against 3), but only one normal CPU
    _, g, _ = rig.run("g", "Guaranteed", cpu=2000)
    assert rig.pool(g) == "socket #1" and rig.cpus(g).issubset(CPUSet.parse("5-7"))


@pytest.mark.parametrize("setting", ["colocatePods", "colocateNamespaces"])
def test_colocation_counts_follow_grants(setting: str) -> None:
    rig = make_rig("box-16", config(**{setting: True}))
    run = functools.partial(rig.run, cpu=100, limit=200, memory=GiB)
    first = run("a", namespace="team")[1]
    if setting == "colocateNamespaces":
        others = [run(f"n{i}", namespace="team")[1] for i in range(3)]
        assert {rig.pool(c) for c in others} == {rig.pool(first)}
        stranger = run("x", namespace="other")[1]
        assert rig.pool(stranger) != rig.pool(first)  # fewer containers elsewhere
        key = ("namespace", "team")
        assert rig.alloc.colocated[key] == {rig.alloc.tree.by_name(rig.pool(first)).id: 4}  # type: ignore[union-attr]
    else:
        assert rig.alloc.colocated[("pod", "pod-a")] == {
            rig.alloc.tree.by_name(rig.pool(first)).id: 1  # type: ignore[union-attr]
        }


def test_colocate_namespaces_does_not_look_at_every_container(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """review #6: the implicit affinities come from per-pool counts, not a cache scan."""
    rig = make_rig("box-16", config(colocateNamespaces=True))
    conts = [rig.run(f"c{i}", cpu=10, limit=20, namespace="team")[1] for i in range(20)]
    scanned: list[int] = []
    original = rig.manager.cache.active_containers

    def counting() -> list[object]:
        found = original()
        scanned.append(len(found))
        return found  # type: ignore[return-value]

    monkeypatch.setattr(rig.manager.cache, "active_containers", counting)
    pod = make_pod("new", namespace="team")
    weighted = rig.policy._affinity(rig.alloc, pod, make_container(pod, cpu=10, limit=20))
    assert scanned == []
    assert sum(w for _, w in weighted) == 10 * 20
    assert {p.name for p, _ in weighted} == {rig.pool(c) for c in conts}


@pytest.mark.parametrize("machine", ["box-16", "server-112-pmem", "hbm-cxl", "sparse-8s-4096"])
def test_reused_scores_equal_fresh_ones(machine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores reused from earlier decisions (same request signature, pool unchanged) are the
    ones a fresh scoring would give, and the pools skipped by their lower bound could not have
    won, through creates, stops, resizes and memory pressure."""
    original = ScoreCache.scores
    compared = 0

    def checked(self: ScoreCache, signature: Any, pools: Any, scorer: Any, *rest: Any) -> Any:
        nonlocal compared
        scores, complete = original(self, signature, pools, scorer, *rest)
        fresh = {s.pool.id: s for s in (scorer.score(p) for p in pools)}
        for score in scores:
            again = fresh[score.pool.id]
            assert (score.key, score.viable, score.use_isolated) == (
                again.key,
                again.viable,
                again.use_isolated,
            )
        assert complete or len(scores) < len(pools)
        best = min((s.key for s in scores if s.viable), default=None)
        assert best == min((s.key for s in fresh.values() if s.viable), default=None)
        compared += len(pools)
        return scores, complete

    monkeypatch.setattr(ScoreCache, "scores", checked)
    rng = random.Random(7)
    rig = make_rig(machine)
    live: list[tuple[Any, Any]] = []
    shapes = [
        {"qos": "BestEffort"},
        {"cpu": 200, "limit": 400, "memory": GiB},
        {"cpu": 300, "memory": 2 * GiB},
        {"qos": "Guaranteed", "cpu": 1000, "memory": 3 * GiB},
        {"qos": "Guaranteed", "cpu": 2000, "memory": GiB // 2},
        {"qos": "Guaranteed", "cpu": 1500, "memory": GiB},
        {"cpu": 100, "namespace": "kube-system"},
    ]
    for i in range(120):
        if live and rng.random() < 0.3:
            rig.stop(*live.pop(rng.randrange(len(live))))
            continue
        if live and rng.random() < 0.15:
            pod, ctr = rng.choice(live)
            size = LinuxResources(memory_limit=rng.choice([GiB // 2, GiB, 3 * GiB]))
            with contextlib.suppress(OperationFailedError):
                rig.manager.update_container(pod, rig.ctr(ctr), size)
            continue
        try:
            pod, ctr, _ = rig.run(f"w{i}", **rng.choice(shapes))  # type: ignore[arg-type]
        except OperationFailedError:
            continue
        live.append((pod, ctr))
    assert compared > 300


def test_shared_colocation_counts_exclusive_grants_too() -> None:
    """The reference's colocation count for a shared request is every grant of the normal
    CPU kinds in the pool, exclusive ones included; then more shared capacity wins."""
    machine = two_sockets((2000,) * 12, per_socket=6)
    rig = make_rig(machine, config(reservedResources={"cpu": "cpuset:0-1"}))
    _, g, _ = rig.run("g", "Guaranteed", cpu=1000)
    assert rig.pool(g) == "socket #1"  # more sliceable capacity: 6 sharable CPUs against 4
    # socket #1 still has more shared capacity (5 CPUs against 4) but holds a grant already
    _, s, _ = rig.run("s", cpu=100, limit=200, memory=GiB)
    assert rig.pool(s) == "socket #0"
    # one grant each: the tie goes to more shared capacity
    _, t, _ = rig.run("t", cpu=100, limit=200, memory=GiB)
    assert rig.pool(t) == "socket #1"
    # reserved grants are not colocated with shared ones
    _, k, _ = rig.run("k", cpu=100, namespace="kube-system")
    assert rig.kind(k) == "reserved"
    _, u, _ = rig.run("u", "BestEffort")
    assert rig.pool(u) == "socket #0"  # one grant (s) against two (g, t); k counts for neither
