"""Benchmark: discovery of the 4096-CPU catalogue machine from its sysfs tree, and CPUSet costs.

Run: .venv/bin/python bench/bench_hardware.py [--runs N]
Target: discovery under 1 s.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import timeit
from collections.abc import Callable

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import FakeHardwareDiscovery, scratch_dir
from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.cpuset import CPUSet

MACHINE = "sparse-8s-4096"
TARGET_S = 1.0


def seconds(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def per_call(fn: Callable[[], object]) -> float:
    """Best per-call time over a few timeit rounds."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat=5, number=number)) / number


def fmt(value: float) -> str:
    if value >= 1:
        return f"{value:8.3f} s "
    if value >= 1e-3:
        return f"{value * 1e3:8.3f} ms"
    return f"{value * 1e6:8.3f} us"


def bench_discovery(runs: int) -> None:
    spec = load_machine(MACHINE)
    load = seconds(lambda: load_machine(MACHINE))
    layout = resolve(spec)
    where = scratch_dir() or tempfile.gettempdir()
    print(
        f"machine {MACHINE}: {len(layout.online)} CPUs (max id {layout.online.max()}), "
        f"{len(layout.nodes)} nodes, {len(layout.caches)} caches; trees under {where}"
    )
    print(f"  load + validate spec       {fmt(load)}")
    with tempfile.TemporaryDirectory(dir=scratch_dir()) as tmp:
        root = tmp + "/sys"
        write = seconds(lambda: write_sysfs(layout, root))
        files = sum(1 for _ in __import__("pathlib").Path(root).rglob("*"))
        print(f"  write sysfs tree           {fmt(write)}  ({files} entries)")
        discovery = SysfsDiscovery(root, layout.declared_memory_types)
        times = [seconds(discovery.discover) for _ in range(runs)]
    best, median = min(times), statistics.median(times)
    status = "met" if median < TARGET_S else "MISSED"
    print(f"  discover (best of {runs})     {fmt(best)}")
    print(f"  discover (median)          {fmt(median)}   target < {TARGET_S:.0f} s: {status}")
    fake = seconds(FakeHardwareDiscovery(spec).discover)
    print(f"  FakeHardwareDiscovery      {fmt(fake)}  (write + discover + clean up)")


def bench_cpuset() -> None:
    dense = CPUSet.range(0, 4096)
    sparse = CPUSet.from_ids(range(0, 8192, 2))
    other = CPUSet.from_ids(range(0, 8192, 3))
    dense_text, sparse_text = str(dense), str(sparse)
    ids = sparse.ids()
    cases: list[tuple[str, Callable[[], object]]] = [
        ("parse '0-4095'", lambda: CPUSet.parse(dense_text)),
        ("parse 4096 single ids", lambda: CPUSet.parse(sparse_text)),
        ("str (4096 single ids)", lambda: str(sparse)),
        ("from_ids (4096 ids)", lambda: CPUSet.from_ids(ids)),
        ("ids() (4096 ids)", sparse.ids),
        ("iterate (4096 ids)", lambda: sum(1 for _ in sparse)),
        ("len", lambda: len(sparse)),
        ("contains", lambda: 8190 in sparse),
        ("union", lambda: sparse | other),
        ("intersection", lambda: sparse & other),
        ("difference", lambda: sparse - other),
        ("issubset", lambda: other <= sparse),
        ("first(100)", lambda: sparse.first(100)),
        ("min / max", lambda: (sparse.min(), sparse.max())),
    ]
    print("CPUSet operations (sets of 4096 ids, sparse ones spread over 0-8191):")
    for name, fn in cases:
        print(f"  {name:<26} {fmt(per_call(fn))}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5, help="discovery runs (default 5)")
    args = parser.parse_args()
    bench_discovery(args.runs)
    bench_cpuset()


if __name__ == "__main__":
    main()
