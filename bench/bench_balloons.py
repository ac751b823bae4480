"""Decision time of the balloons policy through the real ResourceManager pipeline.

The workload of ``bench_topology_aware.py`` (its ``shape`` mix: BestEffort, Burstable,
fractional and integer Guaranteed, a few kube-system): for each catalogue machine, config and
population size N, a fresh pipeline is started with the balloons policy and synchronized with
N running containers; then ``--cycles`` new pods go through run-pod / create / post-create /
start / post-start / stop / remove / remove-pod, so the population stays at N. Every call is
timed (wall clock and the thread's CPU time, microseconds), and the updates sent to other
containers are checked against the containers whose cpus/mems changed.

Configs (``--configs``):

- ``helm``: the reference Helm chart's default (``reservedResources: {cpu: 750m}``): every
  container but kube-system's in the one ``default`` balloon, which inflates and deflates with
  the requests (each time its CPUs change, every container in it gets an update);
- ``typed``: Guaranteed containers in balloons of at most 4 CPUs (sharing the idle CPUs of
  their NUMA node), Burstable ones in balloons of at most 8 CPUs per namespace, the rest in
  ``default``: many balloons, each inflating and deflating with fewer members.

    .venv/bin/python bench/bench_balloons.py                       # both machines, 0/100/500
    .venv/bin/python bench/bench_balloons.py --machines server-112-pmem --running 500 \\
        --configs helm --cycles 300
    .venv/bin/python bench/bench_balloons.py --profile 25 --profile-kinds guaranteed-int

Prints per row the operations' p50/p90/p99, create times per container kind, the update
audit, and a summary table of CreateContainer p50/p99. No targets are checked (``--check``
only fails on update-audit defects and error notices).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench_topology_aware import (
    KINDS,
    STORE_CHOICES,
    Bench,
    Profiler,
    Result,
    UpdateAudit,
    assignment,
    errors_of,
    make_container,
    make_pod,
    memory_capacity,
    print_result,
    shape,
    workload,
)
from pipeline_workload import pct

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import InMemoryStateStore, RecordingDecisionLog, RecordingRuntimeUpdates
from nrirp.adapters.storage import FileStateStore
from nrirp.domain.model import ContainerState
from nrirp.domain.pipeline import OperationFailedError, ResourceManager
from nrirp.domain.policies import builtin_registry
from nrirp.domain.ports.state_store import StateStore
from nrirp.domain.topology import Machine

POLICY = "balloons"
MACHINES = ("server-112-pmem", "sparse-8s-4096")
CONFIGS: dict[str, dict[str, Any]] = {
    "helm": {"reservedResources": {"cpu": "750m"}},
    "typed": {
        "reservedResources": {"cpu": "750m"},
        "balloonTypes": [
            {
                "name": "guaranteed",
                "matchExpressions": [
                    {"key": "qosclass", "operator": "Equals", "values": ["Guaranteed"]}
                ],
                "maxCPUs": 4,
                "shareIdleCPUsInSame": "numa",
            },
            {
                "name": "burstable",
                "matchExpressions": [
                    {"key": "qosclass", "operator": "Equals", "values": ["Burstable"]}
                ],
                "maxCPUs": 8,
                "preferPerNamespaceBalloon": True,
            },
        ],
    },
}


def new_bench(machine: Machine, config: str, store_kind: str, directory: str) -> Bench:
    store: StateStore | None = None
    if store_kind == "memory":
        store = InMemoryStateStore()
    elif store_kind == "file":
        store = FileStateStore(directory, background=True)
    updates = RecordingRuntimeUpdates()
    log = RecordingDecisionLog()
    manager = ResourceManager(
        policy=builtin_registry().create(POLICY),
        machine=machine,
        store=store,
        updates=updates,
        decisions=log,
    )
    manager.start(load_policy_config(POLICY, CONFIGS[config]))
    return Bench(manager, store, updates, log)


def run_cycles(
    name: str,
    machine: Machine,
    config: str,
    store_kind: str,
    running: int,
    cycles: int,
    profiler: Profiler,
    profile_kinds: Sequence[str],
) -> Result:
    capacity = memory_capacity(machine)
    with tempfile.TemporaryDirectory(prefix="nrirp-bench-balloons-") as directory:
        bench = new_bench(machine, config, store_kind, directory)
        manager = bench.manager
        pods, containers, kinds, millis = workload(running, "run", capacity)
        manager.synchronize(pods, containers)
        pinned = sum(1 for c in manager.containers() if c.resources.cpus is not None)
        if isinstance(bench.store, FileStateStore):
            bench.store.flush()
        balloons = len(manager.describe().get("balloons", []))
        mix = ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k])
        note = (
            f"config {config}; running {running} ({mix or 'none'}; requesting "
            f"{millis / 1000:.1f} of {len(machine.cpus)} CPUs; {pinned}/{running} pinned; "
            f"{balloons} balloons)"
        )
        errors = errors_of(bench.log)
        bench.log.notices.clear()

        timings: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
        audits = {op: UpdateAudit() for op in ("create", "stop", "remove")}
        profiling = False

        def timed(op: str, fn: Callable[..., object], *args: object) -> object:
            start, cpu_start = time.perf_counter(), time.thread_time()
            with profiler.on(profiling and op == "create"):
                out = fn(*args)
            cpu.setdefault(op, []).append((time.thread_time() - cpu_start) * 1e6)
            timings.setdefault(op, []).append((time.perf_counter() - start) * 1e6)
            return out

        def audited(op: str, subject: str, fn: Callable[..., object], *args: object) -> object:
            before = assignment(manager)
            submitted = len(bench.updates.updates)
            out = timed(op, fn, *args)
            sent = list(bench.updates.updates[submitted:])
            if op == "create":
                sent.extend(out.updates)  # type: ignore[attr-defined]
            elif isinstance(out, list):
                sent.extend(out)
            audits[op].record(before, assignment(manager), sent, subject)
            return out

        for i in range(running, running + cycles):
            s = shape(i)
            profiling = s.kind in profile_kinds
            p = make_pod(i, "new", s)
            c = make_container(p, s, capacity, ContainerState.CREATING)
            timed("run-pod", manager.run_pod, p)
            try:
                audited("create", c.id, manager.create_container, p, c)
            except OperationFailedError as exc:  # no room: counted, the pod goes away
                errors.append(str(exc))
                manager.remove_pod(p)
                continue
            by_kind[s.kind].append(timings["create"][-1])
            timed("post-create", manager.post_create, p, c)
            timed("start", manager.start_container, p, c)
            timed("post-start", manager.post_start, p, c)
            audited("stop", c.id, manager.stop_container, p, c)
            audited("remove", c.id, manager.remove_container, p, c)
            timed("remove-pod", manager.remove_pod, p)
            bench.log.decisions.clear()
        errors += errors_of(bench.log)
        bench.close()
    return Result(name, store_kind, running, timings, cpu, by_kind, audits, errors, note)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machines", nargs="+", default=list(MACHINES), metavar="NAME")
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--stores", nargs="+", choices=STORE_CHOICES, default=["memory"])
    parser.add_argument("--running", type=int, nargs="+", default=[0, 100, 500])
    parser.add_argument("--cycles", type=int, default=200, help="new pods per population")
    parser.add_argument("--profile", type=int, metavar="TOP", default=0)
    parser.add_argument("--profile-kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--check", action="store_true", help="exit 1 on audit defects/errors")
    args = parser.parse_args()

    failures: list[str] = []
    summary: list[tuple[str, str, str, int, float, float, float, float, float, str]] = []
    for name in args.machines:
        machine = expected_machine(load_machine(name))
        for config in args.configs:
            for store_kind in args.stores:
                for running in args.running:
                    profiler = Profiler(args.profile > 0)
                    r = run_cycles(
                        name, machine, config, store_kind, running, args.cycles, profiler,
                        args.profile_kinds,
                    )  # fmt: skip
                    print_result(r)
                    profiler.report(f"{name} {config} {running} running", args.profile)
                    create, create_cpu = r.timings["create"], r.cpu["create"]
                    moved = r.audits["create"]
                    summary.append(
                        (name, config, store_kind, running, pct(create, 0.5), pct(create, 0.99),
                         max(create), pct(create_cpu, 0.5), pct(create_cpu, 0.99),
                         f"{moved.updates}/{moved.most_in_one_call}")
                    )  # fmt: skip
                    for op, audit in r.audits.items():
                        if not audit.ok:
                            failures.append(f"{name} {config} {running}: {audit.line(op).strip()}")
                    if r.errors:
                        failures.append(f"{name} {config} {running}: {len(r.errors)} errors")

    print(f"\nCreateContainer decision time (balloons, {args.cycles} creates per row, us)")
    print(
        f"  {'machine':<17} {'config':<7} {'store':<7} {'running':>7} {'p50':>8} {'p99':>8} "
        f"{'max':>8} {'cpu p50':>8} {'cpu p99':>8}  updates/most in one create"
    )
    for name, config, store, running, p50, p99, top, cpu50, cpu99, moved in summary:
        print(
            f"  {name:<17} {config:<7} {store:<7} {running:>7} {p50:>8.0f} {p99:>8.0f} "
            f"{top:>8.0f} {cpu50:>8.0f} {cpu99:>8.0f}  {moved}"
        )
    if failures:
        print("\ndefects:")
        for failure in failures:
            print(f"  {failure}")
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
