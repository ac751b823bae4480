"""Kubernetes requests/limits -> what kubelet asks the runtime for (nrirp.domain.model.kubelet)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import LinuxResources
from nrirp.domain.model.kubelet import (
    CgroupDriver,
    InvalidSpec,
    QOSClass,
    Resources,
    cgroups_path,
    container_resources,
    millis_from_shares,
    oom_score_adj,
    pod_cgroup_parent,
    pod_qos,
    pod_totals,
    qos_from_cgroup_parent,
    qos_from_resources,
    quota_from_millis,
    shares_from_millis,
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
        with pytest.raises(InvalidSpec, match=f"limits.{name}: invalid quantity"):
            Resources.of(limits={name: bad})


@pytest.mark.parametrize(
    ("requests", "limits", "error"),
    [
        ({"cpu": "abc"}, {}, "requests.cpu: invalid quantity 'abc'"),
        ({"cpu": "-1"}, {}, "requests.cpu: negative quantity '-1'"),
        ({"gpu": "1"}, {}, "requests.gpu: unsupported resource"),
        # in the spec's own units, with what they amount to
        ({"cpu": "2"}, {"cpu": "1"}, "requests.cpu 2 (2000m) exceeds limits.cpu 1 (1000m)"),
        ({"cpu": 1.5}, {"cpu": "1"}, "requests.cpu 1.5 (1500m) exceeds limits.cpu 1 (1000m)"),
        ({"cpu": "1500m"}, {"cpu": "500m"}, "requests.cpu 1500m exceeds limits.cpu 500m"),
        (
            {"memory": "2Gi"},
            {"memory": "1Gi"},
            "requests.memory 2Gi (2147483648 bytes) exceeds limits.memory 1Gi (1073741824 bytes)",
        ),
        ({"memory": 2048}, {"memory": 1024}, "requests.memory 2048 exceeds limits.memory 1024"),
        ({}, {"memory": True}, "limits.memory: invalid quantity True"),
    ],
)
def test_bad_resources_are_refused_clearly(
    requests: dict[str, object], limits: dict[str, object], error: str
) -> None:
    with pytest.raises(InvalidSpec) as refused:
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
    assert shares_from_millis(0) == 2
    assert shares_from_millis(1) == 2
    assert shares_from_millis(250) == 256
    assert shares_from_millis(10**9) == 262144
    assert quota_from_millis(0) is None  # no limit, no quota
    assert quota_from_millis(5) == 1000
    assert quota_from_millis(1500) == 150_000


@given(st.integers(0, 10**7))
def test_shares_follow_kubelet_formula(millis: int) -> None:
    shares = shares_from_millis(millis)
    assert shares == min(262144, max(2, millis * 1024 // 1000))
    assert shares_from_millis(millis + 1) >= shares


@given(st.integers(0, 10**7))
def test_quota_follows_kubelet_formula(millis: int) -> None:
    quota = quota_from_millis(millis)
    assert quota == (None if millis == 0 else max(1000, millis * 100))
    assert quota is None or (quota_from_millis(millis + 1) or 0) >= quota


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


def test_container_resources_are_what_containerd_reports() -> None:
    besteffort = container_resources(Resources())
    assert besteffort == LinuxResources(cpu_shares=2, cpu_period=100_000)  # no quota, no limit
    limited = container_resources(
        Resources.of(limits={"cpu": "500m", "memory": "1Gi", "hugepages-1Gi": "2Gi"}),
        cpus=CPUSet.parse("0-1"),
    )
    assert (limited.cpu_shares, limited.cpu_quota, limited.cpu_period) == (512, 50_000, 100_000)
    assert limited.memory_limit == GIB
    assert limited.cpus == CPUSet.parse("0-1") and limited.mems is None
    assert dict(limited.hugepage_limits) == {"1GB": 2 * GIB}


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
    assert millis_from_shares(shares_from_millis(millis)) == millis


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


@given(
    st.sampled_from(list(QOSClass)),
    st.text("0123456789abcdef-", min_size=1, max_size=36),
    st.sampled_from(list(CgroupDriver)),
)
def test_cgroup_parents_parse_back_to_their_qos(
    qos: QOSClass, uid: str, driver: CgroupDriver
) -> None:
    assert qos_from_cgroup_parent(pod_cgroup_parent(qos, uid, driver)) is qos


@given(
    st.lists(
        st.builds(
            lambda cpu, memory: Resources.of(
                limits={
                    **({"cpu": f"{cpu}m"} if cpu else {}),
                    **({"memory": memory} if memory else {}),
                }
            ),
            st.none() | st.integers(3, 256_000),
            st.none() | st.integers(1, 64 * GIB),
        ),
        max_size=4,
    )
)
def test_the_qos_read_back_from_the_settings_is_kubelets(containers: list[Resources]) -> None:
    # limits only (requests default to them): what the settings show is all there is to see
    reported = [container_resources(c) for c in containers]
    assert qos_from_resources(reported) is pod_qos(containers)
