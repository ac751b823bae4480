"""What the balloons ask of the host: CPU classes on their CPUs, interrupt affinity.

As the reference: a balloon's CPUs carry its type's ``cpuClass`` (components carry their own;
a composite type has none), the CPUs in no balloon carry ``idleCPUClass`` (either falls back to
the class named ``default``); ``turboDomain`` scopes ``turboPriority``. When some type uses
``irqClaim`` or ``irqMode``, every controllable interrupt follows the balloons: claimed ones go
to the claiming balloons' CPUs, else to the sink balloons', else away from the isolate
balloons' CPUs, else to the allowed CPUs (``nrirp.domain.hostcontrol.interrupts``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from nrirp.domain.config.balloons import BalloonsPolicySpec
from nrirp.domain.config.control import ControlConfig
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.assignment import HostAssignment
from nrirp.domain.hostcontrol.classes import ClassSettings, resolve_classes
from nrirp.domain.hostcontrol.interrupts import InterruptPlan, IrqClaim
from nrirp.domain.policies.balloons.catalog import Catalog
from nrirp.domain.policies.balloons.engine import Engine


def balloon_assignment(
    spec: BalloonsPolicySpec,
    control: ControlConfig,
    catalog: Catalog,
    engine: Engine,
    classes: Mapping[str, ClassSettings] | None = None,
) -> HostAssignment:
    """The host assignment of the balloons as they are now (``classes``: the resolved
    ``cpuClasses``, when the caller keeps them)."""
    bits: dict[str, int] = {}
    used = 0
    claims: list[IrqClaim] = []
    sinks = avoid = 0
    for balloon in engine.all_balloons():
        if balloon.components:
            continue
        used |= balloon.cpus
        kind = balloon.kind
        if kind.cpu_class is not None and balloon.cpus:
            bits[kind.cpu_class] = bits.get(kind.cpu_class, 0) | balloon.cpus
        source = kind.source
        if source.irq_claim and balloon.cpus:
            claims.append(IrqClaim(tuple(source.irq_claim), CPUSet(balloon.cpus)))
        if source.irq_mode == "sink":
            sinks |= balloon.cpus
        elif source.irq_mode == "isolate":
            avoid |= balloon.cpus
    idle = catalog.allowed & ~used
    if catalog.idle_cpu_class is not None and idle:
        name = catalog.idle_cpu_class
        bits[name] = bits.get(name, 0) | idle
    interrupts = None
    if any(k.source.irq_claim or k.source.irq_mode for k in catalog.kinds):
        interrupts = InterruptPlan(
            allowed=CPUSet(catalog.allowed),
            controllable=spec.controllable_interrupts,
            avoid=CPUSet(avoid),
            claims=tuple(claims),
            sinks=CPUSet(sinks),
            fill_allowed=True,
        )
    return HostAssignment(
        cpu_classes=MappingProxyType({name: CPUSet(b) for name, b in bits.items()}),
        classes=classes if classes is not None else resolve_classes(spec.cpu_classes, control),
        turbo_domain=spec.turbo_domain,
        interrupts=interrupts,
    )
