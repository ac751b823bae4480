"""Classes a container is put in: scheduling, CPU (frequency/idle), RDT, block I/O; IRQs."""

from __future__ import annotations

import attrs

from nrirp.domain.config import ControlConfig, IOClass, SchedulingClass
from nrirp.domain.config import QoSClass as ConfigQoS
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.model import (
    IOPriority,
    IOPriorityClass,
    QOSClass,
    Scheduling,
    SchedulingPolicy,
)
from nrirp.domain.policies.topology_aware.config_index import ConfigIndex
from nrirp.domain.policies.topology_aware.preferences import (
    BLOCKIO_CLASS,
    CPU_CLASS,
    IRQ_AFFINITY,
    RDT_CLASS,
    SCHEDULING_CLASS,
    CPUKind,
    PolicyAnnotations,
)
from nrirp.domain.policy import PolicyError

_IO_CLASSES = {
    IOClass.NONE: IOPriorityClass.NONE,
    IOClass.RT: IOPriorityClass.REALTIME,
    IOClass.BE: IOPriorityClass.BEST_EFFORT,
    IOClass.IDLE: IOPriorityClass.IDLE,
}


@attrs.frozen
class Classes:
    """What the container gets besides CPUs and memory (``None``: nothing to set)."""

    scheduling_class: str | None = None
    scheduling: Scheduling | None = None
    io_priority: IOPriority | None = None
    cpu_class: str | None = None
    """Set by annotation; the pool default is applied once the kind is known."""
    rdt_class: str | None = None
    blockio_class: str | None = None
    irq_affinity: str | None = None


def _known(names: list[str] | set[str] | frozenset[str]) -> str:
    return ", ".join(sorted(names)) or "none are configured"


def scheduling_of(cls: SchedulingClass) -> tuple[Scheduling | None, IOPriority | None]:
    scheduling = None
    if (
        any(
            v is not None
            for v in (cls.policy, cls.nice, cls.priority, cls.runtime, cls.deadline, cls.period)
        )
        or cls.flags
    ):
        scheduling = Scheduling(
            policy=cls.policy or SchedulingPolicy.NONE,
            nice=cls.nice,
            priority=cls.priority,
            flags=tuple(str(f) for f in cls.flags),
            runtime=cls.runtime,
            deadline=cls.deadline,
            period=cls.period,
        )
    io = None
    if cls.io_class is not None or cls.io_priority is not None:
        io = IOPriority(
            io_class=_IO_CLASSES[cls.io_class or IOClass.BE], priority=cls.io_priority or 0
        )
    return scheduling, io


def choose_classes(
    spec: TopologyAwarePolicySpec,
    control: ControlConfig,
    *,
    namespace: str,
    qos: QOSClass,
    reader: PolicyAnnotations,
    index: ConfigIndex | None = None,
) -> Classes:
    """The container's classes; raises :class:`PolicyError` for a class that is not defined.
    ``index``: the configuration's (the policy keeps one; built here when not given)."""
    if index is None:
        index = ConfigIndex.of(spec, control)
    by_name = index.scheduling_classes
    sched_name = reader.raw(SCHEDULING_CLASS)
    source = "annotation scheduling-class"
    if sched_name is None:
        sched_name = spec.namespace_scheduling_classes.get(namespace)
        source = f"namespaceSchedulingClasses[{namespace}]"
    if sched_name is None:
        sched_name = spec.pod_qos_scheduling_classes.get(ConfigQoS(qos.value))
        source = f"podQoSSchedulingClasses[{qos.value}]"
    scheduling = io = None
    if sched_name is not None:
        cls = by_name.get(sched_name)
        if cls is None:
            raise PolicyError(
                f"scheduling class {sched_name!r} ({source}) is not defined "
                f"(schedulingClasses: {_known(set(by_name))})"
            )
        scheduling, io = scheduling_of(cls)

    cpu_class = reader.raw(CPU_CLASS)
    if cpu_class is not None:
        known = index.cpu_classes
        if cpu_class not in known:
            raise PolicyError(
                f"CPU class {cpu_class!r} (annotation cpu-class) is not defined "
                f"(cpuClasses / control.cpu.classes: {_known(known)})"
            )
        if qos is not QOSClass.GUARANTEED:
            raise PolicyError(
                f"CPU class {cpu_class!r} (annotation cpu-class) is only for "
                f"Guaranteed containers with exclusive CPUs; this one is {qos.value}"
            )

    rdt_names = index.rdt_classes
    rdt = reader.raw(RDT_CLASS)
    if rdt is not None and rdt_names and rdt not in rdt_names:
        raise PolicyError(
            f"RDT class {rdt!r} (annotation rdtclass) is not defined "
            f"(control.rdt: {_known(set(rdt_names))})"
        )
    if rdt is None and control.rdt.use_pod_qos_as_default_class and qos.value in rdt_names:
        rdt = qos.value

    blockio_names = index.blockio_classes
    blockio = reader.raw(BLOCKIO_CLASS)
    if blockio is not None and blockio_names and blockio not in blockio_names:
        raise PolicyError(
            f"block I/O class {blockio!r} (annotation blockioclass) is not defined "
            f"(control.blockio: {_known(blockio_names)})"
        )
    if (
        blockio is None
        and control.blockio.use_pod_qos_as_default_class
        and qos.value in blockio_names
    ):
        blockio = qos.value

    return Classes(
        scheduling_class=sched_name,
        scheduling=scheduling,
        io_priority=io,
        cpu_class=cpu_class,
        rdt_class=rdt,
        blockio_class=blockio,
        irq_affinity=reader.raw(IRQ_AFFINITY),
    )


def check_cpu_class(classes: Classes, kind: CPUKind) -> None:
    """Refuse a ``cpu-class`` annotation on a grant without exclusive CPUs (as the reference:
    a class is applied to CPUs the container has for itself)."""
    if classes.cpu_class is not None and kind not in EXCLUSIVE_KINDS:
        raise PolicyError(
            f"CPU class {classes.cpu_class!r} (annotation cpu-class) is only for "
            f"Guaranteed containers with exclusive CPUs; this one gets none ({kind.value})"
        )


EXCLUSIVE_KINDS = frozenset({CPUKind.EXCLUSIVE, CPUKind.ISOLATED, CPUKind.MIXED})


def default_cpu_class(spec: TopologyAwarePolicySpec, kind: CPUKind) -> str | None:
    """The configured CPU class of the pool part a container runs on."""
    if kind is CPUKind.RESERVED:
        return spec.reserved_pool_cpu_class
    if kind in (CPUKind.EXCLUSIVE, CPUKind.ISOLATED, CPUKind.MIXED):
        return spec.default_exclusive_cpu_class
    if kind is CPUKind.SHARED:
        return spec.shared_pool_cpu_class
    return None
