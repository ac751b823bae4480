from __future__ import annotations

from hypothesis import assume, given
from hypothesis import strategies as st

from nrirp.domain.model import (
    LinuxResources,
    QOSClass,
    Requirements,
    burstable_memory_request,
    cpu_limit_millis,
    estimate_requirements,
    millis_from_shares,
    quota_from_millis,
    shares_from_millis,
)

GiB = 1 << 30


def kubelet_shares(millis: int) -> int:
    """kubelet's MilliCPUToShares, written out independently."""
    if millis == 0:
        return 2
    shares = millis * 1024 // 1000
    return 2 if shares < 2 else min(shares, 262144)  # MinShares, MaxShares


def kubelet_burstable_oom_score_adj(request: int, capacity: int) -> int:
    adj = 1000 - (1000 * request) // capacity
    if adj < 3:
        return 3
    if adj == 1000:
        return 999
    return adj


@given(st.integers(min_value=0, max_value=1_000_000))
def test_shares_inverse_of_kubelet(millis: int) -> None:
    shares = kubelet_shares(millis)
    assert shares_from_millis(millis) == shares
    # kubelet maps 0m..2m to the minimum 2 shares: those read back as "nothing requested";
    # above 256 CPUs the shares stop at their maximum, which reads back as 256 CPUs
    assert millis_from_shares(shares) == (min(millis, 256_000) if millis > 2 else 0)


def test_shares_examples() -> None:
    assert millis_from_shares(1024) == 1000
    assert millis_from_shares(512) == 500
    assert millis_from_shares(102) == 100
    assert millis_from_shares(2) == 0


@given(
    st.integers(min_value=10, max_value=1_000_000),
    st.sampled_from([1_000, 10_000, 50_000, 100_000, 250_000, 1_000_000]),
)
def test_cpu_limit_inverse_of_kubelet_quota(millis: int, period: int) -> None:
    assume(millis * period // 1000 >= 1000)  # below that kubelet clamps the quota to 1000us
    quota = quota_from_millis(millis, period)
    assert cpu_limit_millis(quota, period) == millis


def test_cpu_limit_unlimited() -> None:
    assert cpu_limit_millis(None, None) is None
    assert cpu_limit_millis(-1, 100_000) is None
    assert cpu_limit_millis(0, 100_000) is None
    assert cpu_limit_millis(50_000, None) == 500  # default period


@given(
    st.integers(min_value=1 << 20, max_value=1 << 42),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_burstable_memory_request_inverts_oom_score(capacity: int, fraction: float) -> None:
    request = int(capacity * fraction)
    adj = kubelet_burstable_oom_score_adj(request, capacity)
    estimate = burstable_memory_request(adj, capacity)
    assert estimate <= request
    assert kubelet_burstable_oom_score_adj(estimate, capacity) == adj


def test_estimate_guaranteed() -> None:
    res = LinuxResources(cpu_shares=2048, cpu_quota=200_000, cpu_period=100_000, memory_limit=GiB)
    assert estimate_requirements(res, QOSClass.GUARANTEED) == Requirements(2000, 2000, GiB, GiB)


def test_estimate_burstable_from_oom_score() -> None:
    res = LinuxResources(cpu_shares=256, memory_limit=8 * GiB)
    capacity = 16 * GiB
    adj = kubelet_burstable_oom_score_adj(2 * GiB, capacity)  # 875
    req = estimate_requirements(
        res, QOSClass.BURSTABLE, oom_score_adj=adj, memory_capacity=capacity
    )
    assert req.cpu_request == 250
    assert req.cpu_limit is None
    assert req.memory_limit == 8 * GiB
    assert req.memory_request == 2 * GiB


def test_estimate_burstable_request_capped_by_limit() -> None:
    res = LinuxResources(cpu_shares=256, memory_limit=GiB)
    req = estimate_requirements(res, QOSClass.BURSTABLE, oom_score_adj=3, memory_capacity=16 * GiB)
    assert req.memory_request == GiB


def test_estimate_without_oom_score_or_besteffort() -> None:
    res = LinuxResources(cpu_shares=256, memory_limit=GiB)
    assert estimate_requirements(res, QOSClass.BURSTABLE).memory_request == 0
    be = estimate_requirements(LinuxResources(cpu_shares=2), QOSClass.BESTEFFORT)
    assert be == Requirements(0, None, 0, None)


@given(
    st.lists(
        st.tuples(
            st.sampled_from([None, 2, 102, 1024, 4096]),
            st.sampled_from([None, 50_000, 200_000]),
            st.sampled_from([None, 100_000]),
            st.sampled_from([None, 0, GiB, 3 * GiB]),
            st.sampled_from(list(QOSClass)),
            st.sampled_from([None, -997, 0, 500, 1000]),
            st.sampled_from([0, 8 * GiB]),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_estimate_remembered_per_object_is_the_estimate(
    calls: list[
        tuple[int | None, int | None, int | None, int | None, QOSClass, int | None, int, bool]
    ],
) -> None:
    """An estimate remembered for a resources object (asked again for the same object or a
    new equal one, with the same or other arguments) is the one worked out afresh."""
    from nrirp.domain.model.requirements import _estimate

    made: dict[tuple[int | None, ...], LinuxResources] = {}
    for shares, quota, period, memory, qos, oom, capacity, again in calls:
        fields = (shares, quota, period, memory)
        resources = made.get(fields) if again else None
        if resources is None:
            resources = made[fields] = LinuxResources(
                cpu_shares=shares, cpu_quota=quota, cpu_period=period, memory_limit=memory
            )
        got = estimate_requirements(resources, qos, oom_score_adj=oom, memory_capacity=capacity)
        assert got == _estimate(resources, qos, oom, capacity)
