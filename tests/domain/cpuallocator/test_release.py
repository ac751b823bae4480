"""release(): what is given back, least valuable first."""

from __future__ import annotations

import pytest

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine

from .machines import catalogue_machine, make_machine

P = CPUPriority


def three_cores() -> Machine:
    return make_machine(["0-1", "2-3", "4-5"])


def mixed() -> Machine:
    return make_machine(
        [f"{i}-{i + 1}" for i in range(0, 8, 2)], epp={"0-3": "performance", "4-7": "power"}
    )


CASES = [
    ("lonely thread first", three_cores, "0-2", 1, P.NONE, "2"),
    ("a whole core rather than split two", three_cores, "0-3", 2, P.NONE, "2-3"),
    ("a whole core back, not two halves", three_cores, "0-2,4-5", 2, P.NONE, "4-5"),
    ("whole package stays", lambda: catalogue_machine("box-16"), "0-9", 2, P.NONE, "8-9"),
    (
        "HIGH drops E-cores first",
        lambda: catalogue_machine("hybrid-desktop"),
        "0-3,16-17",
        2,
        P.HIGH,
        "16-17",
    ),
    (
        "HIGH drops E-cores, then a thread",
        lambda: catalogue_machine("hybrid-desktop"),
        "0-3,16-17",
        3,
        P.HIGH,
        "3,16-17",
    ),
    (
        "LOW drops P-cores first",
        lambda: catalogue_machine("hybrid-desktop"),
        "0-1,16-19",
        2,
        P.LOW,
        "0-1",
    ),
    ("HIGH drops low-priority CPUs first", mixed, "0-7", 4, P.HIGH, "4-7"),
    ("LOW drops high-priority CPUs first", mixed, "0-7", 4, P.LOW, "0-3"),
    ("NONE: whole cores by id", mixed, "0-7", 4, P.NONE, "4-7"),
    ("ids that are not CPUs go first", three_cores, "0-3,64-65", 2, P.NONE, "64-65"),
    ("more unknown ids than released", three_cores, "0-1,64-66", 2, P.NONE, "65-66"),
]


@pytest.mark.parametrize(
    ("machine", "cpus", "count", "priority", "expected"),
    [pytest.param(*case[1:], id=str(case[0])) for case in CASES],
)
def test_release(
    machine: object, cpus: str, count: int, priority: CPUPriority, expected: str
) -> None:
    allocator = CPUAllocator(machine())  # type: ignore[operator]
    got = allocator.release(CPUSet.parse(cpus), count, priority=priority)
    assert got == CPUSet.parse(expected), f"got {got}, expected {expected}"


def test_release_is_the_complement_of_allocating_what_stays() -> None:
    m = catalogue_machine("server-4s-144")
    allocator = CPUAllocator(m)
    held = allocator.allocate(m.online, 40)
    released = allocator.release(held, 13)
    assert released | allocator.allocate(held, 27) == held
    assert released.isdisjoint(allocator.allocate(held, 27))


def test_release_nothing_and_everything() -> None:
    allocator = CPUAllocator(three_cores())
    cpus = CPUSet.parse("0-3")
    assert allocator.release(cpus, 0) == CPUSet()
    assert allocator.release(cpus, 4) == cpus


def test_release_more_than_held_names_the_set() -> None:
    allocator = CPUAllocator(three_cores())
    with pytest.raises(
        CPUAllocationError, match=r"cannot release 5 CPUs from '0-3': it holds only 4"
    ):
        allocator.release(CPUSet.parse("0-3"), 5)
