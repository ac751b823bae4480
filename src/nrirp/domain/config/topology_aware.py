"""``TopologyAwarePolicy`` spec: hierarchical pools following the hardware topology."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from types import MappingProxyType

import attrs

from nrirp.domain.config.control import ControlConfig
from nrirp.domain.config.cpu_class import CPUClass
from nrirp.domain.config.enums import BurstableLevel, CPUPriority, QoSClass
from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.policy_checks import (
    check_names_listed,
    check_reserved_cpu,
    cpu_class_names,
)
from nrirp.domain.config.resources import ResourceConstraints
from nrirp.domain.config.scheduling import SchedulingClass
from nrirp.domain.config.validation import check_reference, check_unique_names

_NO_NAMES: Mapping[str, str] = MappingProxyType({})
_NO_QOS_NAMES: Mapping[QoSClass, str] = MappingProxyType({})


@attrs.frozen(kw_only=True)
class TopologyAwarePolicySpec:
    """Spec of the ``topology-aware`` policy (kind ``TopologyAwarePolicy``)."""

    pin_cpu: bool = attrs.field(default=True, metadata=ref("pinCPU"))
    pin_memory: bool = attrs.field(default=True, metadata=ref("pinMemory"))
    prefer_isolated_cpus: bool = attrs.field(default=True, metadata=ref("preferIsolatedCPUs"))
    prefer_shared_cpus: bool = attrs.field(default=False, metadata=ref("preferSharedCPUs"))
    colocate_pods: bool = attrs.field(default=False, metadata=ref("colocatePods"))
    colocate_namespaces: bool = attrs.field(default=False, metadata=ref("colocateNamespaces"))
    reserved_pool_namespaces: tuple[str, ...] = attrs.field(
        default=(), metadata=ref("reservedPoolNamespaces")
    )
    available_resources: ResourceConstraints = attrs.field(
        factory=ResourceConstraints, metadata=ref("availableResources")
    )
    reserved_resources: ResourceConstraints = attrs.field(metadata=ref("reservedResources"))
    default_cpu_priority: CPUPriority = attrs.field(
        default=CPUPriority.NONE, metadata=ref("defaultCPUPriority")
    )
    unlimited_burstable: BurstableLevel = attrs.field(
        default=BurstableLevel.PACKAGE, metadata=ref("unlimitedBurstable")
    )
    scheduling_classes: tuple[SchedulingClass, ...] = attrs.field(
        default=(), metadata=ref("schedulingClasses")
    )
    namespace_scheduling_classes: Mapping[str, str] = attrs.field(
        default=_NO_NAMES, metadata=ref("namespaceSchedulingClasses")
    )
    pod_qos_scheduling_classes: Mapping[QoSClass, str] = attrs.field(
        default=_NO_QOS_NAMES, metadata=ref("podQoSSchedulingClasses")
    )
    cpu_classes: tuple[CPUClass, ...] = attrs.field(default=(), metadata=ref("cpuClasses"))
    shared_pool_cpu_class: str | None = attrs.field(
        default=None, metadata=ref("sharedPoolCPUClass")
    )
    reserved_pool_cpu_class: str | None = attrs.field(
        default=None, metadata=ref("reservedPoolCPUClass")
    )
    default_exclusive_cpu_class: str | None = attrs.field(
        default=None, metadata=ref("defaultExclusiveCPUClass")
    )
    controllable_interrupts: tuple[str, ...] = attrs.field(
        default=("*",), metadata=ref("controllableInterrupts")
    )

    def config_problems(self) -> Iterator[Issue]:
        yield from check_reserved_cpu(self)
        yield from check_names_listed(
            self, "reserved_pool_namespaces", self.reserved_pool_namespaces
        )
        yield from check_names_listed(self, "controllable_interrupts", self.controllable_interrupts)
        yield from check_unique_names(self, "scheduling_classes", self.scheduling_classes)
        yield from check_unique_names(self, "cpu_classes", self.cpu_classes)
        known = [c.name for c in self.scheduling_classes]
        for namespace, name in self.namespace_scheduling_classes.items():
            yield from check_reference(
                self, "namespace_scheduling_classes", name, known, "scheduling class", namespace
            )
        for qos, name in self.pod_qos_scheduling_classes.items():
            yield from check_reference(
                self, "pod_qos_scheduling_classes", name, known, "scheduling class", str(qos)
            )

    def cross_check(self, control: ControlConfig) -> Iterator[Issue]:
        """References to CPU classes defined in ``cpuClasses`` or ``control.cpu.classes``."""
        known = cpu_class_names(self.cpu_classes, control)
        for attribute in (
            "shared_pool_cpu_class",
            "reserved_pool_cpu_class",
            "default_exclusive_cpu_class",
        ):
            yield from check_reference(
                self, attribute, getattr(self, attribute), known, "CPU class"
            )
