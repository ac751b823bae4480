"""``BalloonsPolicy`` spec: containers run in balloons of CPUs that inflate and deflate."""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from nrirp.domain.config.control import ControlConfig
from nrirp.domain.config.cpu_class import CPUClass
from nrirp.domain.config.enums import (
    ComponentCreation,
    CoreTypePreference,
    CPUPriority,
    CPUTopologyLevel,
    IRQMode,
    LoadLevel,
    MemoryKind,
    TurboDomain,
)
from nrirp.domain.config.errors import Issue, quote
from nrirp.domain.config.expression import ContainerMatch, Expression
from nrirp.domain.config.keys import ref
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

    ``maxCPUs``: 0 means no limit and -1 forbids CPUs of its own; ``maxBalloons``: 0 means no
    limit."""

    name: str = attrs.field(metadata=ref("name"))
    components: tuple[BalloonComponent, ...] = attrs.field(default=(), metadata=ref("components"))
    component_creation: ComponentCreation = attrs.field(
        default=ComponentCreation.ALL, metadata=ref("componentCreation")
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
    irq_claim: bool = attrs.field(default=False, metadata=ref("irqClaim"))
    irq_mode: IRQMode | None = attrs.field(default=None, metadata=ref("irqMode"))

    def config_problems(self) -> Iterator[Issue]:
        if not self.name:
            yield at(self, "name", "invalid value '': a name is required")
        yield from check_range(self, "min_cpus", 0)
        yield from check_range(self, "max_cpus", -1)
        if self.max_cpus > 0 and self.min_cpus > self.max_cpus:
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
        if len(set(self.memory_types)) != len(self.memory_types):
            yield at(self, "memory_types", "a memory type is listed more than once")
        if self.group_by is not None and not _GROUP_BY.fullmatch(self.group_by):
            yield at(
                self,
                "group_by",
                f"invalid value {quote(self.group_by)}: every '${{' needs a closing '}}'",
            )
        yield from check_names_listed(self, "namespaces", self.namespaces)
        yield from check_names_listed(self, "loads", self.loads)
        for index, device in enumerate(self.prefer_close_to_devices):
            if not _is_device_reference(device):
                yield at(
                    self,
                    "prefer_close_to_devices",
                    f"invalid value {quote(device)}: expected a device path or"
                    f" '{PODRESOURCEAPI_PREFIX}<resource glob>'",
                    index,
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


def _is_device_reference(text: str) -> bool:
    if text.startswith(PODRESOURCEAPI_PREFIX):
        return len(text) > len(PODRESOURCEAPI_PREFIX)
    return text.startswith("/")


BUILTIN_RESERVED = BalloonType(name=RESERVED, min_balloons=1, max_balloons=1)
"""The ``reserved`` type used when the config does not define one: a single balloon on the
reserved CPUs for kube-system and ``reservedPoolNamespaces``."""

BUILTIN_DEFAULT = BalloonType(name=DEFAULT, min_balloons=1, max_balloons=1)
"""The ``default`` type used when the config does not define one: the catch-all balloon."""


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
        """The types in matching order: ``reserved`` first, the configured ones, ``default``
        last; built-in definitions stand in for ``reserved``/``default`` when not configured."""
        by_name = {t.name: t for t in self.balloon_types}
        middle = tuple(t for t in self.balloon_types if t.name not in (RESERVED, DEFAULT))
        return (
            by_name.get(RESERVED, BUILTIN_RESERVED),
            *middle,
            by_name.get(DEFAULT, BUILTIN_DEFAULT),
        )

    def config_problems(self) -> Iterator[Issue]:
        yield from check_reserved_cpu(self)
        yield from check_names_listed(
            self, "reserved_pool_namespaces", self.reserved_pool_namespaces
        )
        yield from check_names_listed(self, "controllable_interrupts", self.controllable_interrupts)
        yield from check_unique_names(self, "balloon_types", self.balloon_types)
        yield from check_unique_names(self, "load_classes", self.load_classes)
        yield from check_unique_names(self, "scheduling_classes", self.scheduling_classes)
        yield from check_unique_names(self, "cpu_classes", self.cpu_classes)
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

    def cross_check(self, control: ControlConfig) -> Iterator[Issue]:
        """References to CPU classes defined in ``cpuClasses`` or ``control.cpu.classes``."""
        known = cpu_class_names(self.cpu_classes, control)
        yield from check_reference(self, "idle_cpu_class", self.idle_cpu_class, known, "CPU class")
        for index, balloon in enumerate(self.balloon_types):
            yield from check_reference(
                self,
                "balloon_types",
                balloon.cpu_class,
                known,
                "CPU class",
                index,
                "cpuClass",
            )
