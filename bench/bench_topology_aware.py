"""Decision time of the topology-aware policy through the real ResourceManager pipeline.

For each catalogue machine, state store and population size N, a fresh pipeline is started
with the topology-aware policy and synchronized with N running containers of mixed QoS
(BestEffort, Burstable, Guaranteed fractional and integer, a few kube-system). Then ``--cycles``
new pods go through run-pod / create / post-create / start / post-start / stop / remove /
remove-pod, so the population stays at N; every call is timed, in microseconds, by the wall
clock and by the calling thread's CPU time (which leaves out the time the process waited for a
CPU: on a shared machine the wall-clock p99 is mostly other processes' time slices).
Separately, a fresh pipeline synchronizes ``--sync-containers`` new running containers at once
(the runtime's Synchronize after the plugin connects), ``--sync-runs`` times.

Stores: ``memory`` is the in-memory state store (keeps the latest snapshot, encodes on flush);
``file`` is the daemon's FileStateStore with its background writer, in a temporary directory;
``none`` (only on request) runs without persistence, to show what the store costs.

For every create, stop and remove the script also checks the updates the pipeline sent to
*other* containers (returned by the call or submitted to the RuntimeUpdates port) against the
containers whose cpus/mems actually differ before and after the call, and prints both counts:
an update to a container whose cpus and mems did not change, or a changed container that got
no update, is a defect.

    .venv/bin/python bench/bench_topology_aware.py                      # everything, ~minutes
    .venv/bin/python bench/bench_topology_aware.py --check              # exit 1 on a missed target
    .venv/bin/python bench/bench_topology_aware.py --machines server-112-pmem --running 500 \
        --stores memory --cycles 300
    .venv/bin/python bench/bench_topology_aware.py --profile 25         # cProfile the creates

Targets (``--check``): create p99 < 2 ms on server-112-pmem with 500 running containers,
< 10 ms on sparse-8s-4096 with 500; Synchronize of 1,000 containers < 200 ms; no update to an
unchanged container, no changed container left without an update, no allocation error.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import attrs
from pipeline_workload import pct

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import (
    InMemoryStateStore,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.adapters.storage import FileStateStore
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod, Update
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import builtin_registry
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.ports.state_store import StateStore
from nrirp.domain.topology import Machine

MACHINES = ("server-112-pmem", "sparse-8s-4096")
STORES = ("memory", "file")
STORE_CHOICES = (*STORES, "none")  # none: no persistence at all (to see what the store costs)
CREATE_P99_TARGET_US = {"server-112-pmem": 2_000.0, "sparse-8s-4096": 10_000.0}
CREATE_TARGET_RUNNING = 500
SYNC_TARGET_MS = 200.0
SYNC_TARGET_CONTAINERS = 1000
DEFAULT_CONFIG = {"reservedResources": {"cpu": "750m"}}  # the reference Helm chart's default
MIB = 1 << 20
PERIOD = 100_000

# ---------------------------------------------------------------- workload


@attrs.frozen
class Shape:
    """What kubelet asks for one container: QoS class, CPU in millicores, memory in MiB."""

    kind: str  # besteffort | burstable | guaranteed-frac | guaranteed-int | kube-system
    qos: str  # besteffort | burstable | guaranteed (the pod's cgroup parent)
    namespace: str = "bench"
    cpu_request: int = 0
    cpu_limit: int = 0
    memory_request: int = 0
    memory_limit: int = 0


KINDS = ("besteffort", "burstable", "guaranteed-frac", "guaranteed-int", "kube-system")


def shape(i: int) -> Shape:
    """The i-th container of the mix (period 40): 32.5% BestEffort, 35% Burstable, 27.5%
    fractional Guaranteed, 2.5% integer Guaranteed (1 CPU, every 4th of them 2), 2.5%
    kube-system. At 1,000 containers it asks for about 84 CPUs of server-112-pmem's 112."""
    slot = i % 40
    if slot < 12 or slot == 39:
        return Shape("besteffort", "besteffort")
    if slot < 26:
        request = (25, 50, 100)[i % 3]
        limit = 0 if i % 4 == 0 else 2 * request  # some unlimited burstables
        return Shape("burstable", "burstable", cpu_request=request, cpu_limit=limit,
                     memory_request=64, memory_limit=256)  # fmt: skip
    if slot < 37:
        cpu = (50, 100, 200)[i % 3]
        memory = (128, 256)[i % 2]
        return Shape("guaranteed-frac", "guaranteed", cpu_request=cpu, cpu_limit=cpu,
                     memory_request=memory, memory_limit=memory)  # fmt: skip
    if slot == 37:
        cpu = 2000 if (i // 40) % 4 == 0 else 1000
        return Shape("guaranteed-int", "guaranteed", cpu_request=cpu, cpu_limit=cpu,
                     memory_request=512, memory_limit=512)  # fmt: skip
    if (i // 40) % 2 == 0:
        return Shape("kube-system", "burstable", "kube-system", cpu_request=10, cpu_limit=0,
                     memory_request=32, memory_limit=128)  # fmt: skip
    return Shape("kube-system", "besteffort", "kube-system")


def shares(millis: int) -> int:
    """kubelet's MilliCPUToShares."""
    return max(2, millis * 1024 // 1000) if millis else 2


def oom_score_adj(s: Shape, memory_capacity: int) -> int:
    """kubelet's OOM score adjustment for the container."""
    if s.qos == "guaranteed":
        return -997
    if s.qos == "besteffort":
        return 1000
    adj = 1000 - (1000 * s.memory_request * MIB) // memory_capacity
    return min(max(adj, 3), 999)


def make_pod(i: int, prefix: str, s: Shape) -> Pod:
    uid = f"{prefix}-uid-{i:05d}"
    parent = f"/kubepods/pod{uid}" if s.qos == "guaranteed" else f"/kubepods/{s.qos}/pod{uid}"
    name = f"{prefix}-{s.kind}-{i:05d}"
    return Pod(
        id=f"{prefix}-pod-{i:05d}",
        name=name,
        uid=uid,
        namespace=s.namespace,
        labels={
            "app": prefix,
            "io.kubernetes.pod.name": name,
            "io.kubernetes.pod.namespace": s.namespace,
            "io.kubernetes.pod.uid": uid,
        },
        annotations={"kubernetes.io/config.source": "api"},
        cgroup_parent=parent,
    )


def make_container(p: Pod, s: Shape, memory_capacity: int, state: ContainerState) -> Container:
    resources = LinuxResources(
        cpu_shares=shares(s.cpu_request if s.qos != "besteffort" else 0),
        cpu_quota=s.cpu_limit * PERIOD // 1000 if s.cpu_limit else None,
        cpu_period=PERIOD,
        memory_limit=s.memory_limit * MIB if s.memory_limit else None,
    )
    return Container(
        id=f"{p.id}-ctr",
        pod_id=p.id,
        name="ctr",
        state=state,
        labels={
            "io.kubernetes.container.name": "ctr",
            "io.kubernetes.pod.name": p.name,
            "io.kubernetes.pod.namespace": p.namespace,
        },
        resources=resources,
        oom_score_adj=oom_score_adj(s, memory_capacity),
        cgroups_path=f"{p.cgroup_parent}/{p.id}-ctr",
    )


def workload(
    count: int, prefix: str, memory_capacity: int, start: int = 0
) -> tuple[list[Pod], list[Container], Counter[str], int]:
    """``count`` running one-container pods; also their kinds and the CPU they request (mCPU)."""
    pods: list[Pod] = []
    containers: list[Container] = []
    kinds: Counter[str] = Counter()
    millis = 0
    for i in range(start, start + count):
        s = shape(i)
        p = make_pod(i, prefix, s)
        pods.append(p)
        containers.append(make_container(p, s, memory_capacity, ContainerState.RUNNING))
        kinds[s.kind] += 1
        millis += s.cpu_request
    return pods, containers, kinds, millis


# ---------------------------------------------------------------- pipeline


@attrs.define
class Bench:
    """A started pipeline with the recording adapters the checks read."""

    manager: ResourceManager
    store: StateStore | None
    updates: RecordingRuntimeUpdates
    log: RecordingDecisionLog

    def close(self) -> None:
        if isinstance(self.store, FileStateStore):
            self.store.close()


def new_bench(policy: str, machine: Machine, store_kind: str, directory: str) -> Bench:
    store: StateStore | None = None
    if store_kind == "memory":
        store = InMemoryStateStore()
    elif store_kind == "file":
        store = FileStateStore(directory, background=True)
    updates = RecordingRuntimeUpdates()
    log = RecordingDecisionLog()
    manager = ResourceManager(
        policy=builtin_registry().create(policy),
        machine=machine,
        store=store,
        updates=updates,
        decisions=log,
    )
    config = load_policy_config(policy, DEFAULT_CONFIG) if policy == "topology-aware" else None
    manager.start(config)
    return Bench(manager, store, updates, log)


def memory_capacity(machine: Machine) -> int:
    return sum(n.memory_bytes for n in machine.nodes.values())


Assignment = dict[str, tuple[CPUSet | None, CPUSet | None]]


def assignment(manager: ResourceManager) -> Assignment:
    return {c.id: (c.resources.cpus, c.resources.mems) for c in manager.containers()}


@attrs.define
class UpdateAudit:
    """Updates sent to other containers vs. containers whose cpus/mems changed."""

    calls: int = 0
    updates: int = 0
    most_in_one_call: int = 0
    changed: int = 0
    to_unchanged: int = 0  # an update to a container whose cpus and mems stayed the same
    missed: int = 0  # a changed container that got no update

    def record(
        self, before: Assignment, after: Assignment, updates: Sequence[Update], subject: str
    ) -> None:
        targets = {u.container_id for u in updates if u.container_id != subject}
        changed = {
            cid for cid, value in after.items() if cid != subject and before.get(cid) != value
        }
        self.calls += 1
        self.updates += len(targets)
        self.most_in_one_call = max(self.most_in_one_call, len(targets))
        self.changed += len(changed)
        self.to_unchanged += len(targets - changed)
        self.missed += len(changed - targets)

    @property
    def ok(self) -> bool:
        return self.to_unchanged == 0 and self.missed == 0

    def line(self, operation: str) -> str:
        return (
            f"  {operation:<8} {self.calls} calls: updates to other containers {self.updates} "
            f"(most in one call {self.most_in_one_call}); containers whose cpus/mems changed "
            f"{self.changed}; updates to unchanged containers {self.to_unchanged}; changed "
            f"containers without an update {self.missed}"
        )


# ---------------------------------------------------------------- measurement


@attrs.define
class Result:
    machine: str
    store: str
    running: int
    timings: dict[str, list[float]]
    cpu: dict[str, list[float]]
    by_kind: dict[str, list[float]]
    audits: dict[str, UpdateAudit]
    errors: list[str]
    note: str


class Profiler:
    """cProfile around the measured calls only (off unless ``--profile``)."""

    def __init__(self, enabled: bool) -> None:
        self.profile = cProfile.Profile() if enabled else None
        self.used = False

    @contextmanager
    def on(self, wanted: bool = True) -> Iterator[None]:
        if self.profile is None or not wanted:
            yield
            return
        self.used = True
        self.profile.enable()
        try:
            yield
        finally:
            self.profile.disable()

    def report(self, title: str, top: int) -> None:
        if self.profile is None or not self.used:
            return
        for order in ("tottime", "cumulative"):
            out = io.StringIO()
            pstats.Stats(self.profile, stream=out).sort_stats(order).print_stats(top)
            body = out.getvalue()
            start = body.find("   ncalls")
            print(f"--- cProfile {title}, by {order} (profiled run: times are inflated)")
            print(body[start:].rstrip() if start >= 0 else body.rstrip())


def errors_of(log: RecordingDecisionLog) -> list[str]:
    return [n.message for n in log.notices if n.severity is Severity.ERROR]


def run_cycles(
    policy: str,
    name: str,
    machine: Machine,
    store_kind: str,
    running: int,
    cycles: int,
    profiler: Profiler,
    profile_kinds: Sequence[str] = KINDS,
    profile_ops: Sequence[str] = ("create",),
) -> Result:
    capacity = memory_capacity(machine)
    with tempfile.TemporaryDirectory(prefix="nrirp-bench-ta-") as directory:
        bench = new_bench(policy, machine, store_kind, directory)
        manager = bench.manager
        pods, containers, kinds, millis = workload(running, "run", capacity)
        manager.synchronize(pods, containers)
        unassigned = sum(
            1 for c in manager.containers() if c.resources.cpus is None and running > 0
        )
        if isinstance(bench.store, FileStateStore):
            bench.store.flush()
        mix = ", ".join(f"{kinds[k]} {k}" for k in KINDS if kinds[k])
        note = (
            f"running {running} ({mix or 'none'}; requesting {millis / 1000:.1f} of "
            f"{len(machine.cpus)} CPUs; {running - unassigned}/{running} got a cpuset)"
        )
        errors = errors_of(bench.log)
        bench.log.notices.clear()

        timings: dict[str, list[float]] = {}
        cpu: dict[str, list[float]] = {}
        by_kind: dict[str, list[float]] = {k: [] for k in KINDS}
        audits = {op: UpdateAudit() for op in ("create", "stop", "remove")}

        profiling = False  # set per cycle: is this cycle's container of a profiled kind

        def timed(op: str, fn: Callable[..., object], *args: object) -> object:
            start, cpu_start = time.perf_counter(), time.thread_time()
            with profiler.on(profiling and op in profile_ops):
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
            audited("create", c.id, manager.create_container, p, c)
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


def run_sync(
    policy: str, machine: Machine, store_kind: str, count: int, runs: int, profiler: Profiler
) -> tuple[list[float], list[float], list[str], str]:
    """Milliseconds (wall, thread CPU) of each Synchronize of ``count`` new containers into a
    fresh pipeline, error notices and a note."""
    capacity = memory_capacity(machine)
    pods, containers, _, millis = workload(count, "sync", capacity)
    times: list[float] = []
    cpu_times: list[float] = []
    errors: list[str] = []
    note = ""
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="nrirp-bench-ta-sync-") as directory:
            bench = new_bench(policy, machine, store_kind, directory)
            start, cpu_start = time.perf_counter(), time.thread_time()
            with profiler.on():
                bench.manager.synchronize(pods, containers)
            cpu_times.append((time.thread_time() - cpu_start) * 1e3)
            times.append((time.perf_counter() - start) * 1e3)
            got = sum(1 for c in bench.manager.containers() if c.resources.cpus is not None)
            note = f"{got}/{count} got a cpuset; requesting {millis / 1000:.1f} CPUs"
            errors += errors_of(bench.log)
            bench.close()
    return times, cpu_times, errors, note


# ---------------------------------------------------------------- reporting


def print_result(r: Result) -> None:
    print(f"\n{r.machine}  store={r.store}  {r.note}")
    print(
        f"  {'operation':<12} {'p50 us':>9} {'p90 us':>9} {'p99 us':>9} {'max us':>9} "
        f"{'cpu p50':>9} {'cpu p99':>9} {'n':>5}"
    )
    for op, values in r.timings.items():
        cpu = r.cpu[op]
        print(
            f"  {op:<12} {pct(values, 0.5):>9.0f} {pct(values, 0.9):>9.0f} "
            f"{pct(values, 0.99):>9.0f} {max(values):>9.0f} {pct(cpu, 0.5):>9.0f} "
            f"{pct(cpu, 0.99):>9.0f} {len(values):>5}"
        )
    kinds = [
        f"{k} {len(v)}x p50 {statistics.median(v):.0f} max {max(v):.0f}"
        for k, v in r.by_kind.items()
        if v
    ]
    print(f"  create by kind (us): {'; '.join(kinds)}")
    for op, audit in r.audits.items():
        print(audit.line(op))
    for message in r.errors[:5]:
        print(f"  ERROR notice: {message}")
    if len(r.errors) > 5:
        print(f"  ... {len(r.errors) - 5} more error notices")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machines", nargs="+", default=list(MACHINES), metavar="NAME")
    parser.add_argument("--stores", nargs="+", choices=STORE_CHOICES, default=list(STORES))
    parser.add_argument("--running", type=int, nargs="+", default=[0, 100, 500])
    parser.add_argument("--cycles", type=int, default=200, help="new pods per population")
    parser.add_argument("--sync-containers", type=int, default=SYNC_TARGET_CONTAINERS)
    parser.add_argument("--sync-runs", type=int, default=3)
    parser.add_argument("--no-sync", action="store_true", help="skip the Synchronize runs")
    parser.add_argument("--policy", default="topology-aware", help=argparse.SUPPRESS)
    parser.add_argument(
        "--profile", type=int, metavar="TOP", default=0,
        help="cProfile the measured calls and print the TOP functions per run",
    )  # fmt: skip
    parser.add_argument(
        "--profile-kinds", nargs="+", choices=KINDS, default=list(KINDS), metavar="KIND",
        help=f"profile only the cycles of these container kinds ({', '.join(KINDS)})",
    )  # fmt: skip
    parser.add_argument(
        "--profile-ops", nargs="+", default=["create"], metavar="OP",
        help="operations to profile (default: create; also stop, remove, post-start, ...)",
    )  # fmt: skip
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--clock", choices=("wall", "cpu"), default="wall",
        help="what --check compares with the targets: wall-clock time (default) or the "
        "thread's CPU time (on a machine other processes keep busy)",
    )  # fmt: skip
    args = parser.parse_args()

    failures: list[str] = []
    summary: list[tuple[str, str, int, float, float, float, float, float]] = []
    syncs: list[tuple[str, str, float, float, float, str]] = []
    for name in args.machines:
        machine = expected_machine(load_machine(name))
        for store_kind in args.stores:
            for running in args.running:
                profiler = Profiler(args.profile > 0)
                r = run_cycles(
                    args.policy, name, machine, store_kind, running, args.cycles, profiler,
                    args.profile_kinds, args.profile_ops,
                )  # fmt: skip
                print_result(r)
                profiler.report(f"{name} {store_kind} {running} running", args.profile)
                create, create_cpu = r.timings["create"], r.cpu["create"]
                summary.append(
                    (name, store_kind, running, pct(create, 0.5), pct(create, 0.99), max(create),
                     pct(create_cpu, 0.5), pct(create_cpu, 0.99))
                )  # fmt: skip
                target = CREATE_P99_TARGET_US.get(name)
                checked = pct(create if args.clock == "wall" else create_cpu, 0.99)
                if running == CREATE_TARGET_RUNNING and target and checked >= target:
                    failures.append(
                        f"{name} {store_kind} {running} running: create p99 ({args.clock}) "
                        f"{checked:.0f} us >= {target:.0f} us"
                    )
                for op, audit in r.audits.items():
                    if not audit.ok:
                        failures.append(f"{name} {store_kind} {running}: {audit.line(op).strip()}")
                if r.errors:
                    failures.append(f"{name} {store_kind} {running}: {len(r.errors)} errors")
            if not args.no_sync:
                profiler = Profiler(args.profile > 0)
                times, cpu_times, errors, note = run_sync(
                    args.policy, machine, store_kind, args.sync_containers, args.sync_runs,
                    profiler,
                )  # fmt: skip
                profiler.report(f"{name} {store_kind} sync", args.profile)
                median, cpu_median = statistics.median(times), statistics.median(cpu_times)
                syncs.append((name, store_kind, median, min(times), cpu_median, note))
                checked = median if args.clock == "wall" else cpu_median
                if args.sync_containers >= SYNC_TARGET_CONTAINERS and checked >= SYNC_TARGET_MS:
                    failures.append(
                        f"{name} {store_kind}: Synchronize of {args.sync_containers} median "
                        f"({args.clock}) {checked:.1f} ms >= {SYNC_TARGET_MS:.0f} ms"
                    )
                if errors:
                    failures.append(f"{name} {store_kind} sync: {len(errors)} errors: {errors[0]}")

    print(f"\nCreateContainer decision time ({args.policy}, {args.cycles} creates per row, us)")
    print(
        f"  {'machine':<17} {'store':<7} {'running':>7} {'p50':>8} {'p99':>8} {'max':>8} "
        f"{'cpu p50':>8} {'cpu p99':>8} {'p99 target':>11}"
    )
    for name, store_kind, running, p50, p99, top, cpu50, cpu99 in summary:
        target = CREATE_P99_TARGET_US.get(name)
        shown = f"< {target:.0f}" if target and running == CREATE_TARGET_RUNNING else ""
        print(
            f"  {name:<17} {store_kind:<7} {running:>7} {p50:>8.0f} {p99:>8.0f} {top:>8.0f} "
            f"{cpu50:>8.0f} {cpu99:>8.0f} {shown:>11}"
        )
    if syncs:
        print(
            f"\nSynchronize of {args.sync_containers} new containers "
            f"({args.sync_runs} runs, ms; target < {SYNC_TARGET_MS:.0f})"
        )
        for name, store_kind, median, best, cpu_median, note in syncs:
            print(
                f"  {name:<17} {store_kind:<7} median {median:>7.1f}  min {best:>7.1f}  "
                f"cpu median {cpu_median:>7.1f}  {note}"
            )
    if failures:
        print("\nmissed:" if args.check else "\nnot met:")
        for failure in failures:
            print(f"  {failure}")
    return 1 if args.check and failures else 0


if __name__ == "__main__":
    sys.exit(main())
