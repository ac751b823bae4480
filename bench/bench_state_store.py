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
import statistics
import tempfile
import time
from collections.abc import Callable

from nrirp.adapters.storage import FileStateStore
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.topology import CPU, Machine, NumaNode

MODES = ("none", "sync", "background")


def machine() -> Machine:
    cpus = [CPU(i, 0, 0, i // 2, i // 2, i // 32) for i in range(64)]
    nodes = [NumaNode(n, CPUSet.range(n * 32, n * 32 + 32), 64 << 30) for n in range(2)]
    return Machine.build(cpus, nodes)


def pod(i: int) -> Pod:
    return Pod(
        id=f"pod-{i}",
        name=f"pod-{i}",
        uid=f"uid-{i}",
        namespace="bench",
        labels={"app": "bench", "tier": str(i % 7)},
        annotations={"kubernetes.io/config.source": "api"},
        cgroup_parent=f"/kubepods/burstable/podu{i}",
    )


def container(p: Pod, state: ContainerState = ContainerState.CREATING) -> Container:
    return Container(
        id=f"{p.id}-c",
        pod_id=p.id,
        name="c",
        state=state,
        labels={"io.kubernetes.container.name": "c"},
        resources=LinuxResources(cpu_shares=512, memory_limit=1 << 30, cpus=CPUSet.range(0, 64)),
        oom_score_adj=900,
    )


def run(
    mode: str, existing: int, cycles: int, directory: str
) -> tuple[dict[str, list[float]], str]:
    store = None
    if mode != "none":
        store = FileStateStore(directory, background=(mode == "background"))
    manager = ResourceManager(policy=TemplatePolicy(), machine=machine(), store=store)
    manager.start(None)
    pods = [pod(i) for i in range(existing)]
    manager.synchronize(pods, [container(p, ContainerState.RUNNING) for p in pods])
    if store is not None:
        store.flush()
    writes_before = store.writes if store else 0
    timings: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[..., object], *args: object) -> None:
        start = time.perf_counter()
        fn(*args)
        timings.setdefault(name, []).append((time.perf_counter() - start) * 1e6)

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


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


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
            print(
                f"  {'operation':<12} {'p50 us':>10} {'p90 us':>10} {'p99 us':>10} {'mean us':>10}"
            )
            for name, values in timings.items():
                print(
                    f"  {name:<12} {pct(values, 0.5):>10.0f} {pct(values, 0.9):>10.0f} "
                    f"{pct(values, 0.99):>10.0f} {statistics.fmean(values):>10.0f}"
                )


if __name__ == "__main__":
    main()
