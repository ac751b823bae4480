"""Benchmark: the memory zone allocator with 500 owners in place.

Run: .venv/bin/python bench/bench_memalloc.py [--owners 500] [--ops 2000] [--seed 1] [--clock cpu]
Target: allocate well under 1 ms typical on server-112-pmem, a few ms on sparse-8s-4096.

Each machine gets ``--owners`` allocations in pool-like zones (single nodes, dies, sockets,
the whole machine; DRAM, DRAM+PMEM and PMEM-only requests on the PMEM machine) whose sizes
average 60% of the DRAM over the owners (uniform from 1/8 to 15/8 of that). Then ``--ops``
times: offer, allocate and release one more request drawn the same way, so the state stays as
it was. ``pressure`` then gives every DRAM node a filler of 97% of the room left in it, so
allocations widen others and releases shrink them back.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import statistics
import time
from collections.abc import Callable

from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import MemoryAllocationError, MemoryAllocator, MemoryRequest
from nrirp.domain.topology import Machine, MemoryType

DRAM = frozenset({MemoryType.DRAM})
DRAM_PMEM = frozenset({MemoryType.DRAM, MemoryType.PMEM})
PMEM = frozenset({MemoryType.PMEM})


def pool_zones(m: Machine) -> list[CPUSet]:
    """The node sets of a topology-aware pool tree: nodes, dies, packages, the machine."""
    zones = {CPUSet.of(n) for n in m.cpu_nodes}
    zones |= {d.nodes for d in m.dies.values()}
    zones |= {p.nodes for p in m.packages.values()}
    zones.add(CPUSet.from_ids(m.nodes))
    return sorted(zones, key=lambda z: (len(z), z.bits))


def draw_request(
    rnd: random.Random, owner: str, zones: list[CPUSet], pmem: bool, mean: int
) -> MemoryRequest:
    zone = rnd.choice(zones)
    types = DRAM
    if pmem:
        types = rnd.choices([DRAM, DRAM_PMEM, PMEM], weights=[6, 3, 1])[0]
    size = rnd.randint(mean // 8, mean * 15 // 8)
    return MemoryRequest(owner, size, zone, types)


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]


CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.thread_time}
clock = time.perf_counter


def timed(fn: Callable[[], object], into: list[float]) -> object:
    start = clock()
    result = fn()
    into.append((clock() - start) * 1e6)
    return result


def run(name: str, owners: int, ops: int, seed: int, pressure: bool) -> None:
    m = expected_machine(load_machine(name))
    pmem = bool(m.nodes_of_type(MemoryType.PMEM))
    zones = pool_zones(m)
    rnd = random.Random(seed)
    alloc = MemoryAllocator(m)
    dram = m.nodes_of_type(MemoryType.DRAM)
    mean = sum(m.memory_bytes(n) for n in dram) * 60 // 100 // owners
    for i in range(owners):
        alloc.allocate(draw_request(rnd, f"c{i}", zones, pmem, mean))
    if pressure:  # fill what is left of every DRAM node to 97%: the fillers crowd the others
        for n in dram:
            node = CPUSet.of(n)
            room = alloc.capacity(node) - alloc.usage(node)
            with contextlib.suppress(MemoryAllocationError):
                alloc.allocate(MemoryRequest(f"fill-{n}", room * 97 // 100, node, DRAM))
    setup_widened = len(alloc.widened())
    offer_us: list[float] = []
    alloc_us: list[float] = []
    release_us: list[float] = []
    moved = shrunk = refused = 0
    for i in range(ops):
        req = draw_request(rnd, f"new-{i}", zones, pmem, mean)
        try:
            timed(lambda r=req: alloc.offer(r), offer_us)
            _, others = timed(lambda r=req: alloc.allocate(r), alloc_us)  # type: ignore[misc]
        except MemoryAllocationError:
            refused += 1
            continue
        moved += bool(others) or req.owner in alloc.widened()
        back = timed(lambda o=req.owner: alloc.release(o), release_us)
        shrunk += bool(back)
    label = f"{name} ({len(m.nodes)} nodes){' pressure' if pressure else ''}"
    print(
        f"{label}: {owners} owners of {mean / 2**30:.2f} GiB on average in "
        f"{len(alloc.zones())} zones, {setup_widened} widened; "
        f"{ops} rounds: {moved} allocations widened someone, {shrunk} releases shrank "
        f"someone back, {refused} refused"
    )
    for op, values in (("offer", offer_us), ("allocate", alloc_us), ("release", release_us)):
        if values:
            print(
                f"  {op:<9} p50 {statistics.median(values):8.1f} us   "
                f"p99 {percentile(values, 99):8.1f} us   max {max(values):8.1f} us"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--owners", type=int, default=500)
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall time, or this thread's CPU time (leaves out other processes' time slices)",
    )
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    print(f"clock: {args.clock}")
    for name in ("server-112-pmem", "sparse-8s-4096"):
        for pressure in (False, True):
            run(name, args.owners, args.ops, args.seed, pressure)


if __name__ == "__main__":
    main()
