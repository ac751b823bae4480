"""The balloon types as the policy uses them: the config expanded with the built-in types, the
reserved CPUs and every inherited option resolved (``reference-balloons.md`` §1.4 step 3, §2).

Building a :class:`Catalog` also does the checks that need the machine: a reserved cpuset must
lie inside the available CPUs. Refusals raise :class:`CatalogError` naming the config path.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import attrs

from nrirp.domain.config import (
    ControlConfig,
    CPUPriority,
    LoadClass,
    PrivilegedAnnotationsConfig,
    SchedulingClass,
)
from nrirp.domain.config.balloons import (
    DEFAULT,
    PODRESOURCEAPI_PREFIX,
    RESERVED,
    BalloonsPolicySpec,
    BalloonType,
)
from nrirp.domain.config.derived import PerConfig
from nrirp.domain.config.enums import ComponentCreation, CoreTypePreference, MemoryKind
from nrirp.domain.config.policy_checks import cpu_class_names
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.matching import ContainerPredicate, GlobSet, NamespaceFilter
from nrirp.domain.policies.balloons.cputree import LEVEL_OF_CONFIG, Level
from nrirp.domain.policies.balloons.requests import compile_match
from nrirp.domain.topology import Machine, MemoryType

KUBE_SYSTEM = "kube-system"
RESERVED_CPUS = "reserved CPUs"
ISOLATED_CPUS = "isolated CPUs"
PERFORMANCE_CORES = "performance cores"
EFFICIENT_CORES = "efficient cores"
LOADED = "loaded-"
"""Prefix of the virtual device of a load level (``loaded-core``, ``loaded-l2cache``)."""
DEFAULT_CLASS = "default"
"""The CPU class used when a balloon type or ``idleCPUClass`` names none, if it is defined."""

_PRIORITY_ORDER = (CPUPriority.HIGH, CPUPriority.NORMAL, CPUPriority.LOW, CPUPriority.NONE)
_MEMORY = {MemoryKind.DRAM: MemoryType.DRAM, MemoryKind.PMEM: MemoryType.PMEM}
_MEMORY[MemoryKind.HBM] = MemoryType.HBM


class CatalogError(Exception):
    """The configuration cannot be used on this machine (the message names the path)."""


@attrs.frozen(eq=False)
class BalloonKind:
    """One balloon type with everything resolved. ``position`` is its place in the list,
    the order types are matched in and the tie-break of pre-creation."""

    name: str
    position: int
    source: BalloonType
    min_cpus: int
    max_cpus: int
    min_balloons: int
    max_balloons: int
    priority: CPUPriority
    namespaces: tuple[str, ...]
    namespace_matcher: GlobSet
    """``namespaces`` compiled (matched at a cost independent of their number)."""
    expression_matchers: tuple[ContainerPredicate, ...]
    """The type's ``matchExpressions`` compiled, in order."""
    pin_memory: bool
    memory_types: frozenset[MemoryType]
    """Empty: the machine's default types."""
    spread: bool
    balancing: bool
    hide_hyperthreads: bool
    cpu_class: str | None
    loads: tuple[LoadClass, ...]
    share_level: Level | None
    close: tuple[str, ...]
    """Devices this type prefers to be close to, in priority order."""
    far: tuple[str, ...]
    """Devices it prefers to be far from, in priority order."""
    scheduling_class: SchedulingClass | None
    show_in_nrt: bool
    components: tuple[str, ...]
    creation: ComponentCreation

    @property
    def is_composite(self) -> bool:
        return bool(self.components)

    @property
    def is_reserved(self) -> bool:
        return self.name == RESERVED

    @property
    def load_levels(self) -> tuple[str, ...]:
        """Names of the loaded-level devices of this type's loads (one per level)."""
        return tuple(dict.fromkeys(LOADED + str(c.level) for c in self.loads))

    def limit(self, cpus: int) -> int:
        """``cpus`` clamped down to ``maxCPUs`` (when set), then up to ``minCPUs``."""
        if self.max_cpus > 0:
            cpus = min(cpus, self.max_cpus)
        return max(cpus, self.min_cpus)


@attrs.frozen(eq=False)
class Catalog:
    """The expanded types of one configuration on one machine."""

    spec: BalloonsPolicySpec
    kinds: tuple[BalloonKind, ...]
    by_name: Mapping[str, BalloonKind]
    allowed: int
    """The CPUs the policy may use (``availableResources`` ∩ online)."""
    reserved: int
    """The reserved cpuset (empty for an amount)."""
    isolated: int
    """Kernel-isolated CPUs among the allowed ones."""
    idle_cpu_class: str | None
    pin_cpu: bool
    preserve: tuple[ContainerPredicate, ...] = ()
    """``preserve.matchExpressions`` compiled."""
    privileged: NamespaceFilter = attrs.field(factory=lambda: NamespaceFilter(None))
    """Where the privileged annotations are allowed (``privilegedAnnotations``)."""

    @property
    def reserved_kind(self) -> BalloonKind:
        return self.by_name[RESERVED]

    @property
    def default_kind(self) -> BalloonKind:
        return self.by_name[DEFAULT]

    def creation_order(self) -> list[BalloonKind]:
        """Types in pre-creation order: by priority high, normal, low, none; then list order."""
        return sorted(self.kinds, key=lambda k: (_PRIORITY_ORDER.index(k.priority), k.position))

    def reachable(self, name: str) -> set[str]:
        """The type and every type reachable from it through components."""
        seen: set[str] = set()
        stack = [name]
        while stack:
            current = stack.pop()
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self.by_name[current].components)
        return seen


def build_catalog(
    spec: BalloonsPolicySpec,
    control: ControlConfig,
    machine: Machine,
    privileged: PrivilegedAnnotationsConfig | None = None,
) -> Catalog:
    """Expand ``spec`` for ``machine``; raises :class:`CatalogError` for what the reference
    refuses once it knows the CPUs. Namespaces and match expressions are compiled here, once
    per configuration."""
    allowed = _allowed(spec, machine)
    reserved = 0
    cpu = spec.reserved_resources.cpu
    reserved_amount: int | None = None
    if cpu is not None and cpu.cpuset is not None:
        reserved = allowed & ~cpu.cpuset.bits if cpu.exclude else cpu.cpuset.bits
        outside = reserved & ~allowed
        if outside:
            raise CatalogError(
                f"reservedResources.cpu: the reserved CPUs {_text(reserved)} are not all"
                f" available (CPUs {_text(outside)} are outside the available CPUs"
                f" {_text(allowed)})"
            )
    elif cpu is not None and cpu.amount is not None:
        reserved_amount = max(math.ceil(cpu.amount.milli_value() / 1000), 0)
    lists = compiled_lists(spec, privileged)
    known_classes = cpu_class_names(spec.cpu_classes, control)
    default_class = DEFAULT_CLASS if DEFAULT_CLASS in known_classes else None
    scheduling: dict[str, SchedulingClass] = {}
    for cls in spec.scheduling_classes:
        scheduling.setdefault(cls.name, cls)
    loads: dict[str, LoadClass] = {}
    for load in spec.load_classes:
        loads.setdefault(load.name, load)
    types = spec.effective_balloon_types()
    close_of = {t.name: _close(t, spec, reserved) for t in types}
    preferred: list[str] = []
    for t in types:
        preferred += [d for d in close_of[t.name] if not d.startswith(PODRESOURCEAPI_PREFIX)]
    preferred = list(dict.fromkeys(preferred))
    isolated = machine.isolated.bits & allowed
    kinds: list[BalloonKind] = []
    for position, t in enumerate(types):
        kind_loads = tuple(loads[name] for name in t.loads if name in loads)
        far = [ISOLATED_CPUS] if isolated else []
        far += [d for d in preferred if d not in close_of[t.name]]
        far += list(dict.fromkeys(LOADED + str(c.level) for c in kind_loads))
        min_cpus, max_cpus = t.min_cpus, t.max_cpus
        min_balloons, max_balloons = t.min_balloons, t.max_balloons
        priority = t.allocator_priority
        namespaces, namespace_matcher = lists.namespaces[t.name]
        if t.name == RESERVED:
            min_balloons = max_balloons = 1
            if reserved:
                if min_cpus == 0:
                    min_cpus = min(reserved.bit_count(), max(max_cpus, 0))
                priority = CPUPriority.NORMAL
            elif reserved_amount is not None:
                min_cpus = reserved_amount
        share = t.share_idle_cpus_in_same
        kinds.append(
            BalloonKind(
                name=t.name,
                position=position,
                source=t,
                min_cpus=min_cpus,
                max_cpus=max_cpus,
                min_balloons=min_balloons,
                max_balloons=max_balloons,
                priority=priority,
                namespaces=namespaces,
                namespace_matcher=namespace_matcher,
                expression_matchers=lists.expressions[t.name],
                pin_memory=spec.pin_memory if t.pin_memory is None else t.pin_memory,
                memory_types=frozenset(_MEMORY[m] for m in t.memory_types),
                spread=_inherit(
                    t.prefer_spread_on_physical_cores, spec.prefer_spread_on_physical_cores
                ),
                balancing=_inherit(
                    t.allocator_topology_balancing, spec.allocator_topology_balancing
                ),
                hide_hyperthreads=bool(t.hide_hyperthreads),
                cpu_class=t.cpu_class or default_class,
                loads=kind_loads,
                share_level=None if share is None else LEVEL_OF_CONFIG[share],
                close=close_of[t.name],
                far=tuple(dict.fromkeys(far)),
                scheduling_class=(
                    scheduling.get(t.scheduling_class) if t.scheduling_class else None
                ),
                show_in_nrt=_inherit(t.show_containers_in_nrt, spec.show_containers_in_nrt),
                components=tuple(c.balloon_type for c in t.components),
                creation=t.component_creation or ComponentCreation.ALL,
            )
        )
    return Catalog(
        spec=spec,
        kinds=tuple(kinds),
        by_name={k.name: k for k in kinds},
        allowed=allowed,
        reserved=reserved,
        isolated=isolated,
        idle_cpu_class=spec.idle_cpu_class or default_class,
        pin_cpu=spec.pin_cpu,
        preserve=lists.preserve,
        privileged=lists.privileged,
    )


@attrs.frozen(eq=False)
class CompiledLists:
    """The lists of one configuration compiled, per type name: its namespaces (the reserved
    type's with kube-system and ``reservedPoolNamespaces``) and their matcher, its match
    expressions; the ``preserve`` expressions; where privileged annotations are allowed."""

    namespaces: Mapping[str, tuple[tuple[str, ...], GlobSet]]
    expressions: Mapping[str, tuple[ContainerPredicate, ...]]
    preserve: tuple[ContainerPredicate, ...]
    privileged: NamespaceFilter


def _compile_lists(
    spec: BalloonsPolicySpec, privileged: PrivilegedAnnotationsConfig | None
) -> CompiledLists:
    namespaces: dict[str, tuple[tuple[str, ...], GlobSet]] = {}
    expressions: dict[str, tuple[ContainerPredicate, ...]] = {}
    for t in spec.effective_balloon_types():
        names = t.namespaces
        if t.name == RESERVED:
            names = (*names, KUBE_SYSTEM, *spec.reserved_pool_namespaces)
        namespaces[t.name] = (names, GlobSet(names))
        expressions[t.name] = tuple(compile_match(e) for e in t.match_expressions)
    preserve = spec.preserve.match_expressions if spec.preserve is not None else ()
    return CompiledLists(
        namespaces=namespaces,
        expressions=expressions,
        preserve=tuple(compile_match(e) for e in preserve),
        privileged=NamespaceFilter(None if privileged is None else privileged.allowed_namespaces),
    )


compiled_lists = PerConfig(_compile_lists)
"""The lists of a configuration, compiled once (and ahead, by ``prepare_config``)."""


def _allowed(spec: BalloonsPolicySpec, machine: Machine) -> int:
    online = machine.online.bits
    cpu = spec.available_resources.cpu
    if cpu is None or cpu.cpuset is None:
        return online
    allowed = online & ~cpu.cpuset.bits if cpu.exclude else online & cpu.cpuset.bits
    if not allowed:
        raise CatalogError(
            f"availableResources.cpu: {cpu} leaves no online CPU (online: {machine.online})"
        )
    return allowed


def _close(t: BalloonType, spec: BalloonsPolicySpec, reserved: int) -> tuple[str, ...]:
    close = list(t.prefer_close_to_devices)
    if t.name == RESERVED and reserved:
        close.insert(0, RESERVED_CPUS)
    if t.prefer_isol_cpus:
        close.append(ISOLATED_CPUS)
    if t.prefer_core_type is CoreTypePreference.PERFORMANCE:
        close.append(PERFORMANCE_CORES)
    elif t.prefer_core_type is CoreTypePreference.EFFICIENT:
        close.append(EFFICIENT_CORES)
    return tuple(dict.fromkeys(close))


def _inherit(value: bool | None, default: bool) -> bool:
    return default if value is None else value


def _text(bits: int) -> str:
    return str(CPUSet(bits))
