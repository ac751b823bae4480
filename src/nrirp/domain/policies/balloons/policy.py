"""The ``balloons`` policy: the Policy port over the balloons engine and the cache.

See docs/balloons.md. A configuration is turned into a :class:`State` (the expanded types, the
balloons, the memory placements); a new configuration builds a new state and takes every
container over into it, and only replaces the old one when every container found a place.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import attrs

from nrirp.domain.config import (
    ControlConfig,
    CPUResource,
    PolicyConfig,
    PrivilegedAnnotationsConfig,
    Quantity,
    ResourceConstraints,
)
from nrirp.domain.config.balloons import PODRESOURCEAPI_PREFIX, BalloonsPolicySpec
from nrirp.domain.config.derived import PerConfig
from nrirp.domain.config.enums import TurboDomain
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.assignment import NO_ASSIGNMENT, HostAssignment
from nrirp.domain.hostcontrol.classes import ClassSettings, resolve_classes
from nrirp.domain.matching import glob_match
from nrirp.domain.model import (
    AnnotationReader,
    Container,
    ContainerState,
    LinuxResources,
    Mount,
    Pod,
)
from nrirp.domain.policies.balloons.balloon import Balloon, Member
from nrirp.domain.policies.balloons.catalog import (
    BalloonKind,
    Catalog,
    CatalogError,
    build_catalog,
    compiled_lists,
)
from nrirp.domain.policies.balloons.devices import Devices, PodResources
from nrirp.domain.policies.balloons.engine import Engine, NoBalloon, Plan
from nrirp.domain.policies.balloons.export import describe, metrics, topology_zones
from nrirp.domain.policies.balloons.fill import choose_balloon, choose_kind
from nrirp.domain.policies.balloons.groups import expand_group
from nrirp.domain.policies.balloons.host import balloon_assignment
from nrirp.domain.policies.balloons.memory import MemoryPlacer
from nrirp.domain.policies.balloons.persist import (
    TAG_BALLOON,
    TAG_CPU_CLASS,
    TAG_MEMORY,
    SavedStateError,
    digest,
    export,
    find_balloon,
    memory_tag,
    parse_memory_tag,
    restore,
)
from nrirp.domain.policies.balloons.pinning import Pinning
from nrirp.domain.policies.balloons.requests import (
    Request,
    build_request,
    container_label,
    is_preserved,
)
from nrirp.domain.policies.balloons.resize import ResizeError, Resizer
from nrirp.domain.policies.glob_notices import malformed_globs
from nrirp.domain.policies.topology_aware.classes import scheduling_of
from nrirp.domain.policy import MetricSample, PolicyContext, PolicyError, PolicyEvent, TopologyZone
from nrirp.domain.policy.explanation import Explanation, Subject
from nrirp.domain.policy.settings import ContainerSettings
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.topology.hints import HintOrigin

DEFAULT_RESERVED_CPU = "750m"
PRESERVED = "(preserved)"
"""The ``balloons.balloon`` tag of a container left alone."""


def default_spec() -> BalloonsPolicySpec:
    """The reference Helm chart's default: ``reservedResources: {cpu: 750m}``."""
    return BalloonsPolicySpec(
        reserved_resources=ResourceConstraints(
            cpu=CPUResource.of_amount(Quantity.parse(DEFAULT_RESERVED_CPU))
        )
    )


@attrs.define(eq=False)
class State:
    """Everything that belongs to one configuration."""

    config: PolicyConfig | None
    spec: BalloonsPolicySpec
    catalog: Catalog
    engine: Engine
    pinning: Pinning
    fingerprint: str
    """Of the whole configuration (what the saved balloons were made with)."""
    placement: str
    """Of what places balloons and containers: everything but the classes."""
    preserved: dict[str, str] = attrs.field(factory=dict)
    """Containers left alone: id -> label."""


class BalloonsPolicy:
    """Balloons of CPUs that inflate and deflate with their containers; see docs/balloons.md.

    ``pod_resources`` resolves ``podresourceapi:`` devices of ``preferCloseToDevices``
    against a container (default: from its topology hints of pod-resources origin)."""

    name: ClassVar[str] = "balloons"
    description: ClassVar[str] = (
        "Balloons of CPUs per workload type that inflate and deflate with their containers."
    )
    config_type: ClassVar[type[Any] | None] = BalloonsPolicySpec

    def __init__(self, pod_resources: PodResources | None = None) -> None:
        self._ctx: PolicyContext | None = None
        self._state: State | None = None
        self._resizer: Resizer | None = None
        self._pod_resources = pod_resources
        self._decisions: list[tuple[str, str]] = []
        self._moved: dict[str, str] = {}
        self._joined: dict[str, str] = {}
        """Containers whose own settings must be written (joined or resized), with why."""
        self._changed: set[str] = set()
        self._export: tuple[int, dict[str, Any]] | None = None
        self._host: tuple[tuple[int, int, int], HostAssignment] | None = None

    # ================================================================== properties
    @property
    def ctx(self) -> PolicyContext:
        if self._ctx is None:
            raise PolicyError("balloons policy not started")
        return self._ctx

    @property
    def state(self) -> State:
        """The configuration in force and its balloons (for tests and tools)."""
        if self._state is None:
            raise PolicyError("balloons policy not started")
        return self._state

    @property
    def engine(self) -> Engine:
        return self.state.engine

    # ================================================================== lifecycle
    @staticmethod
    def prepare_config(config: PolicyConfig) -> None:
        """Compile the lists and digests of ``config`` ahead of a reconfigure (any thread)."""
        spec = config.spec
        if isinstance(spec, BalloonsPolicySpec):
            compiled_lists(spec, config.privileged_annotations)
            _digests(spec, config.control, config.privileged_annotations)

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None:
        self._ctx = ctx
        allocator = CPUAllocator(ctx.machine)
        self._resizer = Resizer(ctx.machine, allocator)
        state = self._build(config)
        saved = ctx.cache.policy_data(self.name)
        try:
            restore(state.engine, saved, state.fingerprint)
            restored = True
        except SavedStateError:
            restored = False
            self._precreate(state)
        self._state = state
        self._announce(state)
        entries = ctx.cache.active_containers()
        if restored:
            entries = self._readmit(state, entries)
        for ctr in self._in_reference_order(entries):
            try:
                self._admit(state, ctr, initial=False)
            except PolicyError as exc:
                self.ctx.notice(
                    f"{self._label(ctr)} left as it is: {exc}",
                    container=ctr,
                    severity=Severity.ERROR,
                )
        self._apply()

    def reconfigure(self, config: PolicyConfig) -> None:
        """A configuration that changes nothing keeps everything; one that changes only
        classes (CPU and scheduling) keeps every balloon and container where it is; any other
        builds the balloons anew and decides every container again (refused, keeping the old
        configuration, when one cannot be placed)."""
        old = self.state
        state = self._build(config)
        if state.fingerprint == old.fingerprint:
            self._state = attrs.evolve(old, config=config)
            return
        if state.placement == old.placement:
            self._reclass(old, state)
            return
        self._precreate(state)
        for ctr in self._in_reference_order(self.ctx.cache.active_containers()):
            try:
                self._admit(state, ctr, initial=False)
            except PolicyError as exc:
                raise PolicyError(f"cannot keep {self._label(ctr)}: {exc}") from None
        self._state = state
        self._announce(state)
        for balloon in state.engine.balloons:
            state.engine.dirty.setdefault(balloon, "reconfigured")
        self._apply()

    def _reclass(self, old: State, new: State) -> None:
        """Adopt a configuration that differs only in its classes: the balloons stay, their
        types are the new ones."""
        engine = old.engine
        engine.catalog = new.catalog
        for balloon in engine.all_balloons():
            balloon.kind = new.catalog.by_name[balloon.kind.name]
            if balloon.parent is None:
                engine.dirty.setdefault(balloon, "classes changed")
        engine.reset_steering()
        self._state = State(
            new.config,
            new.spec,
            new.catalog,
            engine,
            old.pinning,
            new.fingerprint,
            new.placement,
            old.preserved,
        )
        self._announce(self._state)
        self._apply()

    def _build(self, config: PolicyConfig | None) -> State:
        if config is not None and (
            config.policy != self.name or not isinstance(config.spec, BalloonsPolicySpec)
        ):
            raise PolicyError(f"balloons policy cannot use a {config.policy!r} configuration")
        spec = default_spec() if config is None else config.spec
        assert isinstance(spec, BalloonsPolicySpec)
        control = config.control if config is not None else ControlConfig()
        machine = self.ctx.machine
        resizer = self._resizer
        assert resizer is not None
        try:
            privileged = config.privileged_annotations if config is not None else None
            catalog = build_catalog(spec, control, machine, privileged)
        except CatalogError as exc:
            raise PolicyError(str(exc)) from None
        devices = Devices(
            catalog, resizer.allocator, self._locate, self._pod_resources or self._hinted
        )
        engine = Engine(catalog, resizer, devices)
        pinning = Pinning(machine, MemoryPlacer(machine), pin_cpu=catalog.pin_cpu)
        privileged = config.privileged_annotations if config is not None else None
        fingerprint, placement = _digests(spec, control, privileged)
        return State(config, spec, catalog, engine, pinning, fingerprint, placement)

    def _precreate(self, state: State) -> None:
        try:
            state.engine.precreate()
        except NoBalloon as exc:
            raise PolicyError(str(exc)) from None

    def _readmit(self, state: State, entries: Sequence[Container]) -> list[Container]:
        """Put containers back where their tags say; returns those that need a place."""
        engine = state.engine
        records = []
        fresh = []
        for ctr in entries:
            name = ctr.tags.get(TAG_BALLOON, "")
            pod = self.ctx.cache.pod(ctr.pod_id)
            reader = self.ctx.annotations(ctr)
            if self._is_preserved(state, reader, ctr, pod):
                self._preserve(state, ctr, pod)
                continue
            balloon = find_balloon(engine, name)
            if balloon is None:
                fresh.append(ctr)
                continue
            request = self._request(state, pod, ctr, reader)
            member = self._member(balloon.kind, request, ctr, pod)
            engine.add(balloon, member)
            if member.memory_preserve and balloon.kind.pin_memory:
                state.pinning.preserve(ctr.id, member.memory_limit, ctr.mems)
            record = parse_memory_tag(ctr.tags.get(TAG_MEMORY, ""))
            if record is not None:
                records.append((record, ctr.id, member, balloon))
        for record, cid, member, balloon in sorted(records, key=lambda r: r[0].order):
            types = state.pinning.memory.types(member.memory_types or balloon.kind.memory_types)
            if state.pinning.memory.restore(
                cid, member.memory_limit, record.preferred, record.zone, types
            ):
                state.pinning.restore(cid, attrs.evolve(record, size=member.memory_limit))
        return fresh

    # ================================================================== containers
    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        state = self.state
        for ctr in removed:
            self._release(state, ctr.id)
        for ctr in self._in_reference_order(added):
            if ctr.id in state.engine.owner or ctr.id in state.preserved:
                self._release(state, ctr.id)
            try:
                self._admit(state, ctr, initial=ctr.state is ContainerState.CREATING)
            except PolicyError as exc:
                self.ctx.notice(
                    f"cannot allocate {self._label(ctr)}: {exc}",
                    container=ctr,
                    severity=Severity.ERROR,
                )
        self._apply()

    def allocate(self, container: Container) -> None:
        state = self.state
        if container.id in state.engine.owner or container.id in state.preserved:
            self._release(state, container.id)
        self._admit(state, container, initial=True)
        self._apply()

    def release(self, container: Container) -> None:
        self._release(self.state, container.id)
        self._apply()

    def update(self, container: Container, resources: LinuxResources) -> None:
        """An in-place resize: the balloon is resized to its members' new requests (the
        reference ignores resizes; see docs/balloons.md)."""
        state = self.state
        engine = state.engine
        balloon = engine.owner.get(container.id)
        if balloon is None:
            return
        member = balloon.members[container.id]
        pod = self.ctx.cache.pod(container.pod_id)
        reader = self.ctx.annotations(container)
        request = self._request(state, pod, container, reader)
        if request.cpu == member.request and request.memory_limit == member.memory_limit:
            return
        plan = Plan(engine.free)
        total = balloon.requested - member.request + request.cpu
        target = max(1, total)
        size = plan.size(balloon)
        grow = size * 1000 < target
        if grow and engine.max_avail(balloon, plan) < target:
            raise PolicyError(
                f"balloon {balloon.name} cannot grow to {target}m"
                f" (at most {engine.max_avail(balloon, plan)}m)"
            )
        if grow or -(-target // 1000) < size:
            try:
                engine.plan_resize(plan, balloon, target, container)
            except ResizeError as exc:
                raise PolicyError(f"balloon {balloon.name}: {exc}") from None
        engine.commit(plan, f"{member.label} resized")
        balloon.remove(container.id)
        member.request = request.cpu
        member.memory_limit = request.memory_limit
        balloon.add(member)
        self._joined[container.id] = f"{member.label} resized"
        self._decisions.append((container.id, f"resized to {request.cpu}m in {balloon.name}"))
        self._apply()

    def _label(self, container: Container) -> str:
        return container_label(self.ctx.cache.pod(container.pod_id), container)

    def _in_reference_order(self, containers: Sequence[Container]) -> list[Container]:
        """The reference's Sync order: pod creation time, container creation time, pod name,
        container name."""
        cache = self.ctx.cache

        def key(ctr: Container) -> tuple[float, float, str, str]:
            pod = cache.pod(ctr.pod_id)
            return (
                _time(pod.created_at if pod is not None else None),
                _time(ctr.created_at),
                pod.name if pod is not None else "",
                ctr.name,
            )

        return sorted(containers, key=key)

    def _admit(self, state: State, ctr: Container, *, initial: bool) -> None:
        """Find the container's balloon and put it there (or leave it alone when preserved).
        Changes nothing and raises :class:`PolicyError` when it cannot be placed."""
        cache = self.ctx.cache
        pod = cache.pod(ctr.pod_id)
        reader = self.ctx.annotations(ctr)
        if self._is_preserved(state, reader, ctr, pod):
            self._preserve(state, ctr, pod)
            self._decisions.append((ctr.id, "preserved: left alone"))
            return
        request = self._request(state, pod, ctr, reader)
        engine = state.engine
        try:
            kind = choose_kind(state.catalog, request, ctr, pod)
            member = self._member(kind, request, ctr, pod)
            plan = Plan(engine.free)
            balloon = choose_balloon(engine, kind, member, plan, ctr)
        except NoBalloon as exc:
            raise PolicyError(str(exc)) from None
        target = max(1, member.request + balloon.requested)
        if plan.size(balloon) * 1000 < target:
            try:
                engine.plan_resize(plan, balloon, target, ctr)
            except ResizeError as exc:
                raise PolicyError(
                    f"balloon {balloon.name} cannot inflate to {target}m: {exc}"
                ) from None
        engine.commit(plan, f"{member.label} joined")
        engine.add(balloon, member)
        self._joined[ctr.id] = f"{member.label} joined"
        if member.memory_preserve and kind.pin_memory:
            state.pinning.preserve(ctr.id, member.memory_limit, ctr.mems)
        if initial:
            self._schedule(state, ctr, kind, request)
        self._decisions.append((ctr.id, f"in balloon {balloon.name}"))

    def _is_preserved(
        self, state: State, reader: AnnotationReader, ctr: Container, pod: Pod | None
    ) -> bool:
        catalog = state.catalog
        return is_preserved(reader, catalog.preserve, ctr, pod, catalog.privileged)

    def _request(
        self, state: State, pod: Pod | None, ctr: Container, reader: AnnotationReader
    ) -> Request:
        parse = self.ctx.annotation_parser.parse
        return build_request(pod, ctr, reader, parse, state.catalog.privileged)

    def _member(
        self, kind: BalloonKind, request: Request, ctr: Container, pod: Pod | None
    ) -> Member:
        group: str | None = None
        resolved = True
        if kind.source.group_by:
            expanded = expand_group(kind.source.group_by, ctr, pod)
            group, resolved = (expanded, True) if expanded is not None else ("", False)
        return Member(
            container_id=ctr.id,
            pod_id=ctr.pod_id,
            namespace=request.namespace,
            label=request.label,
            request=request.cpu,
            group=group,
            group_resolved=resolved,
            hide_hyperthreads=request.hide_hyperthreads,
            memory_limit=request.memory_limit,
            memory_types=request.memory_types,
            memory_preserve=request.memory_preserve,
        )

    def _preserve(self, state: State, ctr: Container, pod: Pod | None) -> None:
        state.preserved[ctr.id] = container_label(pod, ctr)
        self._joined[ctr.id] = "preserved"

    def _schedule(self, state: State, ctr: Container, kind: BalloonKind, request: Request) -> None:
        """The scheduling class at creation: the annotation's, else the type's."""
        name = request.scheduling_class
        cls = kind.scheduling_class
        if name is not None:
            cls = next((c for c in state.spec.scheduling_classes if c.name == name), None)
            if cls is None:
                known = ", ".join(sorted({c.name for c in state.spec.scheduling_classes}))
                self.ctx.notice(
                    f"{request.label}: scheduling class {name!r} (annotation scheduling-class)"
                    f" is not defined (schedulingClasses: {known or 'none'}): none applied",
                    container=ctr,
                )
                return
        if cls is None:
            return
        scheduling, io = scheduling_of(cls)
        if scheduling is not None or io is not None:
            self.ctx.cache.set_scheduling(ctr.id, scheduling, io)

    def _release(self, state: State, container_id: str) -> None:
        if state.preserved.pop(container_id, None) is not None:
            state.pinning.memory.release(container_id)
            return
        removed = state.engine.remove(container_id)
        if removed is None:
            return
        for owner in state.pinning.release(container_id):
            self._moved.setdefault(owner, "memory narrowed back")

    # ================================================================== apply
    def _apply(self) -> None:
        """Push what changed into the cache: cpus, mems, shares, tags, CPU classes."""
        state = self.state
        engine = state.engine
        cache = self.ctx.cache
        engine.refresh_sharing()
        dirty, engine.dirty = engine.dirty, {}
        why: dict[str, str] = {}
        touched: dict[str, Balloon] = {}
        for balloon, reason in dirty.items():
            for cid in balloon.ordered():
                touched[cid] = balloon
                why[cid] = f"balloon {balloon.name}: {reason}"
        joined, self._joined = self._joined, {}
        for cid, reason in joined.items():
            holder = engine.owner.get(cid)
            if holder is not None and cid not in touched:
                touched[cid] = holder
                why[cid] = reason
        pinning = state.pinning
        for cid, balloon in touched.items():
            member = balloon.members[cid]
            _, moved = pinning.place(balloon, member)
            for owner in moved:
                self._moved.setdefault(owner, f"memory widened by {member.label}")
        for owner in self._moved:
            if owner in engine.owner and owner not in touched:
                touched[owner] = engine.owner[owner]
                why[owner] = self._moved[owner]
        self._moved = {}
        changes: dict[tuple[Any, ...], LinuxResources] = {}
        for cid, balloon in touched.items():
            self._write(state, cid, balloon, changes)
        for cid in joined:
            ctr = cache.container(cid)
            if (
                cid in state.preserved
                and ctr is not None
                and ctr.tags.get(TAG_BALLOON) != PRESERVED
            ):
                cache.set_tags(cid, **{TAG_BALLOON: PRESERVED, TAG_MEMORY: ""})
        decisions, self._decisions = self._decisions, []
        decided = set()
        for cid, reason in decisions:
            ctr = cache.container(cid)
            if ctr is None:
                continue
            holder = engine.owner.get(cid)
            if holder is not None:
                reason = f"{reason}: {_placement(ctr, holder)}"
            self.ctx.record_decision(ctr, reason)
            decided.add(cid)
        for cid, reason in why.items():
            if cid in decided:
                continue
            ctr = cache.container(cid)
            holder = engine.owner.get(cid)
            if ctr is not None and holder is not None and cid in self._changed:
                self.ctx.record_decision(ctr, f"{reason}: {_placement(ctr, holder)}")
        self._changed = set()

    def _write(
        self,
        state: State,
        cid: str,
        balloon: Balloon,
        changes: dict[tuple[Any, ...], LinuxResources],
    ) -> None:
        """Write what the member should run with where it differs. ``changes`` hands the same
        change (and set) objects to the members of a balloon, which the cache and the runtime
        controller then recognise cheaply."""
        cache = self.ctx.cache
        ctr = cache.container(cid)
        if ctr is None:
            return
        member = balloon.members[cid]
        pinning = state.pinning
        cpus = pinning.cpus_of(balloon, member)
        record = pinning.records.get(cid)
        mems: CPUSet | None = None
        if balloon.kind.pin_memory and not member.memory_preserve:
            if record is not None:
                mems = pinning.node_set(record.zone)
            elif balloon.cpus | balloon.shared:
                types = pinning.memory.types(member.memory_types or balloon.kind.memory_types)
                nodes = pinning.memory.nodes_of(balloon.cpus | balloon.shared)
                mems = pinning.node_set(pinning.memory.zone(nodes, types))
        shares = pinning.shares_of(member)
        key = (
            cpus if cpus is not None and cpus != ctr.cpus else None,
            mems if mems is not None and mems != ctr.mems else None,
            shares if shares is not None and shares != ctr.resources.cpu_shares else None,
        )
        memory = memory_tag(record)
        retag = ctr.tags.get(TAG_BALLOON) != balloon.name or ctr.tags.get(TAG_MEMORY) != memory
        tags = {TAG_BALLOON: balloon.name, TAG_MEMORY: memory}
        if key != (None, None, None):
            change = changes.get(key)
            if change is None:
                change = changes[key] = LinuxResources(cpus=key[0], mems=key[1], cpu_shares=key[2])
            if retag:  # one write for both
                cache.put_container(ctr.with_resources(change).with_tags(**tags))
            else:
                cache.set_resources(cid, change)
            if key[0] is not None or key[1] is not None:
                self._changed.add(cid)
        elif retag:
            cache.set_tags(cid, **tags)
        cpu_class = balloon.kind.cpu_class
        if cpu_class is not None and ctr.tags.get(TAG_CPU_CLASS) != cpu_class:
            cache.set_tags(cid, **{TAG_CPU_CLASS: cpu_class})  # applied per CPU: host_assignment

    # ================================================================== notices
    def _announce(self, state: State) -> None:
        """Say once per configuration what is decided but not applied, and the reference's
        warnings."""
        ctx = self.ctx
        spec = state.spec
        config = state.config
        if config is not None:
            for where in spec.undefined_cpu_classes(config.control):
                ctx.notice(f"{where} names no CPU class of cpuClasses or control.cpu.classes")
        for line in malformed_globs("reservedPoolNamespaces", spec.reserved_pool_namespaces):
            ctx.notice(line)
        for index, balloon_type in enumerate(spec.balloon_types):
            for line in malformed_globs(
                f"balloonTypes[{index}].namespaces", balloon_type.namespaces
            ):
                ctx.notice(line)
        for kind in state.catalog.kinds:
            source = kind.source
            if source.prefer_isol_cpus and source.share_idle_cpus_in_same is not None:
                ctx.notice(
                    f"balloon type {kind.name}: preferIsolCpus with shareIdleCPUsInSame"
                    " shares idle CPUs with balloons on isolated CPUs"
                )
            if any(
                d.startswith(PODRESOURCEAPI_PREFIX) for d in source.prefer_close_to_devices
            ) and not (source.prefer_new_balloons and source.prefer_spreading_pods):
                ctx.notice(
                    f"balloon type {kind.name}: podresourceapi devices are resolved against the"
                    " container that creates a balloon; without preferNewBalloons and"
                    " preferSpreadingPods other containers share it"
                )
        for name in state.engine.devices.unresolved:
            ctx.notice(f"preferCloseToDevices: {name!r} gives no CPU: not used")
        # what of the CPU classes and interrupt rules this host cannot apply is said by the
        # resource manager's host enforcer, once per configuration

    # ================================================================== hooks
    def _locate(self, path: str) -> tuple[int, ...]:
        """The CPUs local to a device path, from the topology hint source (the path is looked
        up as if a container mounted it)."""
        probe = Container(
            id=f"balloons-device:{path}",
            pod_id="",
            name="",
            mounts=(Mount(destination="/balloons-device", source=path, options=("ro",)),),
        )
        out = []
        for hint in self.ctx.topology_hints(probe).values():
            bits = hint.cpus.bits
            if not bits:
                for node in hint.nodes:
                    if node in self.ctx.machine.nodes:
                        bits |= self.ctx.machine.node_cpus(node).bits
            if bits:
                out.append(bits)
        return tuple(out)

    def _hinted(self, pattern: str, container: Container) -> tuple[int, ...]:
        """``podresourceapi:`` devices: the container's pod-resources hints whose resource
        matches the glob (none reach the policy until a pod-resources source exists)."""
        out = []
        for provider, hint in self.ctx.topology_hints(container).items():
            if hint.origin is not HintOrigin.POD_RESOURCES:
                continue
            resource = provider.split(":", 1)[1] if ":" in provider else provider
            if glob_match(pattern, resource):
                bits = hint.cpus.bits
                for node in hint.nodes:
                    if node in self.ctx.machine.nodes:
                        bits |= self.ctx.machine.node_cpus(node).bits
                if bits:
                    out.append(bits)
        return tuple(out)

    # ================================================================== events and exports
    def handle_event(self, event: PolicyEvent) -> None:
        """The reference's balloons policy handles no events."""

    def container_settings(self) -> ContainerSettings:
        """Scheduling classes only when the configuration defines some (balloon types and
        annotations name them); nothing for the host controller alone."""
        spec = self._state.spec if self._state is not None else default_spec()
        return ContainerSettings(scheduling=bool(spec.scheduling_classes), host=False)

    def host_assignment(self) -> HostAssignment:
        """CPU classes and interrupt affinity of the balloons as they are now (the same
        object while neither the configuration nor any balloon's CPUs changed)."""
        state = self._state
        if state is None:
            return NO_ASSIGNMENT
        key = (id(state), id(state.engine), state.engine.version)
        if self._host is None or self._host[0] != key:
            control = state.config.control if state.config is not None else ControlConfig()
            classes = _classes(state.spec, control)
            assignment = balloon_assignment(
                state.spec, control, state.catalog, state.engine, classes
            )
            if self._host is not None and self._host[1] == assignment:
                assignment = self._host[1]
            self._host = (key, assignment)
        return self._host[1]

    def explain(self, subject: Subject) -> Explanation:
        """Why the container is (or would be) in its balloon, or refused (on demand, on a
        copy of the balloons: ``balloons/explain.py``)."""
        from nrirp.domain.policies.balloons.explain import explain_balloon

        state = self.state
        return explain_balloon(
            catalog=state.catalog,
            engine=state.engine,
            preserved=subject.placed and subject.container.id in state.preserved,
            ctx=self.ctx,
            subject=subject,
        )

    def topology_zones(self) -> Sequence[TopologyZone]:
        if self._state is None:
            return ()
        return topology_zones(self._state.engine, self.ctx.cache.container)

    def metrics(self) -> Sequence[MetricSample]:
        if self._state is None:
            return ()
        return metrics(self._state.engine, self._state.pinning.memory)

    def describe(self) -> Mapping[str, Any]:
        if self._state is None:
            return {"policy": self.name, "started": False}
        state = self._state
        return describe(state.engine, state.pinning.memory, state.preserved)

    def export_state(self) -> Any:
        if self._state is None:
            return None
        state = self._state
        key = hash((state.engine.version, id(state.engine)))
        if self._export is None or self._export[0] != key:
            self._export = (key, export(state.engine, state.fingerprint))
        return self._export[1]


def _config_digests(
    spec: BalloonsPolicySpec,
    control: ControlConfig,
    privileged: PrivilegedAnnotationsConfig | None,
) -> tuple[str, str]:
    """The fingerprint of the whole configuration and the digest of what places balloons.
    Where the privileged annotations are allowed is part of both (a change decides every
    container again); allowed everywhere, it adds nothing (digests as before it existed)."""
    privileged_text = repr(privileged) if privileged is not None and privileged.restricted else ""
    fingerprint = digest(repr(spec) + repr(control) + privileged_text)
    return fingerprint, _placement_digest(spec, privileged_text)


_digests = PerConfig(_config_digests)


def _resolved_classes(
    spec: BalloonsPolicySpec, control: ControlConfig
) -> Mapping[str, ClassSettings]:
    return resolve_classes(spec.cpu_classes, control)


_classes = PerConfig(_resolved_classes)


def _placement_digest(spec: BalloonsPolicySpec, privileged_text: str = "") -> str:
    """The configuration without what only names classes (CPU and scheduling classes)."""
    types = tuple(
        attrs.evolve(t, cpu_class=None, scheduling_class=None) for t in spec.balloon_types
    )
    bare = attrs.evolve(
        spec,
        idle_cpu_class=None,
        turbo_domain=TurboDomain.PACKAGE,
        cpu_classes=(),
        scheduling_classes=(),
        balloon_types=types,
    )
    return digest(repr(bare) + privileged_text)


def _time(value: float | None) -> float:
    return math.inf if value is None else value


def _placement(ctr: Container, balloon: Balloon) -> str:
    return _placement_text(balloon.cpus, balloon.shared)


@functools.lru_cache(maxsize=256)
def _placement_text(cpus: int, shared: int) -> str:
    """``cpus 1-2 + shared idle 3`` (the same text for every member of a balloon)."""
    text = f"cpus {CPUSet(cpus) or '(none)'}"
    if shared:
        text += f" + shared idle {CPUSet(shared)}"
    return text
