"""Balloons come and go with their containers: built-in types, sizing, inflating, deflating,
freeing, limits and names (reference-balloons.md §2, §3.4, §4). Machine: box-16 (2 packages,
NUMA nodes 0-3 of 4 CPUs, 2 threads per core, siblings adjacent).

Written with the test kit (``nrirp.testing``): pods from Kubernetes requests and limits, the
engine walking the lifecycle, balloons read from the policy's description."""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.pipeline import OperationFailedError
from nrirp.testing import EngineHarness, RunningPod, besteffort, burstable, pod

RESERVED = {"reservedResources": {"cpu": "750m"}}


def harness(**spec: Any) -> EngineHarness:
    return EngineHarness.build("balloons", machine="box-16", config=RESERVED | spec)


def run(h: EngineHarness, name: str, cpu: str, namespace: str = "default") -> RunningPod:
    """A pod with one Burstable container ``c`` requesting ``cpu``."""
    return h.run(pod(name, burstable("c", cpu), namespace=namespace))


def names(h: EngineHarness) -> list[str]:
    return [g.name for g in h.placement().groups]


def cpus(h: EngineHarness, balloon: str) -> CPUSet:
    return h.placement().group(balloon).cpus


def where(h: EngineHarness, running: RunningPod) -> str | None:
    return h.placement().container(running["c"].id).group


def free(h: EngineHarness) -> CPUSet:
    return CPUSet.parse(h.describe()["free"])


def test_builtin_balloons_exist_from_the_start() -> None:
    h = harness()
    assert names(h) == ["reserved[0]", "default[0]"]
    # 750m reserved: one CPU for the reserved balloon; default starts empty
    assert len(cpus(h, "reserved[0]")) == 1
    assert not cpus(h, "default[0]")
    assert len(free(h)) == 15


def test_user_types_get_their_cpus_first() -> None:
    # allocatorPriority high (the CRD default) is created before the built-ins (low)
    h = harness(balloonTypes=[{"name": "a", "minBalloons": 1, "minCPUs": 2}])
    assert names(h) == ["a[0]", "reserved[0]", "default[0]"]
    assert cpus(h, "a[0]") == CPUSet.parse("0-1")
    assert cpus(h, "reserved[0]") == CPUSet.parse("2")


def test_kube_system_and_reserved_namespaces_go_to_reserved() -> None:
    h = harness(reservedPoolNamespaces=["infra-*"])
    k = run(h, "k", "100m", namespace="kube-system")
    i = run(h, "i", "100m", namespace="infra-logs")
    assert where(h, k) == where(h, i) == "reserved[0]"
    assert h.cpus(k["c"]) == h.cpus(i["c"]) == cpus(h, "reserved[0]")


def test_balloon_inflates_and_deflates_with_its_containers() -> None:
    h = harness(balloonTypes=[{"name": "app", "namespaces": ["app"]}])
    a = run(h, "a", "1500m", namespace="app")
    assert len(cpus(h, "app[0]")) == 2  # ceil(1500m)
    b = run(h, "b", "700m", namespace="app")
    assert where(h, b) == "app[0]"
    assert len(cpus(h, "app[0]")) == 3  # ceil(2200m)
    assert h.cpus(a["c"]) == h.cpus(b["c"]) == cpus(h, "app[0]")
    h.delete(a.pod)
    assert len(cpus(h, "app[0]")) == 1  # ceil(700m)
    assert h.cpus(b["c"]) == cpus(h, "app[0]")
    freed, held = free(h), cpus(h, "app[0]")
    h.delete(b.pod)
    # no minBalloons: the empty balloon is deleted and its CPUs are free again
    assert names(h) == ["reserved[0]", "default[0]"]
    assert free(h) == freed | held


def test_best_effort_gets_one_cpu() -> None:
    h = harness()
    be = h.run(pod("be", besteffort("c")))
    assert where(h, be) == "default[0]"
    assert len(h.cpus(be["c"]) or ()) == 1


def test_min_and_max_cpus_clamp_the_size() -> None:
    h = harness(balloonTypes=[{"name": "app", "namespaces": ["app"], "minCPUs": 2, "maxCPUs": 3}])
    run(h, "a", "100m", namespace="app")
    assert len(cpus(h, "app[0]")) == 2  # at least minCPUs
    run(h, "b", "2", namespace="app")  # 2.1 CPUs: 3
    assert len(cpus(h, "app[0]")) == 3
    # 4.1 CPUs do not fit under maxCPUs: a second balloon
    c = run(h, "c", "2", namespace="app")
    assert where(h, c) == "app[1]"


def test_max_balloons_refuses_what_does_not_fit() -> None:
    types = [{"name": "app", "namespaces": ["app"], "maxCPUs": 2, "maxBalloons": 1}]
    h = harness(balloonTypes=types)
    run(h, "a", "1500m", namespace="app")
    with pytest.raises(OperationFailedError, match="no suitable app balloon instance available"):
        run(h, "b", "1", namespace="app")
    assert names(h) == ["reserved[0]", "default[0]", "app[0]"]


def test_new_balloons_take_the_smallest_free_index() -> None:
    h = harness(balloonTypes=[{"name": "app", "namespaces": ["app"], "preferNewBalloons": True}])
    pods = [run(h, n, "500m", namespace="app") for n in "abc"]
    assert [where(h, p) for p in pods] == ["app[0]", "app[1]", "app[2]"]
    h.delete(pods[1].pod)
    d = run(h, "d", "500m", namespace="app")
    assert where(h, d) == "app[1]"
    assert names(h)[-3:] == ["app[0]", "app[2]", "app[1]"]  # appended to the list


def test_min_balloons_stay_when_empty() -> None:
    types = [{"name": "app", "namespaces": ["app"], "minBalloons": 1, "minCPUs": 1}]
    h = harness(balloonTypes=types)
    a = run(h, "a", "2500m", namespace="app")
    assert len(cpus(h, "app[0]")) == 3
    h.delete(a.pod)
    assert len(cpus(h, "app[0]")) == 1  # back to minCPUs, kept


def test_a_refused_container_changes_nothing() -> None:
    h = harness(balloonTypes=[{"name": "big", "namespaces": ["big"]}])
    run(h, "a", "2", namespace="big")
    before = (names(h), free(h), h.describe())
    # the pipeline names the container; the policy's reason does not name it again
    with pytest.raises(
        OperationFailedError,
        match=r"^create-container container big/huge/c: no suitable big balloon instance",
    ):
        run(h, "huge", "64", namespace="big")
    assert (names(h), free(h), h.describe()) == before


def test_cpu_shares_follow_the_request() -> None:
    h = harness()
    a = run(h, "a", "1500m")
    assert h.container(a["c"]).resources.cpu_shares == 1536


def test_pin_cpu_off_sets_no_cpuset() -> None:
    h = harness(pinCPU=False)
    a = run(h, "a", "1500m")
    assert h.cpus(a["c"]) is None
    assert where(h, a) == "default[0]"  # still decided and counted
    assert len(cpus(h, "default[0]")) == 2
