"""What a moved container costs the pipeline: cache writes, decisions, controllers, the store
and the decision log, without any policy logic.

A policy that only moves: each CreateContainer gives the new container one CPU and moves ``K``
of the running containers to the other of two shared cpusets (as an exclusive container
arriving in a pool moves the pool's shared containers). The cost per moved container is
``(create(K) - create(0)) / K``, thread CPU time, medians; it is also split into what runs
inside the policy call (the cache writes and decision records the policy makes) and the rest
(controllers, updates, commit, decision log, save). ``create(0)`` is the per-operation
constant of a create.

    .venv/bin/python bench/bench_pipeline_moves.py
    .venv/bin/python bench/bench_pipeline_moves.py --running 100 1000 --logs null text json
    .venv/bin/python bench/bench_pipeline_moves.py --stores memory file none

Logs: ``recording`` keeps Decision objects (the tests' sink); ``null`` drops them; ``warning``
is the daemon's LoggingDecisionLog below INFO; ``text`` and ``json`` are the daemon's decision
lines at INFO, to /dev/null.
"""

from __future__ import annotations

import argparse
import io
import logging
import statistics
import tempfile
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import (
    InMemoryStateStore,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.adapters.storage import FileStateStore
from nrirp.adapters.system import LoggingDecisionLog, configure_logging
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyContext
from nrirp.domain.ports.decisions import DecisionLog, NullDecisionLog
from nrirp.domain.ports.state_store import StateStore

SHARED = (CPUSet.parse("1-55,57-111"), CPUSet.parse("2-55,57-111"))


class Mover(TemplatePolicy):
    """Moves the first ``moves`` running containers to the other shared cpuset per create
    (the other hooks are the template policy's no-ops)."""

    name: ClassVar[str] = "mover"
    description: ClassVar[str] = "moves running containers (benchmark)"
    config_type: ClassVar[type[Any] | None] = None

    def __init__(self) -> None:
        super().__init__()
        self.ctx: PolicyContext | None = None
        self.victims: list[str] = []
        self.moves = 0
        self.flip = False
        self.seconds: list[float] = []

    def start(self, ctx: PolicyContext, config: Any) -> None:
        super().start(ctx, config)
        self.ctx = ctx

    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None:
        assert self.ctx is not None
        for ctr in added:
            self.ctx.cache.set_resources(ctr.id, LinuxResources(cpus=SHARED[0], mems=CPUSet.of(0)))

    def allocate(self, container: Container) -> None:
        started = time.thread_time()
        assert self.ctx is not None
        cache = self.ctx.cache
        cache.set_resources(container.id, LinuxResources(cpus=CPUSet.of(0), mems=CPUSet.of(0)))
        self.ctx.record_decision(cache.require_container(container.id), "exclusive")
        self.flip = not self.flip
        change = LinuxResources(cpus=SHARED[self.flip])
        for cid in self.victims[: self.moves]:
            cache.set_resources(cid, change)
            self.ctx.record_decision(cache.require_container(cid), "shared")
        self.seconds.append(time.thread_time() - started)


def decision_log(kind: str) -> DecisionLog:
    if kind == "recording":
        return RecordingDecisionLog()
    if kind == "null":
        return NullDecisionLog()
    level = "warning" if kind == "warning" else "info"
    configure_logging(level, "json" if kind == "json" else "text", io.StringIO())
    sink = open("/dev/null", "w")  # noqa: SIM115 - lives as long as the process
    handler = logging.getLogger("nrirp").handlers[0]
    assert isinstance(handler, logging.StreamHandler)
    handler.setStream(sink)
    return LoggingDecisionLog()


def measure(
    running: int, moves: Sequence[int], log_kind: str, store_kind: str, cycles: int
) -> dict[int, tuple[float, float]]:
    """Median create and policy-call microseconds per number of moved containers."""
    with tempfile.TemporaryDirectory(prefix="nrirp-bench-moves-") as directory:
        store: StateStore | None = None
        if store_kind == "memory":
            store = InMemoryStateStore()
        elif store_kind == "file":
            store = FileStateStore(directory)
        log = decision_log(log_kind)
        policy = Mover()
        manager = ResourceManager(
            policy=policy,
            machine=expected_machine(load_machine("server-112-pmem")),
            store=store,
            updates=RecordingRuntimeUpdates(),
            decisions=log,
        )
        manager.start()
        pods = [
            Pod(id=f"p{i}", name=f"pod{i}", uid=f"u{i}", namespace="bench",
                cgroup_parent=f"/kubepods/burstable/podu{i}")
            for i in range(running)
        ]  # fmt: skip
        containers = [
            Container(id=f"{i:064x}", pod_id=f"p{i}", name="ctr", state=ContainerState.RUNNING,
                      resources=LinuxResources(cpu_shares=256, cpu_period=100_000,
                                               cpu_quota=50_000))
            for i in range(running)
        ]  # fmt: skip
        manager.synchronize(pods, containers)
        policy.victims = [c.id for c in containers]
        results: dict[int, tuple[float, float]] = {}
        for k in moves:
            policy.moves = k
            policy.seconds.clear()
            times: list[float] = []
            for n in range(cycles):
                pod = Pod(id=f"new{k}-{n}", name=f"new{n}", uid=f"nu{k}-{n}", namespace="bench",
                          cgroup_parent=f"/kubepods/podnu{k}-{n}")  # fmt: skip
                ctr = Container(id=f"new{k}-{n}-ctr", pod_id=pod.id, name="ctr",
                                resources=LinuxResources(cpu_shares=1024, cpu_period=100_000,
                                                         cpu_quota=100_000))  # fmt: skip
                manager.run_pod(pod)
                started = time.thread_time()
                result = manager.create_container(pod, ctr)
                times.append(time.thread_time() - started)
                if len(result.updates) != k:
                    raise SystemExit(f"expected {k} updates, got {len(result.updates)}")
                manager.remove_container(pod, ctr)
                if isinstance(log, RecordingDecisionLog):
                    log.decisions.clear()
            results[k] = (statistics.median(times) * 1e6, statistics.median(policy.seconds) * 1e6)
        if isinstance(store, FileStateStore):
            store.close()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--running", type=int, nargs="+", default=[500])
    parser.add_argument("--moves", type=int, default=130, help="containers moved per create")
    parser.add_argument(
        "--logs",
        nargs="+",
        default=["recording", "text", "json"],
        choices=["recording", "null", "warning", "text", "json"],
    )
    parser.add_argument(
        "--stores", nargs="+", default=["memory"], choices=["memory", "file", "none"]
    )
    parser.add_argument("--cycles", type=int, default=60)
    args = parser.parse_args()
    print(f"thread CPU time, medians of {args.cycles} creates, {args.moves} moved per create (us)")
    print(
        f"  {'running':>7}  {'store':<6}  {'log':<9}  {'create(0)':>9}  {'per moved':>9}"
        f"  {'in policy call':>14}  {'rest':>6}"
    )
    for running in args.running:
        if running < args.moves:
            raise SystemExit(f"--running {running} is below --moves {args.moves}")
        for store in args.stores:
            for log in args.logs:
                r = measure(running, [0, args.moves], log, store, args.cycles)
                (base, base_policy), (moved, moved_policy) = r[0], r[args.moves]
                per = (moved - base) / args.moves
                in_policy = (moved_policy - base_policy) / args.moves
                print(
                    f"  {running:>7}  {store:<6}  {log:<9}  {base:>9.0f}  {per:>9.2f}"
                    f"  {in_policy:>14.2f}  {per - in_policy:>6.2f}"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
