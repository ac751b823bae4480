"""Micro-benchmark of the resource-manager pipeline (domain only, no NRI, no disk).

Drives the template policy through run-pod / create / post-create / start / post-start /
stop / remove for new containers while N containers already exist, with the in-memory state
store (so every save pays the full snapshot + JSON encoding cost, but no disk I/O).

Examples:
  .venv/bin/python bench/bench_pipeline.py
  .venv/bin/python bench/bench_pipeline.py --existing 0 1000 5000 --cycles 200
  .venv/bin/python bench/bench_pipeline.py --no-store        (pipeline cost without persistence)

Prints, per population size, percentiles of the per-operation latency in microseconds.
"""

from __future__ import annotations

import argparse
import statistics
import time

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.topology import CPU, Machine, NumaNode


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


def run(existing: int, cycles: int, store: bool) -> dict[str, list[float]]:
    manager = ResourceManager(
        policy=TemplatePolicy(),
        machine=machine(),
        store=InMemoryStateStore() if store else None,
    )
    manager.start(None)
    pods = [pod(i) for i in range(existing)]
    manager.synchronize(pods, [container(p, ContainerState.RUNNING) for p in pods])
    timings: dict[str, list[float]] = {}

    def timed(name: str, fn: object, *args: object) -> None:
        start = time.perf_counter()
        fn(*args)  # type: ignore[operator]
        timings.setdefault(name, []).append((time.perf_counter() - start) * 1e6)

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


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--existing", type=int, nargs="+", default=[0, 100, 1000])
    parser.add_argument("--cycles", type=int, default=200)
    parser.add_argument("--no-store", action="store_true", help="run without a state store")
    args = parser.parse_args()
    for existing in args.existing:
        timings = run(existing, args.cycles, not args.no_store)
        print(f"existing containers: {existing}  store: {not args.no_store}  cycles: {args.cycles}")
        print(f"  {'operation':<12} {'p50 us':>10} {'p90 us':>10} {'p99 us':>10} {'mean us':>10}")
        for name, values in timings.items():
            print(
                f"  {name:<12} {pct(values, 0.5):>10.0f} {pct(values, 0.9):>10.0f} "
                f"{pct(values, 0.99):>10.0f} {statistics.fmean(values):>10.0f}"
            )


if __name__ == "__main__":
    main()
