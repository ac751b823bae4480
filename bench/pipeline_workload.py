"""What the pipeline benchmarks share: the machine, pods and containers they drive, the timer
and the latency table (imported by ``bench_pipeline.py`` and ``bench_state_store.py``)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.topology import CPU, Machine, NumaNode

Timings = dict[str, list[float]]
"""Per-operation latencies in microseconds, by operation name."""


def machine() -> Machine:
    """Two NUMA nodes of 32 CPUs (64 GiB each)."""
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


def populate(manager: ResourceManager, existing: int) -> None:
    """Start ``manager`` and synchronize ``existing`` running one-container pods into it."""
    manager.start(None)
    pods = [pod(i) for i in range(existing)]
    manager.synchronize(pods, [container(p, ContainerState.RUNNING) for p in pods])


def timer(timings: Timings) -> Callable[..., None]:
    """``timed(name, fn, *args)``: call ``fn(*args)`` and record its latency under ``name``."""

    def timed(name: str, fn: Callable[..., object], *args: object) -> None:
        start = time.perf_counter()
        fn(*args)
        timings.setdefault(name, []).append((time.perf_counter() - start) * 1e6)

    return timed


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def print_table(timings: Timings) -> None:
    """Percentiles and mean per operation, in microseconds."""
    print(f"  {'operation':<12} {'p50 us':>10} {'p90 us':>10} {'p99 us':>10} {'mean us':>10}")
    for name, values in timings.items():
        print(
            f"  {name:<12} {pct(values, 0.5):>10.0f} {pct(values, 0.9):>10.0f} "
            f"{pct(values, 0.99):>10.0f} {statistics.fmean(values):>10.0f}"
        )
