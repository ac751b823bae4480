"""Kubernetes requests/limits turned into what a kubelet sends its runtime.

Mirrors kubelet's ``GetPodQOS``, ``calculateLinuxResources`` (``MilliCPUToShares``,
``milliCPUToQuota``, CFS quota enabled with the default 100 ms period),
``calculateSandboxResources``, ``GetContainerOOMScoreAdjust`` for a non-critical pod, and the
pod cgroup parent of the cgroupfs
(``/kubepods/burstable/pod<uid>``) and systemd (``kubepods-burstable-pod<uid>.slice``) drivers.
The e2e harness's kubelet (``tests/e2e/harness/resources.py``) sends the same numbers to the
real containerd through CRI: this is the one implementation of that arithmetic.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

import attrs

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.config.quantity import Quantity, QuantityError
from nrirp.domain.model.qos import QOSClass
from nrirp.domain.model.shares import DEFAULT_CFS_PERIOD_US, MIN_QUOTA_US, shares_from_millis
from nrirp.simruntime.errors import InvalidRequest

MAX_SHARES = 262144
GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000
HUGEPAGES_PREFIX = "hugepages-"

QuantityValue = str | int | float
"""A Kubernetes quantity as written in a pod spec: ``"500m"``, ``"2"``, ``1.5``, ``"64Mi"``."""


class CgroupDriver(enum.Enum):
    """How the kubelet and the runtime name cgroups."""

    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


def _int_map(value: Mapping[str, int]) -> dict[str, int]:
    return dict(value)


def _quantity(kind: str, resource: str, value: QuantityValue) -> Quantity:
    try:
        if isinstance(value, bool):
            raise QuantityError(f"invalid quantity {value!r}")
        quantity = Quantity.parse(value) if isinstance(value, str) else Quantity.of(value)
    except QuantityError as exc:
        raise InvalidRequest(f"{kind}.{resource}: {exc}") from None
    if quantity.is_negative():
        raise InvalidRequest(f"{kind}.{resource}: negative quantity {value!r}")
    return quantity


@attrs.frozen
class Resources:
    """One container's requests and limits: CPU in millicores, memory and hugepages in bytes.

    ``None`` means "not given". :meth:`of` parses Kubernetes quantities and applies the API
    server's defaulting (a missing request defaults to the limit).
    """

    cpu_request: int | None = None
    cpu_limit: int | None = None
    memory_request: int | None = None
    memory_limit: int | None = None
    hugepage_limits: Mapping[str, int] = attrs.field(factory=dict, converter=_int_map)
    """Page size (``"2Mi"``, ``"1Gi"``) -> limit in bytes, from ``hugepages-<size>`` limits."""

    @classmethod
    def of(
        cls,
        requests: Mapping[str, QuantityValue] | None = None,
        limits: Mapping[str, QuantityValue] | None = None,
    ) -> Resources:
        """``Resources.of(requests={"cpu": "500m"}, limits={"cpu": 1, "memory": "64Mi"})``."""
        requests = dict(requests or {})
        limits = dict(limits or {})
        for kind, given in (("requests", requests), ("limits", limits)):
            for name in given:
                if name not in ("cpu", "memory") and not name.startswith(HUGEPAGES_PREFIX):
                    raise InvalidRequest(
                        f"{kind}.{name}: unsupported resource (expected cpu, memory, "
                        "hugepages-<size>)"
                    )

        def cpu(kind: str, given: Mapping[str, QuantityValue]) -> int | None:
            return _quantity(kind, "cpu", given["cpu"]).milli_value() if "cpu" in given else None

        def memory(kind: str, given: Mapping[str, QuantityValue]) -> int | None:
            if "memory" not in given:
                return None
            return _quantity(kind, "memory", given["memory"]).int_value()

        cpu_limit, memory_limit = cpu("limits", limits), memory("limits", limits)
        cpu_request = cpu("requests", requests) if "cpu" in requests else cpu_limit
        memory_request = memory("requests", requests) if "memory" in requests else memory_limit
        for name, request, limit in (
            ("cpu", cpu_request, cpu_limit),
            ("memory", memory_request, memory_limit),
        ):
            if request is not None and limit is not None and request > limit:
                raise InvalidRequest(f"requests.{name} {request} exceeds limits.{name} {limit}")
        hugepages: dict[str, int] = {}
        for name, value in limits.items():
            if name.startswith(HUGEPAGES_PREFIX):
                size = name.removeprefix(HUGEPAGES_PREFIX)
                _quantity("limits", name, size)  # the page size must be a quantity too
                hugepages[size] = _quantity("limits", name, value).int_value()
        return cls(cpu_request, cpu_limit, memory_request, memory_limit, hugepages)


def milli_cpu_to_shares(millis: int) -> int:
    """kubelet's ``MilliCPUToShares``: ``max(2, millis * 1024 // 1000)``, at most 262144."""
    return min(MAX_SHARES, shares_from_millis(millis))


def milli_cpu_to_quota(millis: int, period: int = DEFAULT_CFS_PERIOD_US) -> int:
    """kubelet's ``milliCPUToQuota``: 0 (no quota) without a limit, else at least 1000 µs."""
    if millis <= 0:
        return 0
    return max(MIN_QUOTA_US, millis * period // 1000)


def pod_qos(containers: Iterable[Resources]) -> QOSClass:
    """kubelet's ``GetPodQOS`` over the pod's containers (CPU and memory only)."""
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
        return QOSClass.BESTEFFORT
    if guaranteed and requests.keys() == limits.keys() and requests == limits:
        return QOSClass.GUARANTEED
    return QOSClass.BURSTABLE


def oom_score_adj(qos: QOSClass, memory_request: int | None, memory_capacity: int) -> int:
    """kubelet's ``GetContainerOOMScoreAdjust`` for a container of a non-critical pod."""
    if qos is QOSClass.GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos is QOSClass.BESTEFFORT:
        return BESTEFFORT_OOM_SCORE_ADJ
    adjust = 1000 - (1000 * (memory_request or 0)) // memory_capacity
    if adjust < 1000 + GUARANTEED_OOM_SCORE_ADJ:
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adjust == BESTEFFORT_OOM_SCORE_ADJ:
        return adjust - 1
    return adjust


def pod_totals(containers: Iterable[Resources]) -> Resources:
    """The pod-level sums kubelet passes as the sandbox's resources (no overhead)."""

    def total(values: list[int | None]) -> int | None:
        given = [v for v in values if v is not None]
        return sum(given) if given else None

    items = list(containers)
    hugepages: dict[str, int] = {}
    for res in items:
        for size, limit in res.hugepage_limits.items():
            hugepages[size] = hugepages.get(size, 0) + limit
    return Resources(
        cpu_request=total([r.cpu_request for r in items]),
        cpu_limit=total([r.cpu_limit for r in items]),
        memory_request=total([r.memory_request for r in items]),
        memory_limit=total([r.memory_limit for r in items]),
        hugepage_limits=hugepages,
    )


def linux_resources(
    res: Resources, *, cpuset_cpus: str = "", cpuset_mems: str = ""
) -> api_pb2.LinuxResources:
    """The NRI ``LinuxResources`` of a container, as containerd builds them from what kubelet's
    ``calculateLinuxResources`` sends: shares always, period always, quota only with a CPU
    limit, memory limit only when limited (containerd drops zero values)."""
    out = api_pb2.LinuxResources()
    cpu = out.cpu
    cpu.shares.value = milli_cpu_to_shares(res.cpu_request or 0)
    quota = milli_cpu_to_quota(res.cpu_limit or 0)
    if quota:
        cpu.quota.value = quota
    cpu.period.value = DEFAULT_CFS_PERIOD_US
    cpu.cpus = cpuset_cpus
    cpu.mems = cpuset_mems
    if res.memory_limit:
        out.memory.limit.value = res.memory_limit
    for size, limit in sorted(res.hugepage_limits.items()):
        out.hugepage_limits.add(page_size=_hugepage_size_label(size), limit=limit)
    return out


def _hugepage_size_label(size: str) -> str:
    """Kubernetes page size (``2Mi``) -> the runtime's label (``2MB``), as kubelet converts it."""
    try:
        value = Quantity.parse(size).int_value()
    except QuantityError:
        return size
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{unit}"
    return f"{value}B"


def pod_cgroup_parent(
    qos: QOSClass, pod_uid: str, driver: CgroupDriver = CgroupDriver.CGROUPFS
) -> str:
    """The pod cgroup kubelet hands the runtime as ``cgroup_parent``."""
    tier = {QOSClass.GUARANTEED: "", QOSClass.BURSTABLE: "burstable"}.get(qos, "besteffort")
    if driver is CgroupDriver.SYSTEMD:
        # systemd unit names cannot hold '-' inside a component: kubelet escapes it as '_'
        parts = ["kubepods", *([tier] if tier else []), f"pod{pod_uid.replace('-', '_')}"]
        return "-".join(parts) + ".slice"
    return "/" + "/".join(p for p in ("kubepods", tier, f"pod{pod_uid}") if p)


def cgroups_path(cgroup_parent: str, object_id: str, driver: CgroupDriver) -> str:
    """containerd's cgroups path of a container (or sandbox) under its pod's cgroup parent."""
    if driver is CgroupDriver.SYSTEMD:
        return f"{cgroup_parent}:cri-containerd:{object_id}"
    return f"{cgroup_parent.rstrip('/')}/{object_id}"
