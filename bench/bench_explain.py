"""What ``nrirp explain`` costs: ``ResourceManager.explain`` on a populated pipeline.

Explanations are worked out on demand (the policy's engine copied without the container, its
decision made again in the copy, docs/explain.md), so they cost nothing while deciding and
this much when asked. For each catalogue machine and policy, a pipeline is started (the Helm
default config; ``bench_balloons.py``'s ``typed`` config for balloons with ``--typed``) and
synchronized with N running containers of ``bench_topology_aware.py``'s mix; then
``--explains`` containers picked at random are explained, each timed by the wall clock and
the thread's CPU time (milliseconds). Also counted: explanations whose decision today differs
from where the container sits (placed when the node was otherwise).

    .venv/bin/python bench/bench_explain.py
    .venv/bin/python bench/bench_explain.py --machines sparse-8s-4096 --running 500 --typed

In the daemon an explanation runs on the event loop between two NRI requests: a request that
arrives meanwhile waits for it.
"""

from __future__ import annotations

import argparse
import random
import time

from bench_balloons import CONFIGS
from bench_topology_aware import memory_capacity, workload
from pipeline_workload import pct

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import InMemoryStateStore, RecordingDecisionLog
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import builtin_registry

MACHINES = ("server-112-pmem", "sparse-8s-4096")
POLICIES = ("topology-aware", "balloons")


def run(machine_name: str, policy: str, running: int, explains: int, typed: bool) -> str:
    machine = expected_machine(load_machine(machine_name))
    manager = ResourceManager(
        policy=builtin_registry().create(policy),
        machine=machine,
        store=InMemoryStateStore(),
        decisions=RecordingDecisionLog(),
    )
    spec = CONFIGS["typed" if typed and policy == "balloons" else "helm"]
    manager.start(load_policy_config(policy, spec))
    pods, containers, _, _ = workload(running, "r", memory_capacity(machine))
    manager.synchronize(pods, containers)
    ids = [c.id for c in manager.containers()]
    picked = random.Random(7).sample(ids, min(explains, len(ids)))
    wall: list[float] = []
    cpu: list[float] = []
    moved = 0
    for cid in picked:
        w, c = time.perf_counter(), time.thread_time()
        explanation = manager.explain(cid)
        cpu.append((time.thread_time() - c) * 1000)
        wall.append((time.perf_counter() - w) * 1000)
        moved += bool(explanation.notes)
    config = "typed" if typed and policy == "balloons" else "helm"
    return (
        f"  {machine_name:16}  {policy:15} {config:6} {running:7}  {pct(wall, 0.5):8.1f} "
        f"{pct(wall, 0.99):8.1f} {max(wall):8.1f}  {pct(cpu, 0.5):8.1f} {pct(cpu, 0.99):8.1f}"
        f"  {moved}/{len(picked)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machines", nargs="+", default=list(MACHINES), metavar="NAME")
    parser.add_argument("--policies", nargs="+", choices=POLICIES, default=list(POLICIES))
    parser.add_argument("--running", type=int, nargs="+", default=[100, 500])
    parser.add_argument("--explains", type=int, default=50, help="explanations per row")
    parser.add_argument("--typed", action="store_true", help="balloons: the typed config")
    args = parser.parse_args()
    print("explain time (ms): wall p50, p99, max; thread CPU p50, p99; would go elsewhere now")
    print(
        f"  {'machine':16}  {'policy':15} {'config':6} {'running':>7}  {'p50':>8} {'p99':>8}"
        f" {'max':>8}  {'cpu p50':>8} {'cpu p99':>8}  moved"
    )
    for machine in args.machines:
        for policy in args.policies:
            for running in args.running:
                print(run(machine, policy, running, args.explains, args.typed), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
