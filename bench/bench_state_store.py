"""Hot-path cost of persisting state with the file StateStore, before and after the
background writer.

Drives the template policy through create + post-create + start + post-start (the calls a
container creation makes) next to N existing containers, saving to ``<tmpdir>/cache`` with:

- ``sync``: the file store writing in the caller's thread (encode, write, fsync, rename, fsync
  dir on every changing operation): the "before" design;
- ``background``: the default daemon store; the caller only queues the snapshot and the writer
  thread encodes and writes the latest one after a short linger;
- ``none``: no store at all (the floor).

Prints per-operation latency percentiles (microseconds) as the caller sees them, the CPU time
the writer thread used, and how many times the file was written.

Examples:
  .venv/bin/python bench/bench_state_store.py
  .venv/bin/python bench/bench_state_store.py --existing 1000 5000 --cycles 200
"""

from __future__ import annotations

import argparse
import tempfile
import time

from pipeline_workload import Timings, container, machine, pod, populate, print_table, timer

from nrirp.adapters.storage import FileStateStore
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy

MODES = ("none", "sync", "background")


def run(mode: str, existing: int, cycles: int, directory: str) -> tuple[Timings, str]:
    store = None
    if mode != "none":
        store = FileStateStore(directory, background=(mode == "background"))
    manager = ResourceManager(policy=TemplatePolicy(), machine=machine(), store=store)
    populate(manager, existing)
    if store is not None:
        store.flush()
    writes_before = store.writes if store else 0
    timings: Timings = {}
    timed = timer(timings)

    started = time.perf_counter()
    cpu_started = time.process_time()
    for i in range(existing, existing + cycles):
        p = pod(i)
        c = container(p)
        timed("run-pod", manager.run_pod, p)
        timed("create", manager.create_container, p, c)
        timed("post-create", manager.post_create, p, c)
        timed("start", manager.start_container, p, c)
        timed("post-start", manager.post_start, p, c)
    loop_wall = time.perf_counter() - started
    if store is not None:
        store.close()
    total_wall = time.perf_counter() - started
    total_cpu = time.process_time() - cpu_started
    writes = (store.writes if store else 0) - writes_before
    note = (
        f"loop {loop_wall * 1e3:.0f} ms, until durable {total_wall * 1e3:.0f} ms, "
        f"process CPU {total_cpu * 1e3:.0f} ms, file writes {writes}"
    )
    return timings, note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--existing", type=int, nargs="+", default=[1000])
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    args = parser.parse_args()
    for existing in args.existing:
        for mode in args.modes:
            with tempfile.TemporaryDirectory(prefix="nrirp-bench-state-") as directory:
                timings, note = run(mode, existing, args.cycles, directory)
            print(f"existing containers: {existing}  store: {mode}  cycles: {args.cycles}")
            print(f"  {note}")
            print_table(timings)


if __name__ == "__main__":
    main()
