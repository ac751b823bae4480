"""Table tests: one case per preference step of the allocation pipeline."""

from __future__ import annotations

import functools
from collections.abc import Callable

import pytest

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.cpuallocator.index import MachineIndex
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine

from .machines import catalogue_machine, make_machine

P = CPUPriority
ALL = "all"


@functools.cache
def modules() -> Machine:
    """One package: 4 modules of 2 cores x 2 threads sharing an L2, an L3 for all."""
    return make_machine(
        [f"{i}-{i + 1}" for i in range(0, 16, 2)],
        caches={2: ["0-3", "4-7", "8-11", "12-15"], 3: ["0-15"]},
    )


@functools.cache
def two_dies() -> Machine:
    """One package, dies 0-7 and 8-15, each 2 modules (L2) of 2 cores x 2 threads."""
    return make_machine(
        [f"{i}-{i + 1}" for i in range(0, 16, 2)],
        dies=["0-7", "8-15"],
        caches={2: ["0-3", "4-7", "8-11", "12-15"], 3: ["0-7", "8-15"]},
    )


@functools.cache
def bare() -> Machine:
    """2 packages x 2 cores x 2 threads and no cache information."""
    return make_machine(["0-1", "2-3", "4-5", "6-7"], packages=["0-3", "4-7"])


@functools.cache
def three_cores() -> Machine:
    """One package of 3 cores x 2 threads, no cache information."""
    return make_machine(["0-1", "2-3", "4-5"])


@functools.cache
def mixed_frequency() -> Machine:
    """2 packages x 4 cores x 2 threads; package 1's cores 12-15 run a higher base frequency."""
    return make_machine(
        [f"{i}-{i + 1}" for i in range(0, 16, 2)],
        packages=["0-7", "8-15"],
        base_khz={"0-11": 2_000_000, "12-15": 3_000_000},
    )


@functools.cache
def lone_package() -> Machine:
    """Package 0: 4 cores x 2 threads (0-7); package 1: one CPU (8), as after hot-plug."""
    return make_machine(["0-1", "2-3", "4-5", "6-7", "8"], packages=["0-7", "8"])


def box16() -> Machine:
    return catalogue_machine("box-16")


def server112() -> Machine:
    return catalogue_machine("server-112-pmem")


def hybrid() -> Machine:
    return catalogue_machine("hybrid-desktop")


def sparse() -> Machine:
    return catalogue_machine("sparse-8s-4096")


CASES: list[tuple[str, Callable[[], Machine], str, int, CPUPriority, str]] = [
    # 1. idle packages, taken whole
    ("idle package over a busier lower one", box16, "1-15", 8, P.NONE, "8-15"),
    ("idle package, then the rest beside it", box16, ALL, 10, P.NONE, "0-9"),
    ("two idle packages", box16, ALL, 16, P.NONE, "0-15"),
    ("HIGH on hybrid: all P-cores are the idle package", hybrid, ALL, 16, P.HIGH, "0-15"),
    # the reference's allocator.go tries idle packages for every request, one CPU included
    ("single CPU: the lone CPU of a package, not a full one", lone_package, ALL, 1, P.NONE, "8"),
    ("3 CPUs: the lone package, then a whole core", lone_package, ALL, 3, P.NONE, "0-1,8"),
    ("single CPU: a busy lone package is not idle", lone_package, "0-7", 1, P.NONE, "0"),
    # 2. hybrid clusters
    ("LOW takes an E-cluster", hybrid, ALL, 4, P.LOW, "16-19"),
    ("LOW takes the idle E-cluster", hybrid, "0-15,17-23", 4, P.LOW, "20-23"),
    ("LOW fits into the idle E-cluster", hybrid, "0-15,17-23", 2, P.LOW, "20-21"),
    ("LOW beyond E room: E-clusters whole, then P", hybrid, ALL, 10, P.LOW, "0-1,16-23"),
    ("LOW single CPU is an E-core", hybrid, ALL, 1, P.LOW, "16"),
    ("HIGH never gets E-cores", hybrid, ALL, 4, P.HIGH, "0-3"),
    ("NORMAL never gets E-cores", hybrid, "0,16-23", 1, P.NORMAL, "0"),
    ("NONE prefers a P-core", hybrid, ALL, 1, P.NONE, "0"),
    ("NONE may use E-cores", hybrid, "16-23", 3, P.NONE, "16-18"),
    # 3. cache groups
    ("idle L2 module over splitting two", modules, "1-15", 4, P.NONE, "4-7"),
    ("tightest L2 module", modules, "1-3,5-7,10-11,13-15", 2, P.NONE, "10-11"),
    ("tightest L2 module, lowest id on ties", modules, "1-3,5-7,10-11,13-15", 3, P.NONE, "1-3"),
    ("idle module first, over a tighter one", modules, "2-3,8-15", 2, P.NONE, "8-9"),
    ("whole free core over lonely threads", modules, "1,3,5-7", 2, P.NONE, "6-7"),
    ("whole cores, then the tightest", modules, "1,3,5-7,10-11", 2, P.NONE, "10-11"),
    ("lowest level that holds the request", modules, "1-15", 6, P.NONE, "4-9"),
    ("tie on module size: the fuller die", two_dies, "1-3,5-7,9-11", 3, P.NONE, "9-11"),
    ("tie on module size: the fuller die (mirrored)", two_dies, "1-3,9-11,13-15", 3, P.NONE, "1-3"),
    ("never across packages when one holds it", box16, "0-3,5,8-13", 4, P.NONE, "0-3"),
    ("package with room over the lower busy one", box16, "0-2,8-15", 4, P.NONE, "8-11"),
    ("LOW hybrid E-cluster with room, no mixing", hybrid, "0-15,17-19,21-23", 3, P.LOW, "17-19"),
    # 3b. NUMA nodes inside a package (tightest node that holds the request)
    ("within one node, not across two", server112, "40-55,96-111", 6, P.NONE, "42-44,98-100"),
    ("the tightest node", server112, "40-55,96-111", 4, P.NONE, "40-41,96-97"),
    (
        "a package with a node that holds it",
        server112,
        "0-1,14-15,28-41,56-57,70-71,84-97",
        6,
        P.NONE,
        "28-30,84-86",
    ),
    ("sparse: idle die of the fullest package", sparse, "64-7679", 8, P.NONE, "256-263"),
    # 4. idle whole cores
    ("whole core before threads", bare, "1-3", 2, P.NONE, "2-3"),
    ("two whole cores", bare, "1-7", 4, P.NONE, "4-7"),
    ("whole core, then a thread in the same package", bare, "0-2,4-7", 3, P.NONE, "4-6"),
    # 5. threads
    ("single CPU: the lonely thread", bare, "1-3", 1, P.NONE, "1"),
    ("single CPU: package with more free CPUs", bare, "0-2,4-7", 1, P.NONE, "4"),
    ("single CPU: lowest id when all equal", bare, ALL, 1, P.NONE, "0"),
    ("odd count: the rest stays in the used package", bare, "0-3,5", 3, P.NONE, "0-2"),
    ("odd count: whole core and a lonely thread", three_cores, "0-3,5", 3, P.NONE, "0-1,5"),
    ("HIGH thread: the high-priority CPU", mixed_frequency, ALL, 1, P.HIGH, "12"),
    ("NORMAL thread: a normal CPU", mixed_frequency, "1,12-15", 1, P.NORMAL, "1"),
    ("HIGH cores: package with high capacity", mixed_frequency, ALL, 4, P.HIGH, "12-15"),
    ("HIGH more than the class: rest by id", mixed_frequency, ALL, 10, P.HIGH, "8-15,0-1"),
    # big machine
    ("sparse: die, then the same package's other die", sparse, ALL, 300, P.NONE, "0-299"),
    ("sparse: idle die first", sparse, "1-7679", 4, P.NONE, "256-259"),
    ("sparse: whole package", sparse, "1-7679", 512, P.NONE, "1024-1535"),
]


@pytest.mark.parametrize(
    ("machine", "available", "count", "priority", "expected"),
    [pytest.param(*case[1:], id=case[0]) for case in CASES],
)
def test_pipeline_step(
    machine: Callable[[], Machine],
    available: str,
    count: int,
    priority: CPUPriority,
    expected: str,
) -> None:
    m = machine()
    allocator = CPUAllocator(m)
    avail = m.online if available == ALL else CPUSet.parse(available) & m.online
    got = allocator.allocate(avail, count, priority=priority)
    assert got == CPUSet.parse(expected), f"got {got}, expected {expected}"


def test_sparse_half_die_partner() -> None:
    """300 CPUs: one whole die (256) plus 44 in the same package's other die."""
    m = sparse()
    got = CPUAllocator(m).allocate(m.online, 300)
    assert got.issubset(m.package_cpus(0))
    assert m.die_cpus(0, 0).issubset(got)


@pytest.mark.parametrize(
    ("name", "caches", "domains"),
    [
        ("box-16", ["L3 cache"], ["NUMA node"]),
        ("hybrid-desktop", ["L2 cache", "L3 cache"], []),
        ("server-112-pmem", ["L3 cache"], ["NUMA node"]),
        ("server-4s-144", ["L3 cache"], []),
        ("sparse-8s-4096", ["L3 cache"], ["NUMA node"]),
    ],
)
def test_grouping_levels(name: str, caches: list[str], domains: list[str]) -> None:
    """Per-core caches and groupings equal to a package or a cache level are left out."""
    index = MachineIndex(catalogue_machine(name))
    assert [level.name for level in index.cache_levels] == caches
    assert [level.name for level in index.domain_levels] == domains
