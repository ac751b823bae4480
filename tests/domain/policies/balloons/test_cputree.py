"""The CPU tree and the resize chain (reference-balloons.md §5)."""

from __future__ import annotations

import pytest

from nrirp.domain.config.enums import CPUPriority, LoadLevel
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.policies.balloons.cputree import CPUTree, Level
from nrirp.domain.policies.balloons.resize import ResizeError, Resizer, Steering
from tests.domain.policies.balloons.support import catalogue


def bits(text: str) -> int:
    return CPUSet.parse(text).bits


def text(value: int) -> str:
    return str(CPUSet(value))


@pytest.fixture
def resizer() -> Resizer:
    machine = catalogue("box-16")
    return Resizer(machine, CPUAllocator(machine))


# ------------------------------------------------------------------ the tree
def test_tree_names_follow_the_reference() -> None:
    tree = CPUTree(catalogue("box-16"))
    assert [n.name for n in tree.at(Level.PACKAGE)] == ["p0", "p1"]
    assert [n.name for n in tree.at(Level.NUMA)] == ["p0d0n0", "p0d0n1", "p1d0n2", "p1d0n3"]
    first_l2 = tree.at(Level.L2CACHE)[0]
    assert first_l2.name.startswith("p0d0n0$") and text(first_l2.bits) == "0-1"
    assert [n.name for n in tree.at(Level.CORE)[:2]] == ["p0d0n0cpu0", "p0d0n0cpu2"]
    assert [n.name for n in tree.at(Level.THREAD)[:2]] == ["p0d0n0cpu0t0", "p0d0n0cpu0t1"]
    assert tree.largest_at_depth == (16, 8, 8, 4, 2, 2, 1)


def test_spread_tree_has_thread_classes() -> None:
    tree = CPUTree(catalogue("box-16"), spread=True)
    classes = tree.at(Level.CLASS)
    assert [(n.name, text(n.bits)) for n in classes[:2]] == [
        ("p0d0n0class0", "0,2"),
        ("p0d0n0class1", "1,3"),
    ]


def test_reach_covers_the_level_nodes_touched() -> None:
    tree = CPUTree(catalogue("box-16"))
    assert text(tree.reach(Level.NUMA, bits("1,9"))) == "0-3,8-11"
    assert text(tree.reach(Level.CORE, bits("4"))) == "4-5"
    assert text(tree.reach(Level.PACKAGE, bits("15"))) == "8-15"


# ------------------------------------------------------------------ growth
def test_trivial_cases(resizer: Resizer) -> None:
    steer = Steering()
    assert text(resizer.grow(0, bits("3-4"), 2, steer)) == "3-4"  # exactly the free ones
    assert text(resizer.shrink(bits("3-4"), 0, 2, steer)) == "3-4"
    with pytest.raises(ResizeError, match="not enough free CPUs"):
        resizer.grow(0, bits("3"), 2, steer)


def test_packing_fills_the_fuller_side(resizer: Resizer) -> None:
    # packages: p0 has 2 free CPUs, p1 has 8; packing takes a core from the fuller package
    free = bits("2-3,8-15")
    assert text(resizer.grow(0, free, 2, Steering(balancing=False))) == "2-3"
    assert text(resizer.grow(0, free, 2, Steering(balancing=True))) == "8-9"


def test_growth_stays_near_the_balloon(resizer: Resizer) -> None:
    # the balloon holds 8 (p1): more of its CPUs along the path wins over packing
    free = bits("2-3,9-15")
    assert text(resizer.grow(bits("8"), free, 1, Steering())) == "9"


def test_close_devices_narrow_the_free_cpus(resizer: Resizer) -> None:
    steer = Steering(close=((bits("12-15"),),))
    assert text(resizer.grow(0, bits("0-15"), 2, steer)) == "12-13"
    # too few left there: the preference is skipped (node 2: packing, p1 has fewer free)
    assert text(resizer.grow(0, bits("0-13"), 4, steer)) == "8-11"


def test_far_devices_are_avoided_while_possible(resizer: Resizer) -> None:
    steer = Steering(far=((bits("0-11"),),))
    assert text(resizer.grow(0, bits("0-15"), 2, steer)) == "12-13"
    assert text(resizer.grow(0, bits("0-13"), 4, steer)) == "8-11"


def test_shrink_keeps_cpus_close_to_devices(resizer: Resizer) -> None:
    steer = Steering(close=((bits("2-3"),),))
    released = resizer.shrink(bits("0-3"), bits("4-15"), 2, steer)
    assert text(released) == "0-1"


def test_shrink_releases_where_the_balloon_has_least(resizer: Resizer) -> None:
    # the balloon: 3 CPUs in node 0, 1 in node 2: the lone one goes first
    assert text(resizer.shrink(bits("0-2,8"), 0, 1, Steering())) == "8"


def test_spread_on_physical_cores(resizer: Resizer) -> None:
    steer = Steering(spread=True)
    assert text(resizer.grow(0, bits("0-15"), 2, steer)) == "0,2"  # two cores, one thread each
    assert text(resizer.grow(0, bits("0-15"), 2, Steering())) == "0-1"  # one whole core


def test_allocator_priority_is_a_preference() -> None:
    machine = catalogue("hybrid-desktop")
    resizer = Resizer(machine, CPUAllocator(machine))
    high = Steering(priority=CPUPriority.HIGH)
    assert CPUSet(resizer.grow(0, bits("0-23"), 2, high)) <= CPUSet.parse("0-15")
    low = Steering(priority=CPUPriority.LOW)
    assert CPUSet(resizer.grow(0, bits("0-23"), 2, low)) <= CPUSet.parse("16-23")
    # only E-cores left: high still gets CPUs (the reference's allocator would find none)
    assert text(resizer.grow(0, bits("16-23"), 2, high)).count(",") <= 1


def test_overloaded_load_spreads_over_cores(resizer: Resizer) -> None:
    # a load that overloads its core in the balloon: each CPU on another core
    steer = Steering(far=((0,),), overloads=((LoadLevel.CORE, 0),))
    picked = resizer.grow(0, bits("0-15"), 3, steer)
    cores = {cpu // 2 for cpu in CPUSet(picked)}
    assert len(cores) == 3
