"""kubelet's conversions between CPU millicores and cgroup CPU settings, and their inverses."""

from __future__ import annotations

MIN_SHARES = 2
SHARES_PER_CPU = 1024
MILLIS_PER_CPU = 1000
DEFAULT_CFS_PERIOD_US = 100_000
MIN_QUOTA_US = 1000


def shares_from_millis(millis: int) -> int:
    """kubelet's ``MilliCPUToShares``: ``max(2, millis * 1024 // 1000)``."""
    if millis <= 0:
        return MIN_SHARES
    return max(MIN_SHARES, millis * SHARES_PER_CPU // MILLIS_PER_CPU)


def millis_from_shares(shares: int) -> int:
    """CPU request in millicores from cgroup shares; the inverse of :func:`shares_from_millis`.

    ``ceil(shares * 1000 / 1024)`` recovers the exact request for every request above 2m; kubelet
    maps 0m..2m all to the minimum of 2 shares, which reads back as 0 (nothing requested).
    """
    if shares <= MIN_SHARES:
        return 0
    return -(-shares * MILLIS_PER_CPU // SHARES_PER_CPU)


def quota_from_millis(millis: int, period: int = DEFAULT_CFS_PERIOD_US) -> int:
    """kubelet's ``MilliCPUToQuota`` (at least 1000 µs); 0 millicores means no limit (-1)."""
    if millis <= 0:
        return -1
    return max(MIN_QUOTA_US, millis * period // MILLIS_PER_CPU)


def cpu_limit_millis(quota: int | None, period: int | None) -> int | None:
    """CPU limit in millicores from CFS quota/period; ``None`` when unlimited or unset."""
    if quota is None or quota <= 0:
        return None
    period = period if period and period > 0 else DEFAULT_CFS_PERIOD_US
    return -(-quota * MILLIS_PER_CPU // period)
