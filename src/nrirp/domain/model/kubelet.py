"""kubelet's arithmetic, both ways: from requests and limits to cgroup settings and names, and
from what a runtime reports back to the requests and limits behind it.

Forward, what kubelet hands its runtime (``GetPodQOS``; ``calculateLinuxResources`` with
``MilliCPUToShares`` and ``milliCPUToQuota``, CFS quota on and the default 100 ms period;
``GetContainerOOMScoreAdjust`` for a non-critical pod; the pod cgroup of the cgroupfs
``/kubepods/burstable/pod<uid>`` and systemd ``kubepods-burstable-pod<uid>.slice`` drivers) and
containerd's cgroups path: :meth:`Resources.of`, :func:`pod_qos`, :func:`pod_totals`,
:func:`container_resources`, :func:`shares_from_millis`, :func:`quota_from_millis`,
:func:`oom_score_adj`, :func:`pod_cgroup_parent`, :func:`cgroups_path`.

Back, what the resource manager recovers from a runtime's report: :func:`millis_from_shares`,
:func:`cpu_limit_millis`, :func:`burstable_memory_request`, :func:`qos_from_cgroup_parent`,
:func:`qos_from_resources`.

"No limit" is ``None`` both ways: no CPU limit gives no quota (``quota_from_millis`` returns
``None``), and a quota that is unset, 0 or negative (-1 is how runtimes write "max") reads back
as no limit. The simulated runtime, the embedding API and the e2e harness's kubelet all use this
module, so what they hand over is exactly what the resource manager reads back.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model.resources import LinuxResources

if TYPE_CHECKING:
    from nrirp.domain.config.quantity import Quantity

# The quantity parser is imported where it is used: nrirp.domain.config imports
# nrirp.domain.model, whose package imports this module.

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLIS_PER_CPU = 1000
DEFAULT_CFS_PERIOD_US = 100_000
MIN_QUOTA_US = 1000

# kubelet's OOM score adjustments (pkg/kubelet/qos/policy.go)
GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000
_MIN_BURSTABLE_OOM_SCORE_ADJ = 1000 + GUARANTEED_OOM_SCORE_ADJ  # 3
_MAX_BURSTABLE_OOM_SCORE_ADJ = BESTEFFORT_OOM_SCORE_ADJ - 1  # 999

HUGEPAGES_PREFIX = "hugepages-"

QuantityValue = str | int | float
"""A Kubernetes quantity as written in a pod spec: ``"500m"``, ``"2"``, ``1.5``, ``"64Mi"``."""


class QOSClass(enum.Enum):
    """Pod QoS class (kubelet's ``v1.PodQOSClass``)."""

    GUARANTEED = "Guaranteed"
    BURSTABLE = "Burstable"
    BESTEFFORT = "BestEffort"


class CgroupDriver(enum.Enum):
    """How the kubelet and the runtime name cgroups."""

    CGROUPFS = "cgroupfs"
    SYSTEMD = "systemd"


class InvalidSpec(ValueError):
    """Requests, limits or a pod spec that Kubernetes would refuse; the message names the field."""


def shares_from_millis(millis: int) -> int:
    """kubelet's ``MilliCPUToShares``: ``millis * 1024 // 1000``, within 2..262144."""
    if millis <= 0:
        return MIN_SHARES
    return min(MAX_SHARES, max(MIN_SHARES, millis * SHARES_PER_CPU // MILLIS_PER_CPU))


def millis_from_shares(shares: int) -> int:
    """CPU request in millicores from cgroup shares; the inverse of :func:`shares_from_millis`.

    ``ceil(shares * 1000 / 1024)`` recovers the exact request for every request above 2m (up to
    the 256 CPUs of the largest share value); kubelet maps 0m..2m all to the minimum of 2 shares,
    which reads back as 0 (nothing requested).
    """
    if shares <= MIN_SHARES:
        return 0
    return -(-shares * MILLIS_PER_CPU // SHARES_PER_CPU)


def quota_from_millis(millis: int | None, period: int = DEFAULT_CFS_PERIOD_US) -> int | None:
    """kubelet's ``milliCPUToQuota`` (at least 1000 µs); ``None`` (no quota) without a limit."""
    if millis is None or millis <= 0:
        return None
    return max(MIN_QUOTA_US, millis * period // MILLIS_PER_CPU)


def cpu_limit_millis(quota: int | None, period: int | None) -> int | None:
    """CPU limit in millicores from CFS quota/period; ``None`` when unlimited or unset."""
    if quota is None or quota <= 0:
        return None
    period = period if period and period > 0 else DEFAULT_CFS_PERIOD_US
    return -(-quota * MILLIS_PER_CPU // period)


def oom_score_adj(qos: QOSClass, memory_request: int | None, memory_capacity: int) -> int:
    """kubelet's ``GetContainerOOMScoreAdjust`` for a container of a non-critical pod."""
    if qos is QOSClass.GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos is QOSClass.BESTEFFORT:
        return BESTEFFORT_OOM_SCORE_ADJ
    adjust = 1000 - (1000 * (memory_request or 0)) // memory_capacity
    return min(max(adjust, _MIN_BURSTABLE_OOM_SCORE_ADJ), _MAX_BURSTABLE_OOM_SCORE_ADJ)


def burstable_memory_request(oom_score_adj: int, memory_capacity: int) -> int:
    """Invert kubelet's Burstable formula ``adj = 1000 - 1000 * request // capacity``.

    kubelet clamps the score into 3..999, so a score at either end only bounds the request;
    the estimate is the smallest request that yields the observed score.
    """
    adj = min(max(oom_score_adj, _MIN_BURSTABLE_OOM_SCORE_ADJ), _MAX_BURSTABLE_OOM_SCORE_ADJ)
    if adj >= _MAX_BURSTABLE_OOM_SCORE_ADJ:
        return 0
    # smallest r with (1000 * r) // capacity == 1000 - adj
    target = 1000 - adj
    return -(-target * memory_capacity // 1000)


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


def _tokens(cgroup_parent: str) -> list[str]:
    tokens: list[str] = []
    for component in cgroup_parent.split("/"):
        if component.endswith(".slice"):
            # systemd driver: kubepods-burstable-pod<uid>.slice
            tokens.extend(component[: -len(".slice")].split("-"))
        elif component:
            tokens.append(component)
    return tokens


def qos_from_cgroup_parent(cgroup_parent: str) -> QOSClass | None:
    """QoS class encoded in a pod's cgroup parent, or ``None`` if the path does not say.

    The inverse of :func:`pod_cgroup_parent` for both drivers, also under a custom cgroup root
    and for a full systemd path (``/kubepods.slice/kubepods-burstable.slice/...``).
    """
    head, _, last = cgroup_parent.rpartition("/")
    if last[:3].lower() == "pod" and not last.endswith(".slice"):
        # cgroupfs: the last component (pod<uid>) is a token of its own that says only "a
        # pod", so every pod under one parent has its class (a Synchronize reads hundreds)
        try:
            return _QOS_UNDER[head]
        except KeyError:
            qos = _qos_of(head + "/pod")
            if len(_QOS_UNDER) < 64:
                _QOS_UNDER[head] = qos
            return qos
    return _qos_of(cgroup_parent)


_QOS_UNDER: dict[str, QOSClass | None] = {}
"""The class of pods under a parent path (a few: kubepods, its besteffort and burstable)."""


def _qos_of(cgroup_parent: str) -> QOSClass | None:
    tokens = [t.lower() for t in _tokens(cgroup_parent)]
    if "kubepods" not in tokens:
        return None
    last = len(tokens) - 1 - tokens[::-1].index("kubepods")
    after = tokens[last + 1 :]
    if "besteffort" in after:
        return QOSClass.BESTEFFORT
    if "burstable" in after:
        return QOSClass.BURSTABLE
    if after and after[0].startswith("pod"):
        return QOSClass.GUARANTEED
    return None


def cgroups_path(cgroup_parent: str, object_id: str, driver: CgroupDriver) -> str:
    """containerd's cgroups path of a container (or sandbox) under its pod's cgroup parent."""
    if driver is CgroupDriver.SYSTEMD:
        return f"{cgroup_parent}:cri-containerd:{object_id}"
    return f"{cgroup_parent.rstrip('/')}/{object_id}"


def _int_map(value: Mapping[str, int]) -> dict[str, int]:
    return dict(value)


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
        """``Resources.of(requests={"cpu": "500m"}, limits={"cpu": 1, "memory": "64Mi"})``;
        raises :class:`InvalidSpec` naming the bad entry."""
        requests = dict(requests or {})
        limits = dict(limits or {})
        for kind, given in (("requests", requests), ("limits", limits)):
            for name in given:
                if name not in ("cpu", "memory") and not name.startswith(HUGEPAGES_PREFIX):
                    raise InvalidSpec(
                        f"{kind}.{name}: unsupported resource (expected cpu, memory, "
                        "hugepages-<size>)"
                    )

        def cpu(kind: str, given: Mapping[str, QuantityValue]) -> int | None:
            if "cpu" not in given:
                return None
            return _quantity(kind, "cpu", given["cpu"]).milli_value()

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
                raise InvalidSpec(
                    f"requests.{name} {_as_given(name, requests[name], request)} exceeds "
                    f"limits.{name} {_as_given(name, limits[name], limit)}"
                )
        hugepages: dict[str, int] = {}
        for name, value in limits.items():
            if name.startswith(HUGEPAGES_PREFIX):
                size = name.removeprefix(HUGEPAGES_PREFIX)
                _quantity("limits", name, size)  # the page size must be a quantity too
                hugepages[size] = _quantity("limits", name, value).int_value()
        return cls(cpu_request, cpu_limit, memory_request, memory_limit, hugepages)


def _as_given(resource: str, given: QuantityValue, value: int) -> str:
    """A quantity as the spec wrote it, with what it amounts to when that reads otherwise:
    ``2 (2000m)``, ``1Gi (1073741824 bytes)``, ``500m``."""
    text = given if isinstance(given, str) else str(given)
    if resource == "cpu":
        return text if text == f"{value}m" else f"{text} ({value}m)"
    return text if text == str(value) else f"{text} ({value} bytes)"


def _quantity(kind: str, resource: str, value: QuantityValue) -> Quantity:
    from nrirp.domain.config.quantity import Quantity, QuantityError

    try:
        if isinstance(value, bool):
            raise QuantityError(f"invalid quantity {value!r}")
        quantity = Quantity.parse(value) if isinstance(value, str) else Quantity.of(value)
    except QuantityError as exc:
        raise InvalidSpec(f"{kind}.{resource}: {exc}") from None
    if quantity.is_negative():
        raise InvalidSpec(f"{kind}.{resource}: negative quantity {value!r}")
    return quantity


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


def qos_from_resources(containers: Iterable[LinuxResources]) -> QOSClass:
    """QoS class from the containers' cgroup settings, as kubelet's ``GetPodQOS`` would decide.

    Requests/limits are recovered from the settings kubelet derives from them: CPU request from
    shares, CPU limit from quota/period, memory limit from the memory limit. BestEffort: nothing
    requested or limited; Guaranteed: every container has CPU and memory limits and its CPU request
    equals the limit; anything else is Burstable.
    """
    items = list(containers)
    if not items:
        return QOSClass.BESTEFFORT
    best_effort = True
    guaranteed = True
    for res in items:
        request = millis_from_shares(res.cpu_shares) if res.cpu_shares is not None else 0
        limit = cpu_limit_millis(res.cpu_quota, res.cpu_period)
        memory_limit = res.memory_limit if res.memory_limit and res.memory_limit > 0 else None
        if request or limit is not None or memory_limit is not None:
            best_effort = False
        if (
            limit is None
            or memory_limit is None
            or res.cpu_shares is None
            or res.cpu_shares <= MIN_SHARES
            or quota_from_millis(request, res.cpu_period or DEFAULT_CFS_PERIOD_US) != res.cpu_quota
        ):
            guaranteed = False
    if best_effort:
        return QOSClass.BESTEFFORT
    return QOSClass.GUARANTEED if guaranteed else QOSClass.BURSTABLE


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


def container_resources(
    res: Resources, *, cpus: CPUSet | None = None, mems: CPUSet | None = None
) -> LinuxResources:
    """The settings a runtime reports for a container kubelet created with ``res`` (and the
    cpuset CRI asked for): shares and period always, quota only with a CPU limit, the memory
    limit only when limited (containerd drops zero values), hugepage limits by the runtime's
    page-size label (``2MB``)."""
    hugepages: dict[str, int] = {}
    for size, limit in sorted(res.hugepage_limits.items()):
        hugepages[hugepage_size_label(size)] = limit
    return LinuxResources(
        cpu_shares=shares_from_millis(res.cpu_request or 0),
        cpu_quota=quota_from_millis(res.cpu_limit),
        cpu_period=DEFAULT_CFS_PERIOD_US,
        cpus=cpus,
        mems=mems,
        memory_limit=res.memory_limit or None,
        hugepage_limits=hugepages,
    )


def hugepage_size_label(size: str) -> str:
    """Kubernetes page size (``2Mi``) -> the runtime's label (``2MB``), as kubelet converts it."""
    from nrirp.domain.config.quantity import Quantity, QuantityError

    try:
        value = Quantity.parse(size).int_value()
    except QuantityError:
        return size
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{unit}"
    return f"{value}B"
