"""Micro-benchmark of the resource-manager pipeline (domain only, no NRI, no disk).

Drives the template policy through run-pod / create / post-create / start / post-start /
stop / remove for new containers while N containers already exist, with the in-memory state
store (every changing operation builds its snapshot; the store keeps it and JSON-encodes only
when flushed, like the daemon's writer thread, so no encoding and no disk I/O is timed).

Examples:
  .venv/bin/python bench/bench_pipeline.py
  .venv/bin/python bench/bench_pipeline.py --existing 0 1000 5000 --cycles 200
  .venv/bin/python bench/bench_pipeline.py --no-store        (pipeline cost without persistence)

Prints, per population size, percentiles of the per-operation latency in microseconds.
"""

from __future__ import annotations

import argparse

from pipeline_workload import Timings, container, machine, pod, populate, print_table, timer

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy


def run(existing: int, cycles: int, store: bool) -> Timings:
    manager = ResourceManager(
        policy=TemplatePolicy(),
        machine=machine(),
        store=InMemoryStateStore() if store else None,
    )
    populate(manager, existing)
    timings: Timings = {}
    timed = timer(timings)
    for i in range(existing, existing + cycles):
        p = pod(i)
        c = container(p)
        timed("run-pod", manager.run_pod, p)
        timed("create", manager.create_container, p, c)
        timed("post-create", manager.post_create, p, c)
        timed("start", manager.start_container, p, c)
        timed("post-start", manager.post_start, p, c)
        timed("stop", manager.stop_container, p, c)
        timed("remove", manager.remove_container, p, c)
        timed("remove-pod", manager.remove_pod, p)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--existing", type=int, nargs="+", default=[0, 100, 1000])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--no-store", action="store_true", help="run without a state store")
    args = parser.parse_args()
    for existing in args.existing:
        timings = run(existing, args.cycles, not args.no_store)
        print(f"existing containers: {existing}  store: {not args.no_store}  cycles: {args.cycles}")
        print_table(timings)


if __name__ == "__main__":
    main()
