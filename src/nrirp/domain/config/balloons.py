"""``BalloonsPolicy`` spec: containers run in balloons of CPUs that inflate and deflate.

Fields, defaults and refusals follow the reference (``reference-balloons.md`` §1); where we
refuse more, docs/balloons.md says so. Problems that need the machine (a reserved cpuset outside
the available CPUs, ``minBalloons`` that do not fit) are found when the policy starts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

import attrs

from nrirp.domain.config.control import ControlConfig
from nrirp.domain.config.cpu_class import CPUClass, PCTPriority
from nrirp.domain.config.enums import (
    ComponentCreation,
    CoreTypePreference,
    CPUPriority,
    CPUTopologyLevel,
    LoadLevel,
    MemoryKind,
    TurboDomain,
)
from nrirp.domain.config.errors import Issue, quote
from nrirp.domain.config.expression import ContainerMatch, Expression
from nrirp.domain.config.keys import key_of, ref
from nrirp.domain.config.policy_checks import (
    check_names_listed,
    check_reserved_cpu,
    cpu_class_names,
)
from nrirp.domain.config.resources import ResourceConstraints
from nrirp.domain.config.scheduling import SchedulingClass
from nrirp.domain.config.validation import at, check_range, check_reference, check_unique_names

RESERVED = "reserved"
DEFAULT = "default"
PODRESOURCEAPI_PREFIX = "podresourceapi:"
IRQ_MODES = ("sink", "isolate")
"""``irqMode`` values that do something (the reference accepts any text; others do nothing)."""
_GROUP_BY = re.compile(r"(?:[^$]|\$(?!\{)|\$\{[^{}]+\})*")


@attrs.frozen(kw_only=True)
class BalloonComponent:
    """One component of a composite balloon."""

    balloon_type: str = attrs.field(metadata=ref("balloonType"))


@attrs.frozen(kw_only=True)
class LoadClass:
    """A kind of load (``loads`` of a balloon type) that ``level`` topology units can carry."""

    name: str = attrs.field(metadata=ref("name"))
    level: LoadLevel = attrs.field(metadata=ref("level"))
    overloads_level_in_balloon: bool = attrs.field(
        default=False, metadata=ref("overloadsLevelInBalloon")
    )


@attrs.frozen(kw_only=True)
class BalloonType:
    """One entry of ``balloonTypes``. Unset (``None``) options inherit the policy-level value.

    ``maxCPUs`` and ``maxBalloons``: 0 means no limit (a negative ``maxCPUs`` is refused, as the
    reference refuses it whenever ``minCPUs`` is 0 or more: there is no "forbid" value).
    ``allocatorPriority`` defaults to ``high``, the CRD's default."""

    name: str = attrs.field(metadata=ref("name"))
    components: tuple[BalloonComponent, ...] = attrs.field(default=(), metadata=ref("components"))
    component_creation: ComponentCreation | None = attrs.field(
        default=None, metadata=ref("componentCreation")
    )
    namespaces: tuple[str, ...] = attrs.field(default=(), metadata=ref("namespaces"))
    match_expressions: tuple[Expression, ...] = attrs.field(
        default=(), metadata=ref("matchExpressions")
    )
    group_by: str | None = attrs.field(default=None, metadata=ref("groupBy"))
    min_cpus: int = attrs.field(default=0, metadata=ref("minCPUs"))
    max_cpus: int = attrs.field(default=0, metadata=ref("maxCPUs"))
    min_balloons: int = attrs.field(default=0, metadata=ref("minBalloons"))
    max_balloons: int = attrs.field(default=0, metadata=ref("maxBalloons"))
    memory_types: tuple[MemoryKind, ...] = attrs.field(default=(), metadata=ref("memoryTypes"))
    pin_memory: bool | None = attrs.field(default=None, metadata=ref("pinMemory"))
    allocator_priority: CPUPriority = attrs.field(
        default=CPUPriority.HIGH, metadata=ref("allocatorPriority")
    )
    prefer_spread_on_physical_cores: bool | None = attrs.field(
        default=None, metadata=ref("preferSpreadOnPhysicalCores")
    )
    hide_hyperthreads: bool | None = attrs.field(default=None, metadata=ref("hideHyperthreads"))
    allocator_topology_balancing: bool | None = attrs.field(
        default=None, metadata=ref("allocatorTopologyBalancing")
    )
    cpu_class: str | None = attrs.field(default=None, metadata=ref("cpuClass"))
    loads: tuple[str, ...] = attrs.field(default=(), metadata=ref("loads"))
    prefer_spreading_pods: bool = attrs.field(default=False, metadata=ref("preferSpreadingPods"))
    prefer_per_namespace_balloon: bool = attrs.field(
        default=False, metadata=ref("preferPerNamespaceBalloon")
    )
    prefer_new_balloons: bool = attrs.field(default=False, metadata=ref("preferNewBalloons"))
    share_idle_cpus_in_same: CPUTopologyLevel | None = attrs.field(
        default=None, metadata=ref("shareIdleCPUsInSame")
    )
    prefer_close_to_devices: tuple[str, ...] = attrs.field(
        default=(), metadata=ref("preferCloseToDevices")
    )
    prefer_isol_cpus: bool = attrs.field(default=False, metadata=ref("preferIsolCpus"))
    prefer_core_type: CoreTypePreference | None = attrs.field(
        default=None, metadata=ref("preferCoreType")
    )
    scheduling_class: str | None = attrs.field(default=None, metadata=ref("schedulingClass"))
    show_containers_in_nrt: bool | None = attrs.field(
        default=None, metadata=ref("showContainersInNrt")
    )
    irq_claim: tuple[str, ...] = attrs.field(default=(), metadata=ref("irqClaim"))
    irq_mode: str | None = attrs.field(default=None, metadata=ref("irqMode"))

    @property
    def is_composite(self) -> bool:
        return bool(self.components)

    def config_problems(self) -> Iterator[Issue]:
        # an empty name is the policy's to report (check_unique_names over balloonTypes)
        yield from check_range(self, "min_cpus", 0)
        if self.max_cpus < 0:
            yield at(
                self,
                "max_cpus",
                f"invalid value {self.max_cpus}: minCPUs ({self.min_cpus}) > maxCPUs"
                f" ({self.max_cpus}); maxCPUs is 0 (no limit) or at least minCPUs",
            )
        elif self.max_cpus > 0 and self.min_cpus > self.max_cpus:
            yield at(
                self,
                "min_cpus",
                f"invalid value {self.min_cpus}: exceeds maxCPUs ({self.max_cpus})",
            )
        yield from check_range(self, "min_balloons", 0)
        yield from check_range(self, "max_balloons", 0)
        if self.max_balloons > 0 and self.min_balloons > self.max_balloons:
            yield at(
                self,
                "min_balloons",
                f"invalid value {self.min_balloons}: exceeds maxBalloons ({self.max_balloons})",
            )
        if self.group_by is not None and not _GROUP_BY.fullmatch(self.group_by):
            yield at(
                self,
                "group_by",
                f"invalid value {quote(self.group_by)}: every '${{' needs a closing '}}'",
            )
        for index, component in enumerate(self.components):
            if component.balloon_type == self.name:
                yield at(
                    self,
                    "components",
                    f"invalid value {quote(self.name)}: a balloon type cannot contain itself",
                    index,
                    "balloonType",
                )
        if self.component_creation is not None and not self.components:
            yield at(
                self,
                "component_creation",
                f"invalid value {quote(str(self.component_creation))}: only composite balloon"
                " types (with components) create components",
            )
        if self.components:
            yield from self._composite_problems()

    def _composite_problems(self) -> Iterator[Issue]:
        """A composite balloon has no CPUs of its own: options about picking CPUs are refused."""
        why = "a composite balloon type (with components) picks no CPUs of its own"
        for attribute, is_set in (
            ("cpu_class", self.cpu_class is not None),
            ("prefer_spread_on_physical_cores", self.prefer_spread_on_physical_cores is not None),
            ("allocator_topology_balancing", self.allocator_topology_balancing is not None),
            ("prefer_close_to_devices", bool(self.prefer_close_to_devices)),
            ("prefer_isol_cpus", self.prefer_isol_cpus),
            ("prefer_core_type", self.prefer_core_type is not None),
        ):
            if is_set:
                yield at(self, attribute, f"not allowed: {why}")


BUILTIN_RESERVED = BalloonType(
    name=RESERVED, min_balloons=1, max_balloons=1, allocator_priority=CPUPriority.LOW
)
"""The ``reserved`` type put first when the config does not define one: one balloon for
kube-system and ``reservedPoolNamespaces`` (a configured one gets the same namespaces and is
also kept at exactly one balloon)."""

BUILTIN_DEFAULT = BalloonType(
    name=DEFAULT, min_balloons=1, max_balloons=1, allocator_priority=CPUPriority.LOW
)
"""The ``default`` type put last when the config does not define one: the catch-all balloon
(a configured one is used exactly as written)."""


@attrs.frozen(kw_only=True)
class BalloonsPolicySpec:
    """Spec of the ``balloons`` policy (kind ``BalloonsPolicy``)."""

    pin_cpu: bool = attrs.field(default=True, metadata=ref("pinCPU"))
    pin_memory: bool = attrs.field(default=True, metadata=ref("pinMemory"))
    idle_cpu_class: str | None = attrs.field(default=None, metadata=ref("idleCPUClass"))
    reserved_pool_namespaces: tuple[str, ...] = attrs.field(
        default=(), metadata=ref("reservedPoolNamespaces")
    )
    allocator_topology_balancing: bool = attrs.field(
        default=False, metadata=ref("allocatorTopologyBalancing")
    )
    prefer_spread_on_physical_cores: bool = attrs.field(
        default=False, metadata=ref("preferSpreadOnPhysicalCores")
    )
    balloon_types: tuple[BalloonType, ...] = attrs.field(default=(), metadata=ref("balloonTypes"))
    available_resources: ResourceConstraints = attrs.field(
        factory=ResourceConstraints, metadata=ref("availableResources")
    )
    reserved_resources: ResourceConstraints = attrs.field(metadata=ref("reservedResources"))
    preserve: ContainerMatch | None = attrs.field(default=None, metadata=ref("preserve"))
    show_containers_in_nrt: bool = attrs.field(default=False, metadata=ref("showContainersInNrt"))
    load_classes: tuple[LoadClass, ...] = attrs.field(default=(), metadata=ref("loadClasses"))
    scheduling_classes: tuple[SchedulingClass, ...] = attrs.field(
        default=(), metadata=ref("schedulingClasses")
    )
    cpu_classes: tuple[CPUClass, ...] = attrs.field(default=(), metadata=ref("cpuClasses"))
    turbo_domain: TurboDomain = attrs.field(
        default=TurboDomain.PACKAGE, metadata=ref("turboDomain")
    )
    controllable_interrupts: tuple[str, ...] = attrs.field(
        default=("*",), metadata=ref("controllableInterrupts")
    )

    def effective_balloon_types(self) -> tuple[BalloonType, ...]:
        """The types in matching order, as the reference expands them: the configured ones in
        their order, the built-in ``reserved`` prepended when not configured and the built-in
        ``default`` appended when not configured."""
        names = {t.name for t in self.balloon_types}
        head = () if RESERVED in names else (BUILTIN_RESERVED,)
        tail = () if DEFAULT in names else (BUILTIN_DEFAULT,)
        return (*head, *self.balloon_types, *tail)

    def config_problems(self) -> Iterator[Issue]:
        yield from check_reserved_cpu(self)
        available = self.available_resources.cpu
        if available is not None and available.amount is not None:
            yield at(
                self,
                "available_resources",
                f"invalid value {quote(str(available))}: the balloons policy takes"
                " 'cpuset:<cpu list>' or 'exclude-cpuset:<cpu list>' here, not an amount",
                "cpu",
            )
        yield from check_names_listed(self, "controllable_interrupts", self.controllable_interrupts)
        yield from check_unique_names(self, "balloon_types", self.balloon_types)
        # load and scheduling classes may repeat a name (the reference uses the first)
        for index, load_class in enumerate(self.load_classes):
            if not load_class.name:
                yield at(
                    self, "load_classes", "invalid value '': a name is required", index, "name"
                )
        yield from check_unique_names(self, "cpu_classes", self.cpu_classes)
        yield from self._pct_problems()
        yield from self._reserved_type_problems()
        type_names = {t.name for t in self.balloon_types} | {RESERVED, DEFAULT}
        load_names = [c.name for c in self.load_classes]
        scheduling_names = [c.name for c in self.scheduling_classes]
        for index, balloon in enumerate(self.balloon_types):
            for c_index, component in enumerate(balloon.components):
                yield from check_reference(
                    self,
                    "balloon_types",
                    component.balloon_type,
                    type_names,
                    "balloon type",
                    index,
                    "components",
                    c_index,
                    "balloonType",
                )
            for l_index, load in enumerate(balloon.loads):
                yield from check_reference(
                    self, "balloon_types", load, load_names, "load class", index, "loads", l_index
                )
            yield from check_reference(
                self,
                "balloon_types",
                balloon.scheduling_class,
                scheduling_names,
                "scheduling class",
                index,
                "schedulingClass",
            )
        yield from self._component_cycles()

    def _reserved_type_problems(self) -> Iterator[Issue]:
        """How ``reservedResources.cpu`` and a configured ``reserved`` type must agree."""
        cpu = self.reserved_resources.cpu
        for index, balloon in enumerate(self.balloon_types):
            if balloon.name != RESERVED:
                continue
            if cpu is not None and cpu.cpuset is not None and balloon.components:
                yield at(
                    self,
                    "balloon_types",
                    "not allowed: with a reserved cpuset the reserved balloon type prefers the"
                    " reserved CPUs, which a composite balloon type cannot",
                    index,
                    "components",
                )
            if cpu is None or cpu.amount is None or cpu.amount.is_negative():
                continue
            need = max(math.ceil(cpu.amount.milli_value() / 1000), 0)
            if balloon.min_cpus == 0 and 0 < balloon.max_cpus < need:
                yield at(
                    self,
                    "balloon_types",
                    f"invalid value {balloon.max_cpus}: below the {need} CPUs reserved by"
                    f" reservedResources.cpu ({cpu})",
                    index,
                    "maxCPUs",
                )
            if balloon.min_cpus not in (0, need):
                yield at(
                    self,
                    "balloon_types",
                    f"invalid value {balloon.min_cpus}: reservedResources.cpu ({cpu}) makes the"
                    f" reserved balloon {need} CPUs; leave minCPUs out or set it to {need}",
                    index,
                    "minCPUs",
                )

    def _pct_problems(self) -> Iterator[Issue]:
        """The reference's rules for SST core-power (PCT) settings of CPU classes."""
        managed = [i for i, c in enumerate(self.cpu_classes) if c.pct_priority is not None]
        assoc = [i for i, c in enumerate(self.cpu_classes) if c.sst_clos_id is not None]
        for index, cls in enumerate(self.cpu_classes):
            path = ("cpuClasses", index)
            if cls.pct_priority is not None and cls.sst_clos_id is not None:
                yield (
                    (*path, "sstClosID"),
                    "not allowed together with pctPriority: a class is either managed by its"
                    " priority or associated with a CLOS",
                )
            if cls.pct_priority is None:
                for key, value in (
                    ("pctMinFreq", cls.pct_min_freq),
                    ("pctMaxFreq", cls.pct_max_freq),
                ):
                    if value is not None:
                        yield (*path, key), "not allowed without pctPriority"
                if cls.publish_extended_resource:
                    yield (
                        (*path, "publishExtendedResource"),
                        "not allowed without pctPriority (only PCT classes are published)",
                    )
        first: dict[PCTPriority, int] = {}
        for index, cls in enumerate(self.cpu_classes):
            priority = cls.pct_priority
            if priority is None:
                continue
            if priority in first:  # one CLOS per priority (0 high, 3 low): as the reference
                yield (
                    ("cpuClasses", index, "pctPriority"),
                    f"invalid value {quote(priority.value)}: cpuClasses[{first[priority]}] is"
                    f" already the managed {priority.value}-priority class (one managed class"
                    " of each priority at most)",
                )
            else:
                first[priority] = index
        if managed and assoc:
            yield (
                ("cpuClasses", assoc[0], "sstClosID"),
                f"not allowed: cpuClasses[{managed[0]}] is managed by pctPriority; managed and"
                " CLOS-associated classes cannot be mixed",
            )

    def _component_cycles(self) -> Iterator[Issue]:
        parts = {t.name: [c.balloon_type for c in t.components] for t in self.balloon_types}
        for index, balloon in enumerate(self.balloon_types):
            # a type reachable from its own components (not directly: that is checked per type)
            seen: set[str] = set()
            stack = [p for p in parts.get(balloon.name, []) if p != balloon.name]
            while stack:
                current = stack.pop()
                if current == balloon.name:
                    yield at(
                        self,
                        "balloon_types",
                        f"invalid value {quote(balloon.name)}: components form a cycle",
                        index,
                        "components",
                    )
                    break
                if current not in seen:
                    seen.add(current)
                    stack.extend(parts.get(current, []))

    def undefined_cpu_classes(self, control: ControlConfig) -> list[str]:
        """Warnings (the reference only warns): ``idleCPUClass`` and ``cpuClass`` values that
        name no class of ``cpuClasses`` or ``control.cpu.classes``, with their paths."""
        known = cpu_class_names(self.cpu_classes, control)
        out = []
        if self.idle_cpu_class and self.idle_cpu_class not in known:
            out.append(f"{key_of(type(self), 'idle_cpu_class')}: {quote(self.idle_cpu_class)}")
        for index, balloon in enumerate(self.balloon_types):
            if balloon.cpu_class and balloon.cpu_class not in known:
                out.append(f"balloonTypes[{index}].cpuClass: {quote(balloon.cpu_class)}")
        return out
