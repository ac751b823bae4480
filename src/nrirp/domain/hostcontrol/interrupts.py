"""Interrupt affinity: which CPUs each controllable interrupt may be delivered to.

A policy describes what it wants in an :class:`InterruptPlan` (part of its
:class:`~nrirp.domain.hostcontrol.assignment.HostAssignment`); :func:`plan_affinities` turns it
into an affinity per interrupt, given the interrupts the host has and the affinity each had
before nrirp touched it. Each controllable interrupt gets the first rule that applies (the
balloons reference's order, which covers topology-aware's "keep interrupts off exclusive and
isolated CPUs" as its fourth rule):

1. the union of the CPUs of the claims naming it (balloons' ``irqClaim``);
2. else the union of the sink CPUs (balloons with ``irqMode: sink``);
3. else, if its original affinity does not meet the allowed CPUs, it is left alone;
4. else, if some CPUs are to be avoided (exclusive and isolated CPUs, ``irqMode: isolate``
   balloons), its original affinity plus the allowed CPUs, minus those;
5. else the allowed CPUs when ``fill_allowed`` (balloons with IRQ rules), or left alone.

"Left alone" means its original affinity (nrirp gives back what it changed). An interrupt is
controllable when one of ``controllable`` (globs, ``*`` for all) matches its number or its
description (the device names of ``/proc/interrupts``); a claim matches the same way. The
default affinity for new interrupts follows rule 4 (or 5) for a notional interrupt on every
allowed CPU.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.matching import glob_match

EMPTY = CPUSet()


@attrs.frozen
class Interrupt:
    """A host interrupt: its number, its description (``/proc/interrupts``' device names) and
    its affinity before nrirp changed it."""

    number: int
    description: str
    affinity: CPUSet


@attrs.frozen
class IrqClaim:
    """Interrupts (numbers or description globs) to be delivered to ``cpus``."""

    patterns: tuple[str, ...]
    cpus: CPUSet


@attrs.frozen
class InterruptPlan:
    """What a policy wants of interrupts (see the module docstring for the rules)."""

    allowed: CPUSet
    controllable: tuple[str, ...] = ("*",)
    avoid: CPUSet = EMPTY
    claims: tuple[IrqClaim, ...] = ()
    sinks: CPUSet = EMPTY
    fill_allowed: bool = False


@attrs.frozen
class Affinities:
    """An affinity per interrupt that should not have its original one, and the default
    affinity for new interrupts (``None``: the original default)."""

    irqs: Mapping[int, CPUSet] = attrs.field(default=MappingProxyType({}))
    default: CPUSet | None = None


def _matches(patterns: Sequence[str], irq: Interrupt) -> bool:
    number = str(irq.number)
    names = irq.description.split(", ") if irq.description else []
    for pattern in patterns:
        if glob_match(pattern, number) or glob_match(pattern, irq.description):
            return True
        if any(glob_match(pattern, name) for name in names):
            return True
    return False


def affinity_for(plan: InterruptPlan, irq: Interrupt) -> CPUSet | None:
    """The affinity ``irq`` should have, ``None`` to leave it as it was (not controllable, or
    no rule changes it)."""
    if not _matches(plan.controllable, irq):
        return None
    claimed = EMPTY
    for claim in plan.claims:
        if _matches(claim.patterns, irq):
            claimed = claimed | claim.cpus
    if claimed:
        return claimed
    if plan.sinks:
        return plan.sinks
    if not irq.affinity & plan.allowed:
        return None
    if plan.avoid:
        wanted = (irq.affinity | plan.allowed) - plan.avoid
        return wanted or None
    return plan.allowed if plan.fill_allowed else None


def plan_affinities(plan: InterruptPlan | None, interrupts: Sequence[Interrupt]) -> Affinities:
    """The affinities ``plan`` gives ``interrupts`` (only those that differ from the
    original); no plan gives every interrupt back its original affinity."""
    if plan is None:
        return Affinities()
    out: dict[int, CPUSet] = {}
    for irq in interrupts:
        wanted = affinity_for(plan, irq)
        if wanted is not None and wanted != irq.affinity:
            out[irq.number] = wanted
    default = None
    if plan.sinks:
        default = plan.sinks
    elif plan.avoid:
        default = (plan.allowed - plan.avoid) or None
    elif plan.fill_allowed:
        default = plan.allowed
    return Affinities(MappingProxyType(out), default)
