"""Errors: what the messages say, and edge counts."""

from __future__ import annotations

import pytest

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet

from .machines import catalogue_machine

P = CPUPriority


def test_too_few_cpus_names_count_set_and_usable() -> None:
    allocator = CPUAllocator(catalogue_machine("box-16"))
    with pytest.raises(CPUAllocationError) as info:
        allocator.allocate(CPUSet.parse("0-3"), 5)
    assert str(info.value) == "cannot allocate 5 CPUs of any priority from '0-3': only 4 usable"


def test_e_cores_are_named_as_the_reason() -> None:
    allocator = CPUAllocator(catalogue_machine("hybrid-desktop"))
    with pytest.raises(CPUAllocationError) as info:
        allocator.allocate(CPUSet.parse("0-3,16-23"), 6, priority=P.NORMAL)
    assert str(info.value) == (
        "cannot allocate 6 CPUs of normal priority from '0-3,16-23': only 4 usable "
        "(E-cores '16-23' are not used for normal priority)"
    )


def test_high_priority_from_e_cores_only() -> None:
    allocator = CPUAllocator(catalogue_machine("hybrid-desktop"))
    with pytest.raises(CPUAllocationError, match=r"1 CPU of high priority .* only 0 usable"):
        allocator.allocate(CPUSet.parse("16-23"), 1, priority=P.HIGH)
    # the same CPUs serve low and unprioritized requests
    assert allocator.allocate(CPUSet.parse("16-23"), 1, priority=P.LOW) == CPUSet.of(16)
    assert allocator.allocate(CPUSet.parse("16-23"), 1) == CPUSet.of(16)


def test_ids_that_are_not_cpus_are_named() -> None:
    allocator = CPUAllocator(catalogue_machine("sparse-8s-4096"))
    available = CPUSet.parse("510-515")  # 512-515 fall in the gap after package 0
    with pytest.raises(CPUAllocationError) as info:
        allocator.allocate(available, 3)
    assert "only 2 usable ('512-515' are not online CPUs of this machine)" in str(info.value)
    assert allocator.allocate(available, 2) == CPUSet.parse("510-511")


def test_empty_set() -> None:
    allocator = CPUAllocator(catalogue_machine("box-16"))
    with pytest.raises(CPUAllocationError, match=r"from the empty set: only 0 usable"):
        allocator.allocate(CPUSet(), 1)


@pytest.mark.parametrize("count", [-1, True, 1.5, "2"])
def test_bad_count(count: object) -> None:
    allocator = CPUAllocator(catalogue_machine("box-16"))
    with pytest.raises(CPUAllocationError, match="CPU count must be a non-negative integer"):
        allocator.allocate(CPUSet.parse("0-3"), count)  # type: ignore[arg-type]
    with pytest.raises(CPUAllocationError, match="CPU count must be a non-negative integer"):
        allocator.release(CPUSet.parse("0-3"), count)  # type: ignore[arg-type]


def test_error_is_a_value_error() -> None:
    assert issubclass(CPUAllocationError, ValueError)


def test_zero_and_all() -> None:
    allocator = CPUAllocator(catalogue_machine("box-16"))
    assert allocator.allocate(CPUSet.parse("0-3"), 0) == CPUSet()
    assert allocator.allocate(CPUSet(), 0) == CPUSet()
    assert allocator.allocate(CPUSet.parse("3,9"), 2) == CPUSet.parse("3,9")


def test_usable() -> None:
    allocator = CPUAllocator(catalogue_machine("hybrid-desktop"))
    available = CPUSet.parse("0-3,16-17,99")
    assert allocator.usable(available, P.HIGH) == CPUSet.parse("0-3")
    assert allocator.usable(available, P.NORMAL) == CPUSet.parse("0-3")
    assert allocator.usable(available, P.LOW) == CPUSet.parse("0-3,16-17")
    assert allocator.usable(available) == CPUSet.parse("0-3,16-17")


def test_machine_property() -> None:
    m = catalogue_machine("box-16")
    assert CPUAllocator(m).machine is m


def test_priority_by_its_config_spelling() -> None:
    allocator = CPUAllocator(catalogue_machine("hybrid-desktop"))
    everything = allocator.machine.online
    assert allocator.allocate(everything, 2, priority="low") == CPUSet.parse("16-17")  # type: ignore[arg-type]
    assert allocator.usable(everything, "high") == CPUSet.parse("0-15")  # type: ignore[arg-type]
    with pytest.raises(CPUAllocationError, match=r"unknown CPU priority 'urgent' \(known: high"):
        allocator.allocate(everything, 1, priority="urgent")  # type: ignore[arg-type]
    with pytest.raises(CPUAllocationError, match=r"unknown CPU priority 'urgent'"):
        allocator.release(CPUSet.parse("0-3"), 1, priority="urgent")  # type: ignore[arg-type]
