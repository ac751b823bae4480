"""Balloons come and go with their containers: built-in types, sizing, inflating, deflating,
freeing, limits and names (reference-balloons.md §2, §3.4, §4). Machine: box-16 (2 packages,
NUMA nodes 0-3 of 4 CPUs, 2 threads per core, siblings adjacent)."""

from __future__ import annotations

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.pipeline import OperationFailedError
from tests.domain.policies.balloons.support import config, make_rig


def test_builtin_balloons_exist_from_the_start() -> None:
    rig = make_rig()
    assert rig.names() == ["reserved[0]", "default[0]"]
    # 750m reserved: one CPU for the reserved balloon; default starts empty
    assert rig.balloon("reserved[0]").cpus.bit_count() == 1
    assert rig.balloon("default[0]").cpus == 0
    assert rig.engine.free.bit_count() == 15


def test_user_types_get_their_cpus_first() -> None:
    # allocatorPriority high (the CRD default) is created before the built-ins (low)
    rig = make_rig(cfg=config(balloonTypes=[{"name": "a", "minBalloons": 1, "minCPUs": 2}]))
    assert rig.names() == ["a[0]", "reserved[0]", "default[0]"]
    assert CPUSet(rig.balloon("a[0]").cpus) == CPUSet.parse("0-1")
    assert CPUSet(rig.balloon("reserved[0]").cpus) == CPUSet.parse("2")


def test_kube_system_and_reserved_namespaces_go_to_reserved() -> None:
    rig = make_rig(cfg=config(reservedPoolNamespaces=["infra-*"]))
    _, k = rig.run("k", 100, namespace="kube-system")
    _, i = rig.run("i", 100, namespace="infra-logs")
    assert rig.where(k) == rig.where(i) == "reserved[0]"
    assert rig.cpus(k) == rig.cpus(i) == CPUSet(rig.balloon("reserved[0]").cpus)


def test_balloon_inflates_and_deflates_with_its_containers() -> None:
    rig = make_rig(cfg=config(balloonTypes=[{"name": "app", "namespaces": ["app"]}]))
    pod_a, (a,) = rig.pod("a", {"c": 1500}, namespace="app")
    balloon = rig.balloon("app[0]")
    assert balloon.cpus.bit_count() == 2  # ceil(1500m)
    pod_b, (b,) = rig.pod("b", {"c": 700}, namespace="app")
    assert rig.where(b) == "app[0]"
    assert balloon.cpus.bit_count() == 3  # ceil(2200m)
    assert rig.cpus(a) == rig.cpus(b) == CPUSet(balloon.cpus)
    rig.stop(pod_a, a)
    assert balloon.cpus.bit_count() == 1  # ceil(700m)
    assert rig.cpus(b) == CPUSet(balloon.cpus)
    freed, held = rig.engine.free, balloon.cpus
    rig.stop(pod_b, b)
    # no minBalloons: the empty balloon is deleted and its CPUs are free again
    assert rig.names() == ["reserved[0]", "default[0]"]
    assert rig.engine.free == freed | held


def test_best_effort_gets_one_cpu() -> None:
    rig = make_rig()
    _, c = rig.run("be", 0, qos="BestEffort")
    assert rig.where(c) == "default[0]"
    assert len(rig.cpus(c) or ()) == 1


def test_min_and_max_cpus_clamp_the_size() -> None:
    types = [{"name": "app", "namespaces": ["app"], "minCPUs": 2, "maxCPUs": 3}]
    rig = make_rig(cfg=config(balloonTypes=types))
    rig.pod("a", {"c": 100}, namespace="app")
    assert rig.balloon("app[0]").cpus.bit_count() == 2  # at least minCPUs
    rig.pod("b", {"c": 2000}, namespace="app")  # 2.1 CPUs: 3
    assert rig.balloon("app[0]").cpus.bit_count() == 3
    # 4.1 CPUs do not fit under maxCPUs: a second balloon
    _, (c,) = rig.pod("c", {"c": 2000}, namespace="app")
    assert rig.where(c) == "app[1]"


def test_max_balloons_refuses_what_does_not_fit() -> None:
    types = [{"name": "app", "namespaces": ["app"], "maxCPUs": 2, "maxBalloons": 1}]
    rig = make_rig(cfg=config(balloonTypes=types))
    rig.pod("a", {"c": 1500}, namespace="app")
    with pytest.raises(OperationFailedError, match="no suitable app balloon instance available"):
        rig.pod("b", {"c": 1000}, namespace="app")
    assert rig.names() == ["reserved[0]", "default[0]", "app[0]"]


def test_new_balloons_take_the_smallest_free_index() -> None:
    types = [{"name": "app", "namespaces": ["app"], "preferNewBalloons": True}]
    rig = make_rig(cfg=config(balloonTypes=types))
    pods = [rig.pod(n, {"c": 500}, namespace="app") for n in "abc"]
    assert [rig.where(c[1][0]) for c in pods] == ["app[0]", "app[1]", "app[2]"]
    rig.stop(pods[1][0], pods[1][1][0])
    _, (d,) = rig.pod("d", {"c": 500}, namespace="app")
    assert rig.where(d) == "app[1]"
    assert rig.names()[-3:] == ["app[0]", "app[2]", "app[1]"]  # appended to the list


def test_min_balloons_stay_when_empty() -> None:
    types = [{"name": "app", "namespaces": ["app"], "minBalloons": 1, "minCPUs": 1}]
    rig = make_rig(cfg=config(balloonTypes=types))
    pod, (a,) = rig.pod("a", {"c": 2500}, namespace="app")
    assert rig.balloon("app[0]").cpus.bit_count() == 3
    rig.stop(pod, a)
    assert rig.balloon("app[0]").cpus.bit_count() == 1  # back to minCPUs, kept


def test_a_refused_container_changes_nothing() -> None:
    types = [{"name": "big", "namespaces": ["big"]}]
    rig = make_rig(cfg=config(balloonTypes=types))
    rig.pod("a", {"c": 2000}, namespace="big")
    before = (rig.names(), rig.engine.free, rig.manager.describe())
    with pytest.raises(OperationFailedError, match="failed"):
        rig.pod("huge", {"c": 64000}, namespace="big")
    assert (rig.names(), rig.engine.free, rig.manager.describe()) == before


def test_cpu_shares_follow_the_request() -> None:
    rig = make_rig()
    _, c = rig.run("a", 1500)
    assert rig.ctr(c).resources.cpu_shares == 1536


def test_pin_cpu_off_sets_no_cpuset() -> None:
    rig = make_rig(cfg=config(pinCPU=False))
    _, c = rig.run("a", 1500)
    assert rig.cpus(c) is None
    assert rig.where(c) == "default[0]"  # still decided and counted
    assert rig.balloon("default[0]").cpus.bit_count() == 2
