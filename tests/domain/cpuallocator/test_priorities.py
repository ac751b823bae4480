"""Priority classes: base frequency bins, EPP, hybrid core types; per package."""

from __future__ import annotations

import pytest

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocator, classify_priorities, epp_value
from nrirp.domain.cpuset import CPUSet

from .machines import CATALOGUE, catalogue_machine, make_machine

P = CPUPriority
CORES = [f"{i}-{i + 1}" for i in range(0, 16, 2)]


def classes(allocator: CPUAllocator) -> dict[str, str]:
    return {p.value: str(cpus) for p, cpus in allocator.priorities().items()}


def test_hybrid_p_cores_high_e_cores_low() -> None:
    allocator = CPUAllocator(catalogue_machine("hybrid-desktop"))
    assert classes(allocator) == {"high": "0-15", "normal": "", "low": "16-23"}
    assert allocator.priority_of(0) is P.HIGH
    assert allocator.priority_of(23) is P.LOW


def test_one_base_frequency_is_all_normal() -> None:
    allocator = CPUAllocator(catalogue_machine("server-112-pmem"))
    assert classes(allocator) == {"high": "", "normal": "0-111", "low": ""}


def test_frequency_bins_above_the_lowest_are_high() -> None:
    m = make_machine(CORES, base_khz={"0-3": 2_000_000, "4-7": 2_400_000, "8-15": 3_000_000})
    assert classes(CPUAllocator(m)) == {"high": "4-15", "normal": "0-3", "low": ""}


def test_unknown_frequency_stays_normal() -> None:
    m = make_machine(CORES, base_khz={"0-7": 2_000_000, "8-11": 3_000_000})
    assert classes(CPUAllocator(m)) == {"high": "8-11", "normal": "0-7,12-15", "low": ""}


def test_epp_lower_value_is_high_and_overrides_frequency() -> None:
    m = make_machine(
        CORES,
        base_khz={"0-7": 2_000_000, "8-15": 3_000_000},
        epp={"0-3": "performance", "4-11": "balance_performance", "12-15": "power"},
    )
    assert classes(CPUAllocator(m)) == {"high": "0-11", "normal": "", "low": "12-15"}


def test_one_epp_value_changes_nothing() -> None:
    m = make_machine(CORES, epp={"0-15": "balance_power"})
    assert classes(CPUAllocator(m)) == {"high": "", "normal": "0-15", "low": ""}


def test_unknown_epp_keeps_the_frequency_class() -> None:
    m = make_machine(
        CORES,
        base_khz={"0-7": 2_000_000, "8-15": 3_000_000},
        epp={"0-3": "performance", "4-7": "power", "8-15": "default"},
    )
    assert classes(CPUAllocator(m)) == {"high": "0-3,8-15", "normal": "", "low": "4-7"}


def test_classes_are_per_package() -> None:
    m = make_machine(
        CORES,
        packages=["0-7", "8-15"],
        base_khz={"0-7": 2_000_000, "8-11": 3_000_000, "12-15": 3_500_000},
    )
    # package 0 has one frequency (normal); package 1's lowest bin is 3.0 GHz
    assert classes(CPUAllocator(m)) == {"high": "12-15", "normal": "0-11", "low": ""}


def test_e_cores_are_low_whatever_their_epp() -> None:
    m = make_machine(
        ["0-1", "2-3", "4", "5"],
        efficient="4-5",
        epp={"0-1": "balance_performance", "2-3": "power", "4-5": "performance"},
    )
    assert classify_priorities(m) == {
        0: P.HIGH,
        1: P.HIGH,
        2: P.LOW,
        3: P.LOW,
        4: P.LOW,
        5: P.LOW,
    }


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("performance", 0),
        ("balance_performance", 128),
        ("balance_power", 192),
        ("power", 255),
        (" Power\n", 255),
        ("64", 64),
        ("256", None),
        ("default", None),
        ("", None),
        (None, None),
    ],
)
def test_epp_values(text: str | None, value: int | None) -> None:
    assert epp_value(text) == value


@pytest.mark.parametrize("name", CATALOGUE)
def test_classes_partition_the_online_cpus(name: str) -> None:
    m = catalogue_machine(name)
    sets = CPUAllocator(m).priorities()
    assert set(sets) == {P.HIGH, P.NORMAL, P.LOW}
    union = CPUSet()
    for cpus in sets.values():
        assert union.isdisjoint(cpus)
        union |= cpus
    assert union == m.online


def test_priorities_is_a_copy() -> None:
    allocator = CPUAllocator(catalogue_machine("box-16"))
    first = allocator.priorities()
    assert isinstance(first, dict)
    first.clear()  # type: ignore[attr-defined]
    assert allocator.priorities()[P.NORMAL] == CPUSet.parse("0-15")


def test_marked_performance_cores_next_to_cores_of_no_kind_are_high() -> None:
    # the kernel lists 0-7 as performance cores and 8-15 in no core-kind list
    m = make_machine(CORES, no_kind="8-15")
    assert classes(CPUAllocator(m)) == {"high": "0-7", "normal": "8-15", "low": ""}


def test_performance_marking_overrides_frequency_and_epp_but_not_e_cores() -> None:
    m = make_machine(
        ["0-1", "2-3", "4-5", "6", "7"],
        no_kind="4-5",
        efficient="6-7",
        base_khz={"0-3": 2_000_000, "4-5": 3_000_000, "6-7": 1_800_000},
        epp={"0-1": "power", "2-7": "performance"},
    )
    # 0-3 are marked performance cores: high whatever their frequency or EPP; 4-5 keep the
    # class of their frequency and EPP; E-cores stay low
    assert classify_priorities(m) == {
        0: P.HIGH,
        1: P.HIGH,
        2: P.HIGH,
        3: P.HIGH,
        4: P.HIGH,
        5: P.HIGH,
        6: P.LOW,
        7: P.LOW,
    }


def test_performance_marking_is_per_package() -> None:
    # package 1 has only marked performance cores: nothing to tell them apart from
    m = make_machine(CORES, packages=["0-7", "8-15"], no_kind="0-3")
    assert classes(CPUAllocator(m)) == {"high": "4-7", "normal": "0-3,8-15", "low": ""}
