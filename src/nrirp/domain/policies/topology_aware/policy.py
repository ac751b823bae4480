"""The ``topology-aware`` policy: the Policy port over the allocation engine and the cache."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

from nrirp.domain.affinity import (
    COLOCATION_WEIGHT,
    AffinityError,
    affinity_weights,
    container_affinities,
)
from nrirp.domain.config import (
    ControlConfig,
    CPUResource,
    PolicyConfig,
    Quantity,
    ResourceConstraints,
    TopologyAwarePolicySpec,
)
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.assignment import NO_ASSIGNMENT, HostAssignment
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod
from nrirp.domain.policies.glob_notices import malformed_globs
from nrirp.domain.policies.topology_aware.allocations import Allocations
from nrirp.domain.policies.topology_aware.classes import (
    EXCLUSIVE_KINDS,
    Classes,
    check_cpu_class,
    choose_classes,
    default_cpu_class,
)
from nrirp.domain.policies.topology_aware.config_index import ConfigIndex, config_index
from nrirp.domain.policies.topology_aware.export import describe, metrics, topology_zones
from nrirp.domain.policies.topology_aware.grants import (
    TAG_CPU_CLASS,
    TAG_IRQ_AFFINITY,
    Grant,
    RestoreError,
    SavedGrant,
    saved_grant,
)
from nrirp.domain.policies.topology_aware.hint_limits import hint_limits
from nrirp.domain.policies.topology_aware.host import HostPlan, exported_resources
from nrirp.domain.policies.topology_aware.planner import Plan
from nrirp.domain.policies.topology_aware.pools import Pool
from nrirp.domain.policies.topology_aware.preferences import (
    CPUKind,
    PolicyAnnotations,
    Request,
    build_request,
    container_label,
    note_unused_isolation,
)
from nrirp.domain.policies.topology_aware.request_memo import RequestMemo, annotated
from nrirp.domain.policy import (
    MetricSample,
    PolicyContext,
    PolicyError,
    PolicyEvent,
    TopologyZone,
)
from nrirp.domain.policy.explanation import Explanation, Subject
from nrirp.domain.policy.settings import ContainerSettings
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.topology import MemoryType

COLD_START_DONE = "cold-start-done"
"""Event ending cold starts; ``data``: a container id or name, or ``None`` for every one."""

DEFAULT_RESERVED_CPU = "750m"


def default_spec() -> TopologyAwarePolicySpec:
    """The reference Helm chart's default: ``reservedResources: {cpu: 750m}``."""
    return TopologyAwarePolicySpec(
        reserved_resources=ResourceConstraints(
            cpu=CPUResource.of_amount(Quantity.parse(DEFAULT_RESERVED_CPU))
        )
    )


_RESTORE_ORDER = {
    CPUKind.ISOLATED: 0,
    CPUKind.EXCLUSIVE: 0,
    CPUKind.MIXED: 1,
    CPUKind.RESERVED: 2,
    CPUKind.SHARED: 3,
    CPUKind.PRESERVE: 4,
}


class TopologyAwarePolicy:
    """Hierarchical pools following the hardware; see docs/topology-aware.md."""

    name: ClassVar[str] = "topology-aware"
    description: ClassVar[str] = (
        "Pools that follow the hardware topology: exclusive, shared, isolated and reserved "
        "CPUs with aligned memory."
    )
    config_type: ClassVar[type[Any] | None] = TopologyAwarePolicySpec

    def __init__(self) -> None:
        self._ctx: PolicyContext | None = None
        self._spec: TopologyAwarePolicySpec = default_spec()
        self._control = ControlConfig()
        self._index = ConfigIndex.of(self._spec, self._control)
        self._cpu_allocator: CPUAllocator | None = None
        self._alloc: Allocations | None = None
        self._timers: dict[str, Any] = {}
        self._decisions: list[tuple[str, str]] = []
        self._host = HostPlan()
        self._requests = RequestMemo()

    # ================================================================== properties
    @property
    def allocations(self) -> Allocations:
        """The engine (for tests and tools)."""
        if self._alloc is None:
            raise PolicyError("topology-aware policy not started")
        return self._alloc

    @property
    def ctx(self) -> PolicyContext:
        if self._ctx is None:
            raise PolicyError("topology-aware policy not started")
        return self._ctx

    # ================================================================== lifecycle
    @staticmethod
    def prepare_config(config: PolicyConfig) -> None:
        """Compile the lookups of ``config`` ahead of a reconfigure (any thread)."""
        if isinstance(config.spec, TopologyAwarePolicySpec):
            config_index(config.spec, config.control, config.privileged_annotations)

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        spec, control, index = self._config_parts(config)
        self._ctx = ctx
        self._cpu_allocator = CPUAllocator(ctx.machine)
        alloc = Allocations(ctx.machine, spec, self._cpu_allocator)
        self._spec, self._control, self._index, self._alloc = spec, control, index, alloc
        self._host.reset()
        data = ctx.cache.policy_data(self.name) or {}
        deadlines = _deadlines(data)
        entries = [(c, saved_grant(c.tags)) for c in ctx.cache.active_containers()]
        self._readmit(alloc, entries, deadlines=deadlines, strict=False)
        self._apply()
        self._announce(spec)

    def _announce(self, spec: TopologyAwarePolicySpec) -> None:
        """Say once per configuration what of it can match nothing."""
        for line in malformed_globs("reservedPoolNamespaces", spec.reserved_pool_namespaces):
            self.ctx.notice(line)

    def reconfigure(self, config: PolicyConfig) -> None:
        spec, control, index = self._config_parts(config)
        old = self.allocations
        assert self._cpu_allocator is not None
        alloc = Allocations(self.ctx.machine, spec, self._cpu_allocator)
        cache = self.ctx.cache
        entries: list[tuple[Container, SavedGrant | None]] = []
        deadlines: dict[str, float] = {}
        # in cache order, as at a restart, so that both take containers over alike
        for ctr in cache.active_containers():
            grant = old.grants.get(ctr.id)
            if grant is None:
                continue
            entries.append((ctr, _saved_of(grant)))
            if grant.cold_start_until is not None:
                deadlines[ctr.id] = grant.cold_start_until
        prev = (self._spec, self._control, self._index, self._alloc)
        self._spec, self._control, self._index, self._alloc = spec, control, index, alloc
        granted = self._host.snapshot()
        self._host.reset()
        try:
            self._readmit(alloc, entries, deadlines=deadlines, strict=True)
        except Exception:
            self._spec, self._control, self._index, self._alloc = prev
            self._host.reset(granted)
            raise
        alloc.mark_all_dirty()
        self._apply()
        self._announce(spec)

    def _config_parts(
        self, config: PolicyConfig | None
    ) -> tuple[TopologyAwarePolicySpec, ControlConfig, ConfigIndex]:
        """The spec, the control block and their lookups compiled (once per config)."""
        if config is None:
            spec, control = default_spec(), ControlConfig()
            return spec, control, config_index(spec, control, None)
        if config.policy != self.name or not isinstance(config.spec, TopologyAwarePolicySpec):
            raise PolicyError(f"topology-aware policy cannot use a {config.policy!r} configuration")
        index = config_index(config.spec, config.control, config.privileged_annotations)
        return config.spec, config.control, index

    def _readmit(
        self,
        alloc: Allocations,
        entries: Sequence[tuple[Container, SavedGrant | None]],
        *,
        deadlines: Mapping[str, float],
        strict: bool,
    ) -> None:
        """Take containers over into ``alloc``: every grant that can be kept as saved first
        (exclusive and isolated, mixed, reserved, shared), then the others anew in the same
        order, so a container that must move never takes what another could have kept."""
        ordered = sorted(
            enumerate(entries),
            key=lambda e: (
                _RESTORE_ORDER[e[1][1].kind] if e[1][1] is not None else 9,
                e[0],
            ),
        )
        now = self.ctx.clock.now()
        anew: list[tuple[Container, Pod | None, Request, Classes, float | None, str]] = []
        for _, (ctr, saved) in ordered:
            pod = self.ctx.cache.pod(ctr.pod_id)
            deadline = deadlines.get(ctr.id)
            if deadline is not None and deadline <= now:
                deadline = None
            try:
                request, classes = self._request(pod, ctr)
            except PolicyError as exc:
                self._unplaced(ctr, pod, exc, strict=strict)
                continue
            if saved is None:
                anew.append((ctr, pod, request, classes, deadline, ""))
                continue
            try:
                grant = alloc.restore(request, saved, cold_start_until=deadline)
            except RestoreError as exc:
                anew.append((ctr, pod, request, classes, deadline, str(exc)))
                continue
            self._readmitted(ctr, grant, classes, deadline, now)
        for ctr, pod, request, classes, deadline, why in anew:
            try:
                plan = self._plan(alloc, request, pod, ctr, prefer=None, classes=classes)
                check_cpu_class(classes, plan.kind)
                grant = alloc.commit(plan, cold_start_until=deadline)
            except PolicyError as exc:
                self._unplaced(ctr, pod, exc, strict=strict)
                continue
            if why:
                self.ctx.notice(f"{request.label}: {why}; now {_reason(grant)}", container=ctr)
                self._decisions.append((ctr.id, f"re-placed ({why}): {_reason(grant)}"))
            self._readmitted(ctr, grant, classes, deadline, now)

    def _readmitted(
        self, ctr: Container, grant: Grant, classes: Classes, deadline: float | None, now: float
    ) -> None:
        self._decorate(ctr, grant, classes, initial=False)
        if deadline is not None:
            self._schedule_cold_start(ctr.id, deadline - now)

    def _unplaced(self, ctr: Container, pod: Pod | None, exc: PolicyError, *, strict: bool) -> None:
        """A container readmission could not place: refuse (reconfigure) or report (start)."""
        label = container_label(pod, ctr)
        why = str(exc)
        if strict:
            raise PolicyError(f"cannot keep {label}: {why}") from None
        self.ctx.notice(f"{label} left as it is: {why}", container=ctr, severity=Severity.ERROR)

    # ================================================================== containers
    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        alloc = self.allocations
        for ctr in removed:
            self._release(ctr.id)
        for ctr in added:
            if ctr.id in alloc.grants:
                self._release(ctr.id)
            try:
                self._admit(ctr, initial=ctr.state is ContainerState.CREATING)
            except PolicyError as exc:
                self.ctx.notice(
                    f"cannot allocate {self._label(ctr)}: {exc}",
                    container=ctr,
                    severity=Severity.ERROR,
                )
        self._apply()

    def allocate(self, container: Container) -> None:
        # a container created again replaces its grant; if it cannot, it keeps the old one
        with self.allocations.resizing(container.id):
            self._admit(container, initial=True)
        self._apply()

    def release(self, container: Container) -> None:
        self._release(container.id)
        self._apply()

    def update(self, container: Container, resources: LinuxResources) -> None:
        with self.allocations.resizing(container.id) as old:
            self._admit(container, initial=False, previous=old)
        self._apply()

    def _label(self, container: Container) -> str:
        return container_label(self.ctx.cache.pod(container.pod_id), container)

    def _release(self, container_id: str) -> None:
        self.allocations.release(container_id)
        self._host.released(container_id)
        handle = self._timers.pop(container_id, None)
        if handle is not None:
            handle.cancel()

    def _request(self, pod: Pod | None, container: Container) -> tuple[Request, Classes]:
        if pod is None or annotated(pod):
            return self._worked_out(pod, container)
        found = self._requests.get(self._index, pod, container)
        if found is None:
            request, classes = self._worked_out(pod, container)
            self._requests.put(self._index, pod, container, request, classes)
            return request, classes
        return found

    def _worked_out(self, pod: Pod | None, container: Container) -> tuple[Request, Classes]:
        reader = PolicyAnnotations(self.ctx.annotations(container))
        request = build_request(self._spec, self._index, pod, container, reader)
        note_unused_isolation(reader, request.cpu)
        if request.strict_hints:
            hints = list(self.ctx.topology_hints(container).values())
            limits = hint_limits(hints, self.ctx.machine)
            request = attrs.evolve(request, hint_limits=limits)
        classes = choose_classes(
            self._spec,
            self._control,
            namespace=request.namespace,
            qos=request.qos,
            reader=reader,
            index=self._index,
        )
        return request, classes

    def _plan(
        self,
        alloc: Allocations,
        request: Request,
        pod: Pod | None,
        container: Container,
        *,
        prefer: Pool | None,
        classes: Classes | None = None,
    ) -> Plan:
        hints = list(self.ctx.topology_hints(container).values())
        weighted = self._affinity(alloc, pod, container)
        class_cpus = self._class_cpus(request, classes)
        return alloc.plan(
            request, hints=hints, weighted=weighted, prefer=prefer, class_cpus=class_cpus
        )

    def _class_cpus(self, request: Request, classes: Classes | None) -> CPUSet | None:
        """Where the CPU class of an exclusive request takes effect on this host, when that
        is not every CPU (scoring item 8): the ``cpu-class`` annotation's class, else
        ``defaultExclusiveCPUClass``."""
        if request.cpu.kind not in EXCLUSIVE_KINDS:
            return None
        name = (classes.cpu_class if classes is not None else None) or (
            self._spec.default_exclusive_cpu_class
        )
        if name is None:
            return None
        support = self.ctx.cpu_class_support(name)
        if support is None or self.ctx.machine.online <= support:
            return None
        return support

    def _affinity(
        self, alloc: Allocations, pod: Pod | None, container: Container
    ) -> list[tuple[Pool, int]]:
        """Pools weighted by the containers this one has affinity (or anti-affinity) to.

        colocatePods / colocateNamespaces come from per-pool counts the engine keeps, so they
        cost nothing per running container; annotated affinities match containers one by one.
        """
        weighted: list[tuple[Pool, int]] = []
        if self._spec.colocate_pods:
            weighted += alloc.colocated_pools(("pod", container.pod_id), COLOCATION_WEIGHT)
        if pod is None:
            return weighted
        if self._spec.colocate_namespaces:
            weighted += alloc.colocated_pools(("namespace", pod.namespace), COLOCATION_WEIGHT)
        try:
            affinities = container_affinities(pod, container, self.ctx.annotation_parser)
        except AffinityError as exc:
            self.ctx.notice(f"affinity ignored: {exc}", container=container)
            return weighted
        if affinities:
            weights = affinity_weights(self.ctx.cache, container, affinities)
            grants = alloc.grants
            weighted += [(grants[cid].pool, w) for cid, w in weights.items() if cid in grants]
        return weighted

    def _admit(
        self,
        container: Container,
        *,
        initial: bool,
        previous: Grant | None = None,
    ) -> Grant:
        """Plan and commit a grant; ``previous``: the old grant of a resize, out of the
        accounting (:meth:`Allocations.resizing`): its pool and CPUs are kept when the new
        request still fits them, else its pool is preferred."""
        alloc = self.allocations
        pod = self.ctx.cache.pod(container.pod_id)
        request, classes = self._request(pod, container)
        plan = alloc.plan_keeping(request, previous) if previous is not None else None
        if plan is None:
            prefer = previous.pool if previous is not None else None
            plan = self._plan(alloc, request, pod, container, prefer=prefer, classes=classes)
        check_cpu_class(classes, plan.kind)
        deadline: float | None = None
        delay = 0.0
        if previous is not None:
            deadline = previous.cold_start_until
        elif request.memory.cold_start > 0 and plan.memory is not None:
            pmem = alloc.typed_nodes(frozenset({MemoryType.PMEM}))
            if plan.memory.nodes & pmem and MemoryType.PMEM in plan.types:
                delay = request.memory.cold_start
                deadline = self.ctx.clock.now() + delay
        grant = alloc.commit(plan, cold_start_until=deadline)
        self._decorate(container, grant, classes, initial=initial)
        if delay > 0:
            self._schedule_cold_start(container.id, delay)
        self._decisions.append((container.id, _reason(grant)))
        return grant

    def _decorate(
        self,
        container: Container,
        grant: Grant,
        classes: Classes,
        *,
        initial: bool,
    ) -> None:
        """Settings beside cpus and mems: classes, scheduling, IRQ tag. The CPU class goes
        to the host controller only when it differs from the one last asked (tagged)."""
        cache = self.ctx.cache
        cid = container.id
        if initial and (classes.scheduling is not None or classes.io_priority is not None):
            cache.set_scheduling(cid, classes.scheduling, classes.io_priority)
        cpu_class = classes.cpu_class or default_cpu_class(self._spec, grant.kind)
        exclusive = grant.exclusive if grant.kind in EXCLUSIVE_KINDS else CPUSet()
        self._host.granted(cid, cpu_class, exclusive)  # CPU classes go per CPU: host_assignment
        if cpu_class is not None:
            current = cache.container(cid)
            if current is None or current.tags.get(TAG_CPU_CLASS) != cpu_class:
                cache.set_tags(cid, **{TAG_CPU_CLASS: cpu_class})
        if classes.rdt_class is not None:
            cache.set_rdt_class(cid, classes.rdt_class)
        if classes.blockio_class is not None:
            cache.set_blockio_class(cid, classes.blockio_class)
        if classes.irq_affinity is not None:
            cache.set_tags(cid, **{TAG_IRQ_AFFINITY: classes.irq_affinity})

    def _schedule_cold_start(self, container_id: str, delay: float) -> None:
        old = self._timers.pop(container_id, None)
        if old is not None:
            old.cancel()
        event = PolicyEvent(COLD_START_DONE, self.name, container_id)
        try:
            self._timers[container_id] = self.ctx.schedule_event(max(delay, 0.0), event)
        except Exception as exc:  # no timers wired: the event must be injected by hand
            grant = self.allocations.grants.get(container_id)
            label = grant.label if grant is not None else container_id
            self.ctx.notice(
                f"cold start of {label} ends only on a {COLD_START_DONE!r} event: {exc}",
                severity=Severity.WARNING,
            )

    # ================================================================== apply
    def _apply(self) -> None:
        """Push what changed in the engine into the cache (cpus, mems, tags)."""
        alloc = self.allocations
        cache = self.ctx.cache
        flush = alloc.flush()
        tags_of = {g.container_id: g.tags() for g in flush.tagged}
        moved: list[str] = []
        changes: dict[tuple[CPUSet | None, CPUSet | None], LinuxResources] = {}
        for cid in dict.fromkeys([*flush.cpus, *flush.mems, *tags_of]):
            ctr = cache.container(cid)
            if ctr is None:
                continue
            cpus = flush.cpus.get(cid)
            if cpus is not None and cpus == ctr.cpus:
                cpus = None
            mems = flush.mems.get(cid)
            if mems is not None and mems == ctr.mems:
                mems = None
            tags = tags_of.get(cid)
            if tags is not None and tags.items() <= ctr.tags.items():  # every tag as it is
                tags = None
            if cpus is not None or mems is not None:
                moved.append(cid)
                change = changes.get((cpus, mems))  # only what differs; shared by a pool
                if change is None:
                    change = changes[cpus, mems] = LinuxResources(cpus=cpus, mems=mems)
                if tags is None:
                    cache.set_resources(cid, change)
                else:  # one write for both
                    cache.put_container(ctr.with_resources(change, tags=tags))
            elif tags is not None:
                cache.set_tags(cid, **tags)
        decisions, self._decisions = self._decisions, []
        decided: set[str] = set()
        record = self.ctx.record_decision
        for cid, reason in decisions:
            ctr = cache.container(cid)
            if ctr is not None:
                record(ctr, reason)
                decided.add(cid)
        reasons = flush.reasons
        for cid in moved:
            why = reasons.get(cid)
            if why and cid not in decided:
                ctr = cache.container(cid)
                if ctr is not None:
                    record(ctr, why)

    # ================================================================== events
    def handle_event(self, event: PolicyEvent) -> None:
        if event.kind != COLD_START_DONE:
            return
        alloc = self.allocations
        wanted = event.data
        ended = False
        for cid, grant in list(alloc.grants.items()):
            if grant.cold_start_until is None:
                continue
            if wanted is None or _names(str(wanted), cid, grant.label):
                ended = alloc.end_cold_start(cid) or ended
                handle = self._timers.pop(cid, None)
                if handle is not None and wanted is None:
                    handle.cancel()
        if ended:
            self._apply()
        elif wanted is not None:
            self.ctx.notice(
                f"{COLD_START_DONE} event for {wanted!r}: no container in a cold start has "
                "that id, namespace/pod/container or pod/container name",
                severity=Severity.WARNING,
            )

    # ================================================================== exports
    def container_settings(self) -> ContainerSettings:
        """Scheduling classes only when the configuration defines some (annotations and the
        namespace / QoS mappings name them); nothing for the host controller alone."""
        return ContainerSettings(scheduling=bool(self._spec.scheduling_classes), host=False)

    def host_assignment(self) -> HostAssignment:
        """CPU classes and interrupt affinity of the placement now (the same object while
        the configuration, the shared CPUs and the exclusive grants stay as they are)."""
        if self._alloc is None:
            return NO_ASSIGNMENT
        return self._host.assignment(self._spec, self._control, self._alloc)

    def exported_resources(self, container_id: str) -> Mapping[str, str] | None:
        """The container's allocation for its ``resources.sh`` (``None``: it has none)."""
        grant = self._alloc.grants.get(container_id) if self._alloc is not None else None
        if grant is None:
            return None
        return exported_resources(self.allocations, grant, self.ctx.machine)

    def explain(self, subject: Subject) -> Explanation:
        """Why the container is (or would be) in its pool, or refused (on demand, on a copy
        of the engine: ``topology_aware/explain.py``)."""
        from nrirp.domain.policies.topology_aware.explain import explain_placement

        return explain_placement(
            alloc=self.allocations,
            spec=self._spec,
            control=self._control,
            index=self._index,
            ctx=self.ctx,
            subject=subject,
            class_cpus=self._class_cpus,
        )

    def topology_zones(self) -> Sequence[TopologyZone]:
        return topology_zones(self._alloc) if self._alloc is not None else ()

    def metrics(self) -> Sequence[MetricSample]:
        return metrics(self._alloc) if self._alloc is not None else ()

    def describe(self) -> Mapping[str, Any]:
        if self._alloc is None:
            return {"policy": self.name, "started": False}
        return describe(self._alloc)

    def export_state(self) -> Any:
        if self._alloc is None:
            return None
        # only the running cold starts: per-container grants are in the containers' tags, so
        # this stays small and costs nothing per save with many containers
        cold = self._alloc.cold_starts
        return {"cold_start": dict(cold)} if cold else None


def _names(wanted: str, container_id: str, label: str) -> bool:
    """Does ``wanted`` name the container: its id, ``namespace/pod/container`` or
    ``pod/container`` (a bare container name is ambiguous and names none)?"""
    if wanted in (container_id, label):
        return True
    return wanted.count("/") == 1 and label.endswith(f"/{wanted}") and label.count("/") == 2


def _saved_of(grant: Grant) -> SavedGrant:
    return SavedGrant(
        pool=grant.pool.name,
        kind=grant.kind,
        exclusive=grant.exclusive,
        memory=grant.memory,
        memory_types=grant.memory_types or None,
    )


def _deadlines(data: Any) -> dict[str, float]:
    cold = data.get("cold_start") if isinstance(data, dict) else None
    if not isinstance(cold, dict):
        return {}
    return {
        str(k): float(v)
        for k, v in cold.items()
        if isinstance(v, (int, float)) and math.isfinite(v)
    }


def _reason(grant: Grant) -> str:
    """``exclusive cpus 4-5 in NUMA node #1, memory 1``, ``shared 500m in ...``,
    ``mixed cpus 3 + 500m shared in ...``."""
    what = grant.kind.value
    if grant.exclusive:
        what += f" cpus {grant.exclusive}"
        if grant.shared:
            what += f" + {grant.shared}m shared"
    elif grant.shared or grant.reserved:
        what += f" {grant.shared or grant.reserved}m"
    text = f"{what} in {grant.pool.name}"
    if grant.memory is not None:
        text += f", memory {grant.memory}"
    return text
