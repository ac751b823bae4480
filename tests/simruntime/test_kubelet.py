"""Kubernetes requests/limits -> what kubelet asks the runtime for."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.model.shares import millis_from_shares
from nrirp.simruntime import InvalidRequest, QOSClass, Resources
from nrirp.simruntime.kubelet import (
    CgroupDriver,
    cgroups_path,
    linux_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    oom_score_adj,
    pod_cgroup_parent,
    pod_qos,
    pod_totals,
)

GIB = 1 << 30


def test_quantities_and_defaulting() -> None:
    res = Resources.of(requests={"cpu": "250m"}, limits={"cpu": 1.5, "memory": "64Mi"})
    assert (res.cpu_request, res.cpu_limit) == (250, 1500)
    assert res.memory_request == res.memory_limit == 64 << 20  # request defaults to the limit
    res = Resources.of(limits={"cpu": "2", "hugepages-2Mi": "8Mi"})
    assert res.cpu_request == 2000 and res.hugepage_limits == {"2Mi": 8 << 20}


@pytest.mark.parametrize(
    ("cpu", "millis"),
    [("500m", 500), ("1", 1000), ("1.5", 1500), ("0.1", 100), (2, 2000), ("1k", 1_000_000)],
)
def test_cpu_quantities_in_millicores(cpu: str | int, millis: int) -> None:
    assert Resources.of(limits={"cpu": cpu}).cpu_limit == millis


@pytest.mark.parametrize(
    ("memory", "size"),
    [("64Mi", 64 << 20), ("1G", 10**9), ("1.5Ki", 1536), ("100", 100), (4096, 4096)],
)
def test_memory_quantities_in_bytes(memory: str | int, size: int) -> None:
    assert Resources.of(limits={"memory": memory}).memory_limit == size


@pytest.mark.parametrize("bad", ["", "abc", "1x", "1Mii"])
def test_malformed_quantities_are_refused(bad: str) -> None:
    for name in ("cpu", "memory"):
        with pytest.raises(InvalidRequest, match=f"limits.{name}: invalid quantity"):
            Resources.of(limits={name: bad})


@pytest.mark.parametrize(
    ("requests", "limits", "error"),
    [
        ({"cpu": "abc"}, {}, "requests.cpu: invalid quantity 'abc'"),
        ({"cpu": "-1"}, {}, "requests.cpu: negative quantity '-1'"),
        ({"gpu": "1"}, {}, "requests.gpu: unsupported resource"),
        ({"cpu": "2"}, {"cpu": "1"}, "requests.cpu 2000 exceeds limits.cpu 1000"),
        ({}, {"memory": True}, "limits.memory: invalid quantity True"),
    ],
)
def test_bad_resources_are_refused_clearly(
    requests: dict[str, object], limits: dict[str, object], error: str
) -> None:
    with pytest.raises(InvalidRequest) as refused:
        Resources.of(requests, limits)  # type: ignore[arg-type]
    assert error in str(refused.value)


@pytest.mark.parametrize(
    ("containers", "qos"),
    [
        ([Resources()], QOSClass.BESTEFFORT),
        ([Resources.of(limits={"cpu": "1", "memory": "1Gi"})], QOSClass.GUARANTEED),
        ([Resources.of(limits={"cpu": "1"})], QOSClass.BURSTABLE),
        (
            [Resources.of(limits={"cpu": "1", "memory": "1Gi"}), Resources()],
            QOSClass.BURSTABLE,
        ),
        (
            [Resources.of(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"})],
            QOSClass.BURSTABLE,
        ),
        ([], QOSClass.BESTEFFORT),
    ],
)
def test_pod_qos_as_kubelet_decides(containers: list[Resources], qos: QOSClass) -> None:
    assert pod_qos(containers) is qos


def test_cpu_settings() -> None:
    assert milli_cpu_to_shares(0) == 2
    assert milli_cpu_to_shares(1) == 2
    assert milli_cpu_to_shares(250) == 256
    assert milli_cpu_to_shares(10**9) == 262144
    assert milli_cpu_to_quota(0) == 0
    assert milli_cpu_to_quota(5) == 1000
    assert milli_cpu_to_quota(1500) == 150_000


@given(st.integers(0, 10**7))
def test_shares_follow_kubelet_formula(millis: int) -> None:
    shares = milli_cpu_to_shares(millis)
    assert shares == min(262144, max(2, millis * 1024 // 1000))
    assert milli_cpu_to_shares(millis + 1) >= shares


@given(st.integers(0, 10**7))
def test_quota_follows_kubelet_formula(millis: int) -> None:
    quota = milli_cpu_to_quota(millis)
    assert quota == (0 if millis == 0 else max(1000, millis * 100))
    assert millis == 0 or milli_cpu_to_quota(millis + 1) >= quota


@given(
    st.lists(
        st.builds(
            Resources,
            cpu_request=st.none() | st.integers(1, 4000),
            memory_request=st.none() | st.integers(1, GIB),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_pods_without_limits_are_never_guaranteed(containers: list[Resources]) -> None:
    qos = pod_qos(containers)
    assert qos is not QOSClass.GUARANTEED
    requested = any(c.cpu_request or c.memory_request for c in containers)
    assert (qos is QOSClass.BESTEFFORT) == (not requested)


def test_linux_resources_carry_what_containerd_sets() -> None:
    besteffort = linux_resources(Resources())
    assert besteffort.cpu.shares.value == 2 and besteffort.cpu.period.value == 100_000
    assert not besteffort.cpu.HasField("quota")
    assert not besteffort.memory.HasField("limit")
    limited = linux_resources(
        Resources.of(limits={"cpu": "500m", "memory": "1Gi", "hugepages-1Gi": "2Gi"}),
        cpuset_cpus="0-1",
    )
    assert (limited.cpu.shares.value, limited.cpu.quota.value) == (512, 50_000)
    assert limited.memory.limit.value == GIB
    assert limited.cpu.cpus == "0-1"
    assert [(h.page_size, h.limit) for h in limited.hugepage_limits] == [("1GB", 2 * GIB)]


@pytest.mark.parametrize(
    ("qos", "request_bytes", "expected"),
    [
        (QOSClass.GUARANTEED, GIB, -997),
        (QOSClass.BESTEFFORT, None, 1000),
        (QOSClass.BURSTABLE, None, 999),  # 1000 is reserved for BestEffort
        (QOSClass.BURSTABLE, 32 * GIB, 500),
        (QOSClass.BURSTABLE, 64 * GIB, 3),  # floor: 1000 + the Guaranteed -997
    ],
)
def test_oom_score_adj(qos: QOSClass, request_bytes: int | None, expected: int) -> None:
    assert oom_score_adj(qos, request_bytes, 64 * GIB) == expected


@given(st.integers(0, 128 * GIB), st.integers(1, 128 * GIB))
def test_burstable_oom_score_stays_between_guaranteed_and_besteffort(
    request_bytes: int, capacity: int
) -> None:
    score = oom_score_adj(QOSClass.BURSTABLE, request_bytes, capacity)
    assert 3 <= score <= 999


@given(st.integers(3, 256_000))
def test_shares_round_trip_to_the_request(millis: int) -> None:
    # the domain recovers the request from the shares the simulated kubelet sends
    assert millis_from_shares(milli_cpu_to_shares(millis)) == millis


def test_cgroup_parents_and_paths_for_both_drivers() -> None:
    uid = "1234-ab"
    assert pod_cgroup_parent(QOSClass.GUARANTEED, uid) == "/kubepods/pod1234-ab"
    assert pod_cgroup_parent(QOSClass.BURSTABLE, uid) == "/kubepods/burstable/pod1234-ab"
    assert pod_cgroup_parent(QOSClass.BESTEFFORT, uid) == "/kubepods/besteffort/pod1234-ab"
    systemd = pod_cgroup_parent(QOSClass.BURSTABLE, uid, CgroupDriver.SYSTEMD)
    assert systemd == "kubepods-burstable-pod1234_ab.slice"
    assert pod_cgroup_parent(QOSClass.GUARANTEED, uid, CgroupDriver.SYSTEMD) == (
        "kubepods-pod1234_ab.slice"
    )
    assert cgroups_path(systemd, "c1", CgroupDriver.SYSTEMD) == (
        "kubepods-burstable-pod1234_ab.slice:cri-containerd:c1"
    )
    assert cgroups_path("/kubepods/pod1", "c1", CgroupDriver.CGROUPFS) == "/kubepods/pod1/c1"


def test_pod_totals_sum_what_is_given() -> None:
    totals = pod_totals(
        [Resources.of(requests={"cpu": "1"}), Resources.of(limits={"memory": "1Gi"}), Resources()]
    )
    assert (totals.cpu_request, totals.cpu_limit) == (1000, None)
    assert totals.memory_limit == GIB
