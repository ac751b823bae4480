"""What a container asks of the topology-aware policy: its config defaults and annotations.

Annotation keys carry the ``.resource-policy.nri.io`` suffix and are looked up on the pod as
``KEY/container.NAME``, ``KEY/pod``, then ``KEY`` (see :mod:`nrirp.domain.model.annotations`).
Unusable values are reported (the container is still served with the default).
"""

from __future__ import annotations

import enum
from typing import TypeVar

import attrs

from nrirp.domain.config import BurstableLevel, CPUPriority, Duration, DurationError
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.model import (
    RESOURCE_POLICY_DOMAIN,
    AnnotationProblem,
    AnnotationReader,
    Container,
    Pod,
    QOSClass,
    effective_annotation,
    parse_bool,
    policy_key,
)
from nrirp.domain.policies.topology_aware.config_index import ConfigIndex
from nrirp.domain.policies.topology_aware.hint_limits import HintLimits
from nrirp.domain.topology import MemoryType

PREFER_ISOLATED = policy_key("prefer-isolated-cpus")
REQUIRE_ISOLATED = policy_key("require-isolated-cpus")
PREFER_SHARED = policy_key("prefer-shared-cpus")
PREFER_RESERVED = policy_key("prefer-reserved-cpus")
PREFER_PRIORITY = policy_key("prefer-cpu-priority")
MEMORY_TYPE = policy_key("memory-type")
COLD_START = policy_key("cold-start")
CPU_PRESERVE = policy_key("cpu.preserve")
MEMORY_PRESERVE = policy_key("memory.preserve")
HIDE_HYPERTHREADS = policy_key("hide-hyperthreads")
UNLIMITED_BURSTABLE = policy_key("unlimited-burstable")
SCHEDULING_CLASS = policy_key("scheduling-class")
CPU_CLASS = policy_key("cpu-class")
IRQ_AFFINITY = policy_key("irq-affinity")
STRICT_HINTS = policy_key("strict.topologyhints")
PICK_BY_HINTS = policy_key("pick-resources-by-hints")
RDT_CLASS = policy_key("rdtclass")
BLOCKIO_CLASS = policy_key("blockioclass")

PRIVILEGED = (PREFER_RESERVED, CPU_PRESERVE, MEMORY_PRESERVE)
"""Annotations ``privilegedAnnotations.allowedNamespaces`` may restrict (when ``true``)."""

_E = TypeVar("_E", bound=enum.Enum)


class CPUKind(enum.Enum):
    """How a container's CPUs are given (the ``topology-aware.kind`` tag)."""

    RESERVED = "reserved"
    SHARED = "shared"
    EXCLUSIVE = "exclusive"
    ISOLATED = "isolated"
    MIXED = "mixed"
    """Whole CPUs exclusively plus a fraction on the pool's shared CPUs."""
    PRESERVE = "preserve"
    """``cpu.preserve``: the container's CPUs are left alone."""


NORMAL_KINDS = frozenset({CPUKind.SHARED, CPUKind.EXCLUSIVE, CPUKind.ISOLATED, CPUKind.MIXED})
"""The reference's "normal" CPU type: every kind but reserved and preserve."""
ROOTED_KINDS = frozenset({CPUKind.RESERVED, CPUKind.PRESERVE})
"""Kinds whose grants live in the root (top) pool, as in the reference."""

_MEMORY_TYPE_NAMES = {
    "dram": frozenset({MemoryType.DRAM}),
    "pmem": frozenset({MemoryType.PMEM}),
    "hbm": frozenset({MemoryType.HBM}),
    "mixed": frozenset({MemoryType.DRAM, MemoryType.PMEM}),
}


@attrs.frozen
class CPURequest:
    """The CPU part of a request; ``shared`` is mCPU on shared (or reserved) CPUs."""

    kind: CPUKind
    full: int = 0
    shared: int = 0
    isolate: bool = False
    require_isolated: bool = False
    priority: CPUPriority = CPUPriority.NONE
    limit: int | None = None
    burstable: bool = False
    unlimited_level: BurstableLevel | None = None
    hide_hyperthreads: bool = False

    @property
    def wants_exclusive(self) -> bool:
        return self.full > 0


@attrs.frozen
class MemoryPrefs:
    """The memory part of a request; ``types`` is ``None`` for the default types.

    ``size`` is the request the allocator accounts (Guaranteed: the limit; Burstable: the
    estimate from the OOM score adjustment; BestEffort: 0); ``limit`` only steers the pool
    choice."""

    size: int
    limit: int | None
    types: frozenset[MemoryType] | None
    preserve: bool
    cold_start: float


@attrs.frozen
class Request:
    container_id: str
    label: str
    """``namespace/pod/container`` for messages."""
    pod_id: str
    qos: QOSClass
    namespace: str
    cpu: CPURequest
    memory: MemoryPrefs
    pin_cpu: bool
    pin_memory: bool
    strict_hints: bool
    pick_by_hints: bool
    hint_limits: HintLimits | None = None
    """With ``strict_hints``: where the grant's CPUs and memory must lie (the policy sets it
    from the container's topology hints)."""


def container_label(pod: Pod | None, container: Container) -> str:
    name = container.name or container.id
    if pod is None or not pod.name:
        return name
    return f"{pod.namespace}/{pod.name}/{name}"


def is_reserved_namespace(namespace: str, index: ConfigIndex) -> bool:
    """kube-system, or a namespace matching one of ``reservedPoolNamespaces`` (Go globs, as
    the reference matches them), looked up in the configuration's compiled set."""
    return index.reserved_namespaces.match(namespace)


def _privileged_bool(
    reader: PolicyAnnotations, key: str, index: ConfigIndex, namespace: str
) -> bool | None:
    """A privileged annotation's value; ``true`` where it is not allowed is reported and read
    as not given."""
    value = reader.get_optional_bool(key)
    if value and not index.privileged.allows(namespace):
        reader.problem(
            key,
            reader.raw(key) or "true",
            f"not allowed in namespace {namespace!r} "
            f"(privilegedAnnotations.allowedNamespaces: {index.privileged.describe()})",
        )
        return None
    return value


class PolicyAnnotations:
    """The reader, with a short cut for pods that carry no policy annotation at all (most):
    every lookup then answers the default without building keys."""

    def __init__(self, reader: AnnotationReader) -> None:
        self.reader = reader
        self.active = any(RESOURCE_POLICY_DOMAIN in key for key in reader.annotations)

    def raw(self, key: str) -> str | None:
        return self.reader.raw(key) if self.active else None

    def get_bool(self, key: str, default: bool = False) -> bool:
        return self.reader.get_bool(key, default) if self.active else default

    def get_optional_bool(self, key: str) -> bool | None:
        return self.reader.get_optional_bool(key) if self.active else None

    def problem(self, key: str, value: str, reason: str) -> None:
        self.reader.problems.append(AnnotationProblem(key, value, reason))


_NOTHING_TO_ISOLATE = {
    CPUKind.SHARED: "the container has no whole CPUs to isolate (BestEffort, Burstable or "
    "Guaranteed below 1 CPU): it runs on shared CPUs",
    CPUKind.RESERVED: "the container runs on the reserved CPUs",
    CPUKind.PRESERVE: "the container keeps the CPUs it has (cpu.preserve)",
}


def note_unused_isolation(reader: PolicyAnnotations, cpu: CPURequest) -> None:
    """``require-isolated-cpus: true`` where the request has no whole CPUs (so nothing to
    isolate) is reported as an annotation problem, not silently ignored. Only for pods with
    policy annotations; a malformed value is not read here (it is reported where read)."""
    if not reader.active or cpu.require_isolated:
        return
    why = _NOTHING_TO_ISOLATE.get(cpu.kind)
    if why is None:
        return
    inner = reader.reader
    found = effective_annotation(inner.annotations, REQUIRE_ISOLATED, inner.container_name)
    if found is None:
        return
    matched, value = found
    try:
        wanted = parse_bool(value)
    except ValueError:
        return
    if wanted:
        reader.problem(matched, value, why)


def _problem(reader: PolicyAnnotations, key: str, value: str, reason: str) -> None:
    reader.problem(key, value, reason)


def parse_memory_types(text: str) -> frozenset[MemoryType]:
    """``dram``, ``pmem``, ``hbm``, ``mixed`` (DRAM+PMEM) or a comma list of them."""
    out: set[MemoryType] = set()
    for item in text.split(","):
        name = item.strip().lower()
        if not name:
            continue
        types = _MEMORY_TYPE_NAMES.get(name)
        if types is None:
            raise ValueError(f"unknown memory type {name!r} (expected dram, pmem, hbm or mixed)")
        out |= types
    if not out:
        raise ValueError("no memory type given")
    return frozenset(out)


def parse_cold_start(text: str) -> float:
    """Seconds from ``duration: 30s`` (as YAML) or a plain Go duration ``30s``."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    if body.startswith("duration:"):
        body = body[len("duration:") :].strip()
    body = body.strip("'\"")
    try:
        duration = Duration.parse(body)
    except DurationError as exc:
        raise ValueError(str(exc)) from None
    if duration.nanoseconds < 0:
        raise ValueError("a negative cold-start duration")
    return duration.nanoseconds / 1e9


def _optional_bool(reader: PolicyAnnotations, key: str) -> bool | None:
    return reader.get_optional_bool(key)


def _enum_value(reader: PolicyAnnotations, key: str, enum_type: type[_E], default: _E) -> _E:
    raw = reader.raw(key)
    if raw is None:
        return default
    try:
        return enum_type(raw.strip().lower())
    except ValueError:
        names = ", ".join(str(m.value) for m in enum_type)
        _problem(reader, key, raw, f"expected one of {names}")
        return default


def build_request(
    spec: TopologyAwarePolicySpec,
    index: ConfigIndex,
    pod: Pod | None,
    container: Container,
    reader: PolicyAnnotations,
) -> Request:
    """The container's request as the policy will try to serve it (``index``: the compiled
    lookups of the configuration ``spec`` belongs to)."""
    qos = (pod.qos_class if pod is not None else None) or QOSClass.BURSTABLE
    namespace = pod.namespace if pod is not None else ""
    req = container.requirements
    cpu_preserve = bool(_privileged_bool(reader, CPU_PRESERVE, index, namespace))
    memory_preserve = bool(_privileged_bool(reader, MEMORY_PRESERVE, index, namespace))
    priority = _enum_value(reader, PREFER_PRIORITY, CPUPriority, spec.default_cpu_priority)
    hide = reader.get_bool(HIDE_HYPERTHREADS, False)
    cpu = _cpu_request(
        spec, index, qos, namespace, req.cpu_request, req.cpu_limit, reader, cpu_preserve
    )
    if priority is not CPUPriority.NONE or hide:
        cpu = attrs.evolve(cpu, priority=priority, hide_hyperthreads=hide)

    types: frozenset[MemoryType] | None = None
    raw_types = reader.raw(MEMORY_TYPE)
    if raw_types is not None:
        try:
            types = parse_memory_types(raw_types)
        except ValueError as exc:
            _problem(reader, MEMORY_TYPE, raw_types, str(exc))
    cold_start = 0.0
    raw_cold = reader.raw(COLD_START)
    if raw_cold is not None:
        try:
            cold_start = parse_cold_start(raw_cold)
        except ValueError as exc:
            _problem(reader, COLD_START, raw_cold, str(exc))
    # the request is accounted (for Burstable, kubelet's OOM score adjustment gives it away);
    # the limit only prefers pools that could hold it (scoring item 4)
    memory = MemoryPrefs(
        size=req.memory_request,
        limit=req.memory_limit,
        types=types,
        preserve=memory_preserve,
        cold_start=cold_start,
    )
    return Request(
        container_id=container.id,
        label=container_label(pod, container),
        pod_id=container.pod_id,
        qos=qos,
        namespace=namespace,
        cpu=cpu,
        memory=memory,
        pin_cpu=spec.pin_cpu and not cpu_preserve,
        pin_memory=spec.pin_memory and not memory_preserve,
        strict_hints=reader.get_bool(STRICT_HINTS, False),
        pick_by_hints=reader.get_bool(PICK_BY_HINTS, False),
    )


def _cpu_request(
    spec: TopologyAwarePolicySpec,
    index: ConfigIndex,
    qos: QOSClass,
    namespace: str,
    request: int,
    limit: int | None,
    reader: PolicyAnnotations,
    preserve: bool,
) -> CPURequest:
    if preserve:
        return CPURequest(CPUKind.PRESERVE, shared=request, limit=limit)
    prefer_reserved = _privileged_bool(reader, PREFER_RESERVED, index, namespace)
    if prefer_reserved is None:
        prefer_reserved = is_reserved_namespace(namespace, index)
    level: BurstableLevel | None = None
    if qos is QOSClass.BURSTABLE and limit is None:
        level = _enum_value(reader, UNLIMITED_BURSTABLE, BurstableLevel, spec.unlimited_burstable)
    if prefer_reserved:
        # as a shared request when the reserved CPUs cannot take it (the planner's fallback)
        return CPURequest(
            CPUKind.RESERVED,
            shared=request,
            limit=limit,
            burstable=qos is QOSClass.BURSTABLE,
            unlimited_level=level,
        )
    if qos is QOSClass.BESTEFFORT:
        return CPURequest(CPUKind.SHARED, shared=0)
    if qos is QOSClass.BURSTABLE:
        return CPURequest(
            CPUKind.SHARED, shared=request, limit=limit, burstable=True, unlimited_level=level
        )
    # Guaranteed
    full, fraction = divmod(request, 1000)
    if full == 0:
        return CPURequest(CPUKind.SHARED, shared=request, limit=limit)
    explicit_shared = _optional_bool(reader, PREFER_SHARED)
    explicit_isolated = _optional_bool(reader, PREFER_ISOLATED)
    require_isolated = reader.get_bool(REQUIRE_ISOLATED, False)
    if fraction == 0:
        prefer_shared = spec.prefer_shared_cpus if explicit_shared is None else explicit_shared
        if prefer_shared and not require_isolated:
            return CPURequest(CPUKind.SHARED, shared=request, limit=limit)
        if explicit_isolated is None:
            isolate = spec.prefer_isolated_cpus and full == 1
        else:
            isolate = explicit_isolated
        return CPURequest(
            CPUKind.EXCLUSIVE,
            full=full,
            isolate=isolate or require_isolated,
            require_isolated=require_isolated,
            limit=limit,
        )
    if full == 1:
        # 1 < request < 2: the whole CPU exclusive (isolated when preferred), the rest shared
        prefer_shared = spec.prefer_shared_cpus if explicit_shared is None else explicit_shared
        if prefer_shared and not require_isolated:
            return CPURequest(CPUKind.SHARED, shared=request, limit=limit)
        isolate = spec.prefer_isolated_cpus if explicit_isolated is None else explicit_isolated
    elif explicit_shared is False or require_isolated:
        # from 2 CPUs on, fractional requests share unless prefer-shared-cpus is false
        isolate = bool(explicit_isolated)
    else:
        return CPURequest(CPUKind.SHARED, shared=request, limit=limit)
    return CPURequest(
        CPUKind.MIXED,
        full=full,
        shared=fraction,
        isolate=isolate or require_isolated,
        require_isolated=require_isolated,
        limit=limit,
    )
