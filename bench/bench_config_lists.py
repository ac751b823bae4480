"""CreateContainer time against the length of config lists (issue 9 item 3).

For each policy (topology-aware, balloons) and each list length (``--lengths``, default 10
and 50,000), a ResourceManager with in-memory adapters is started with
``reservedPoolNamespaces`` of that many names (``team-00000`` ...) plus two globs
(``infra-*``, ``*-system``); for balloons also a balloon type whose ``namespaces`` and
``matchExpressions`` (``In`` and ``MatchesAny``) list that many values. Then ``--pods`` pods
alternate between a namespace in the list, one matched by a glob and one matched by nothing,
and each pod's CreateContainer is timed (wall clock, microseconds; the pod is removed again,
so the population stays small). The start (loading the config and compiling its lists) is
timed once.

Before the lists were compiled once per configuration, 50,000 reservedPoolNamespaces made
every topology-aware CreateContainer take over 2 s (fnmatch per pattern and decision).

    .venv/bin/python bench/bench_config_lists.py
    .venv/bin/python bench/bench_config_lists.py --lengths 10 1000 50000 --pods 300
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from nrirp.adapters.documents import annotation_parser, load_policy_config
from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import InMemoryStateStore, RecordingDecisionLog, RecordingRuntimeUpdates
from nrirp.domain.model import Container, LinuxResources, Pod
from nrirp.domain.model.kubelet import shares_from_millis
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import builtin_registry
from nrirp.domain.topology import Machine


def names(count: int) -> list[str]:
    return [f"team-{n:05d}" for n in range(count)]


def config_data(policy: str, length: int) -> dict[str, Any]:
    listed = names(length)
    data: dict[str, Any] = {
        "reservedResources": {"cpu": "750m"},
        "reservedPoolNamespaces": [*listed, "infra-*", "*-system"],
    }
    if policy == "balloons":
        data["reservedPoolNamespaces"] = listed[: length // 2]
        data["balloonTypes"] = [
            {
                "name": "labelled",
                "matchExpressions": [
                    {"key": "pod/labels/team", "operator": "In", "values": listed},
                    {"key": "name", "operator": "MatchesAny", "values": [*listed, "side-*"]},
                ],
            },
            {"name": "teams", "namespaces": [*listed[length // 2 :], "infra-*", "*-system"]},
        ]
    return data


def pod_of(n: int, length: int) -> Pod:
    namespace = (f"team-{(n * 7919) % length:05d}", f"infra-{n}", f"prod-{n % 3}")[n % 3]
    return Pod(
        id=f"pod-{n}",
        name=f"p{n}",
        uid=f"uid-{n}",
        namespace=namespace,
        cgroup_parent=f"/kubepods/burstable/poduid-{n}",
        labels={"team": f"nobody-{n}"},
    )


def container_of(pod: Pod) -> Container:
    return Container(
        id=f"{pod.id}-c",
        pod_id=pod.id,
        name="c",
        resources=LinuxResources(cpu_shares=shares_from_millis(250)),
    )


def run(policy: str, length: int, pods: int, machine: Machine) -> tuple[float, list[float]]:
    registry = builtin_registry()
    manager = ResourceManager(
        policy=registry.create(policy),
        machine=machine,
        store=InMemoryStateStore(),
        updates=RecordingRuntimeUpdates(),
        decisions=RecordingDecisionLog(),
        annotation_parser=annotation_parser(),
    )
    data = config_data(policy, length)
    started = time.perf_counter()
    manager.start(load_policy_config(policy, data, registry))
    start = time.perf_counter() - started
    times: list[float] = []
    for n in range(pods):
        pod = pod_of(n, length)
        ctr = container_of(pod)
        manager.run_pod(pod)
        before = time.perf_counter()
        manager.create_container(pod, ctr)
        times.append(time.perf_counter() - before)
        manager.stop_container(pod, ctr)
        manager.remove_container(pod, ctr)
        manager.remove_pod(pod)
    return start, times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[10, 50_000])
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--machine", default="server-112-pmem")
    parser.add_argument("--policies", nargs="+", default=["topology-aware", "balloons"])
    args = parser.parse_args()
    machine = expected_machine(load_machine(args.machine))
    print(f"machine {args.machine}, {args.pods} CreateContainer per row (microseconds)")
    print(f"{'policy':16} {'list length':>11} {'start ms':>9} {'p50':>8} {'p99':>8} {'max':>8}")
    for policy in args.policies:
        for length in args.lengths:
            start, times = run(policy, length, args.pods, machine)
            us = sorted(t * 1e6 for t in times)
            p99 = us[min(len(us) - 1, int(len(us) * 0.99))]
            print(
                f"{policy:16} {length:>11,} {start * 1e3:>9.1f} "
                f"{statistics.median(us):>8.0f} {p99:>8.0f} {us[-1]:>8.0f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
