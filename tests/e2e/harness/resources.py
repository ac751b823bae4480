"""Kubernetes requests/limits turned into CRI Linux resources exactly as the kubelet does it.

Mirrors kubelet's ``calculateLinuxResources``, ``MilliCPUToShares``, ``milliCPUToQuota``,
``GetPodQOS`` and ``GetContainerOOMScoreAdjust`` (cgroupfs driver, CFS quota enabled, default
100 ms period), so the runtime and NRI plugins see what a real node would send them.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

from .quantity import parse_bytes, parse_milli_cpu

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
QUOTA_PERIOD_US = 100_000
MIN_QUOTA_US = 1000
GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000


class QOSClass(enum.Enum):
    """A pod's Kubernetes quality-of-service class."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BEST_EFFORT = "BestEffort"

    @property
    def cgroup_dir(self) -> str:
        """The kubelet's QoS cgroup below the node root ("" for Guaranteed pods)."""
        return {"Guaranteed": "", "Burstable": "burstable", "BestEffort": "besteffort"}[self.value]


Quantity = str | int


@attrs.frozen
class Resources:
    """One container's requests and limits: CPU in millicores, memory in bytes.

    ``None`` means "not given". Build with :meth:`of`, which also applies the API server's
    defaulting (a missing request defaults to the limit).
    """

    cpu_request: int | None = None
    cpu_limit: int | None = None
    memory_request: int | None = None
    memory_limit: int | None = None

    @classmethod
    def of(
        cls,
        requests: Mapping[str, Quantity] | None = None,
        limits: Mapping[str, Quantity] | None = None,
    ) -> Resources:
        """``Resources.of(requests={"cpu": "500m"}, limits={"cpu": "1", "memory": "64Mi"})``."""
        requests = dict(requests or {})
        limits = dict(limits or {})
        for kind, given in (("requests", requests), ("limits", limits)):
            unknown = set(given) - {"cpu", "memory"}
            if unknown:
                raise ValueError(f"unsupported resource(s) in {kind}: {sorted(unknown)}")

        def cpu(m: Mapping[str, Quantity]) -> int | None:
            return parse_milli_cpu(m["cpu"]) if "cpu" in m else None

        def mem(m: Mapping[str, Quantity]) -> int | None:
            return parse_bytes(m["memory"]) if "memory" in m else None

        cpu_limit, memory_limit = cpu(limits), mem(limits)
        cpu_request = cpu(requests) if "cpu" in requests else cpu_limit
        memory_request = mem(requests) if "memory" in requests else memory_limit
        for name, req, lim in (
            ("cpu", cpu_request, cpu_limit),
            ("memory", memory_request, memory_limit),
        ):
            if req is not None and lim is not None and req > lim:
                raise ValueError(f"{name} request {req} exceeds its limit {lim}")
        return cls(cpu_request, cpu_limit, memory_request, memory_limit)


@attrs.frozen
class LinuxResourceValues:
    """The numbers kubelet puts into CRI ``LinuxContainerResources``."""

    cpu_period: int
    cpu_quota: int
    cpu_shares: int
    memory_limit_in_bytes: int
    oom_score_adj: int
    cpuset_cpus: str = ""
    cpuset_mems: str = ""


def milli_cpu_to_shares(milli_cpu: int) -> int:
    """kubelet's ``MilliCPUToShares``: ``max(2, m*1024/1000)`` capped at 262144."""
    if milli_cpu == 0:
        return MIN_SHARES
    shares = milli_cpu * SHARES_PER_CPU // 1000
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD_US) -> int:
    """kubelet's ``milliCPUToQuota``: 0 (no quota) without a limit, else at least 1000 us."""
    if milli_cpu == 0:
        return 0
    return max(MIN_QUOTA_US, milli_cpu * period // 1000)


def pod_qos(containers: Iterable[Resources]) -> QOSClass:
    """kubelet's ``GetPodQOS`` over the pod's containers (cpu and memory only)."""
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for res in containers:
        for name, value in (("cpu", res.cpu_request), ("memory", res.memory_request)):
            if value:
                requests[name] = requests.get(name, 0) + value
        found = set()
        for name, value in (("cpu", res.cpu_limit), ("memory", res.memory_limit)):
            if value:
                limits[name] = limits.get(name, 0) + value
                found.add(name)
        if found != {"cpu", "memory"}:
            guaranteed = False
    if not requests and not limits:
        return QOSClass.BEST_EFFORT
    if (
        guaranteed
        and len(requests) == len(limits)
        and all(limits.get(name) == value for name, value in requests.items())
    ):
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


def oom_score_adj(qos: QOSClass, memory_request: int | None, memory_capacity: int) -> int:
    """kubelet's ``GetContainerOOMScoreAdjust`` for a non-critical pod."""
    if qos is QOSClass.GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos is QOSClass.BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    adjust = 1000 - (1000 * (memory_request or 0)) // memory_capacity
    if adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adjust == BEST_EFFORT_OOM_SCORE_ADJ:
        return adjust - 1
    return adjust


def linux_resources(
    res: Resources,
    qos: QOSClass,
    memory_capacity: int,
    *,
    cpuset_cpus: str = "",
    cpuset_mems: str = "",
) -> LinuxResourceValues:
    """kubelet's ``calculateLinuxResources`` plus the container's OOM score adjustment."""
    return LinuxResourceValues(
        cpu_period=QUOTA_PERIOD_US,
        cpu_quota=milli_cpu_to_quota(res.cpu_limit or 0),
        cpu_shares=milli_cpu_to_shares(res.cpu_request or 0),
        memory_limit_in_bytes=res.memory_limit or 0,
        oom_score_adj=oom_score_adj(qos, res.memory_request, memory_capacity),
        cpuset_cpus=cpuset_cpus,
        cpuset_mems=cpuset_mems,
    )


def pod_totals(containers: Iterable[Resources]) -> Resources:
    """The pod-level sums kubelet passes as the sandbox's resources (no overhead)."""

    def total(values: list[int | None]) -> int | None:
        given = [v for v in values if v is not None]
        return sum(given) if given else None

    items = list(containers)
    return Resources(
        cpu_request=total([r.cpu_request for r in items]),
        cpu_limit=total([r.cpu_limit for r in items]),
        memory_request=total([r.memory_request for r in items]),
        memory_limit=total([r.memory_limit for r in items]),
    )


def pod_cgroup_parent(qos: QOSClass, pod_uid: str, node_root: str = "kubepods") -> str:
    """The pod cgroup the kubelet's cgroupfs driver uses, e.g. ``/kubepods/burstable/pod<uid>``."""
    parts = [node_root, qos.cgroup_dir, f"pod{pod_uid}"]
    return "/" + "/".join(p for p in parts if p)
