"""Interrupt affinity rules: claims, sinks, avoided CPUs, controllable globs."""

from __future__ import annotations

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.interrupts import (
    Interrupt,
    InterruptPlan,
    IrqClaim,
    affinity_for,
    plan_affinities,
)

ALL = CPUSet.parse("0-15")


def irq(number: int, cpus: str = "0-15", description: str = "") -> Interrupt:
    return Interrupt(number, description, CPUSet.parse(cpus))


def test_exclusive_and_isolated_cpus_are_avoided() -> None:
    plan = InterruptPlan(allowed=ALL, avoid=CPUSet.parse("2-3,15"))
    assert affinity_for(plan, irq(24)) == CPUSet.parse("0-1,4-14")
    # an interrupt pinned to avoided CPUs only moves to the allowed rest
    assert affinity_for(plan, irq(25, "2")) == CPUSet.parse("0-1,4-14")
    # outside the allowed CPUs: left alone
    outside = InterruptPlan(allowed=CPUSet.parse("0-7"), avoid=CPUSet.of(2))
    assert affinity_for(outside, irq(26, "8-15")) is None
    # nothing to avoid and no rules: left alone (topology-aware without exclusive grants)
    assert affinity_for(InterruptPlan(allowed=ALL), irq(27)) is None
    out = plan_affinities(plan, (irq(24), irq(28, "0-1,4-14")))
    assert dict(out.irqs) == {24: CPUSet.parse("0-1,4-14")}  # 28 already avoids them
    assert out.default == CPUSet.parse("0-1,4-14")


def test_claims_then_sinks_then_isolation_balloons_order() -> None:
    plan = InterruptPlan(
        allowed=ALL,
        claims=(IrqClaim(("nvme*",), CPUSet.parse("4-5")), IrqClaim(("30",), CPUSet.of(6))),
        sinks=CPUSet.parse("8-9"),
        avoid=CPUSet.parse("10-11"),
        fill_allowed=True,
    )
    assert affinity_for(plan, irq(30, description="nvme0q1")) == CPUSet.parse("4-6")
    assert affinity_for(plan, irq(31, description="eth0-rx-0")) == CPUSet.parse("8-9")
    no_sink = InterruptPlan(allowed=ALL, avoid=CPUSet.parse("10-11"), fill_allowed=True)
    assert affinity_for(no_sink, irq(31)) == ALL - CPUSet.parse("10-11")
    assert affinity_for(InterruptPlan(allowed=CPUSet.parse("0-7"), fill_allowed=True), irq(32)) == (
        CPUSet.parse("0-7")
    )


def test_only_controllable_interrupts_move() -> None:
    plan = InterruptPlan(allowed=ALL, avoid=CPUSet.of(0), controllable=("eth*", "4?"))
    assert affinity_for(plan, irq(10, description="eth0, eth0-tx")) == CPUSet.parse("1-15")
    assert affinity_for(plan, irq(42)) == CPUSet.parse("1-15")
    assert affinity_for(plan, irq(11, description="nvme0q0")) is None
    assert plan_affinities(None, (irq(10),)).irqs == {}
