"""Property tests of the allocator on the catalogue machines."""

from __future__ import annotations

import functools
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CoreType, Machine

from .machines import CATALOGUE, catalogue_machine


@functools.cache
def allocator(name: str) -> CPUAllocator:
    return CPUAllocator(catalogue_machine(name))


@st.composite
def situations(draw: st.DrawFn) -> tuple[str, CPUSet, CPUPriority]:
    """A catalogue machine, a random subset of its CPUs (plus some foreign ids), a priority."""
    name = draw(st.sampled_from(CATALOGUE))
    m = catalogue_machine(name)
    seed = draw(st.integers(0, 2**32 - 1))
    busy = draw(st.sampled_from([0.0, 0.05, 0.3, 0.7, 0.95]))
    rng = random.Random(seed)
    ids = [i for i in m.online if rng.random() >= busy]
    foreign = draw(st.lists(st.integers(0, m.online.max() + 64), max_size=3))
    available = CPUSet.from_ids(ids) | (CPUSet.from_ids(foreign) - m.online)
    return name, available, draw(st.sampled_from(list(CPUPriority)))


def usable(a: CPUAllocator, available: CPUSet, priority: CPUPriority) -> CPUSet:
    return a.usable(available, priority)


def e_cores(m: Machine) -> CPUSet:
    return m.cpus_of_type(CoreType.EFFICIENT)


@settings(max_examples=150, deadline=None)
@given(situations(), st.data())
def test_allocation_is_exact_within_available_and_deterministic(
    situation: tuple[str, CPUSet, CPUPriority], data: st.DataObject
) -> None:
    name, available, priority = situation
    a = allocator(name)
    have = len(usable(a, available, priority))
    count = data.draw(st.integers(0, have))
    got = a.allocate(available, count, priority=priority)
    assert len(got) == count
    assert got.issubset(available & a.machine.online)
    if priority in (CPUPriority.HIGH, CPUPriority.NORMAL):
        assert got.isdisjoint(e_cores(a.machine))
    if priority is CPUPriority.LOW and len(available & e_cores(a.machine)) >= count:
        assert got.issubset(e_cores(a.machine))
    assert a.allocate(available, count, priority=priority) == got
    assert CPUAllocator(a.machine).allocate(available, count, priority=priority) == got
    # one NUMA node when the free CPUs of one node can hold the request
    m = a.machine
    usable_now = usable(a, available, priority)
    if any(len(n.cpus & usable_now) >= count for n in m.nodes.values()):
        assert len({m.node_of(cpu) for cpu in got}) <= 1


@settings(max_examples=150, deadline=None)
@given(situations(), st.data())
def test_release_after_allocate_returns_subsets(
    situation: tuple[str, CPUSet, CPUPriority], data: st.DataObject
) -> None:
    name, available, priority = situation
    a = allocator(name)
    count = data.draw(st.integers(0, len(usable(a, available, priority))))
    got = a.allocate(available, count, priority=priority)
    back = data.draw(st.integers(0, count))
    released = a.release(got, back, priority=priority)
    assert len(released) == back
    assert released.issubset(got)
    assert a.release(got, back, priority=priority) == released
    kept = got - released
    # what stays is what allocating that many from the held CPUs picks
    assert kept == a.allocate(got, count - back, priority=priority)


@settings(max_examples=60, deadline=None)
@given(situations(), st.lists(st.integers(1, 40), min_size=1, max_size=12))
def test_successive_allocations_never_share_a_cpu(
    situation: tuple[str, CPUSet, CPUPriority], sizes: list[int]
) -> None:
    name, available, priority = situation
    a = allocator(name)
    given_out = CPUSet()
    for size in sizes:
        if size > len(usable(a, available, priority)):
            break
        got = a.allocate(available, size, priority=priority)
        assert got.isdisjoint(given_out)
        given_out |= got
        available -= got


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(CATALOGUE), st.data())
def test_idle_machine_even_counts_take_whole_cores(name: str, data: st.DataObject) -> None:
    """With everything free, a request that whole cores can cover never splits a core."""
    a = allocator(name)
    m = a.machine
    p_cores = m.online - e_cores(m)
    count = 2 * data.draw(st.integers(1, len(p_cores) // 2))
    got = a.allocate(m.online, count, priority=CPUPriority.HIGH)
    for cpu in got:
        assert m.thread_siblings(cpu).issubset(got)
    # inside one NUMA node when one can hold it
    smallest_node = min(len(n.cpus - e_cores(m)) for n in m.nodes.values() if n.cpus)
    if count <= smallest_node:
        assert len({m.node_of(cpu) for cpu in got}) == 1
    # and in as few packages as possible
    largest = max(len(p.cpus - e_cores(m)) for p in m.packages.values())
    packages = {m.package_of(cpu) for cpu in got}
    assert len(packages) == -(-count // largest)
