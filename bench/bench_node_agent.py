"""The node agent's NodeResourceTopology exports: what one costs, and how many API calls 100 pod
creations make.

1. **Update cost**, per catalogue machine and policy with N containers placed: reading the zones
   from the resource manager (``topology_zones()``, under the pipeline lock), building the
   NodeResourceTopology document, and writing it (server-side apply through lightkube to the
   wire-level fake API server on 127.0.0.1, HTTP + JSON). Medians of ``--repeat`` runs.
2. **API calls per 100 creations**: a ResourceManager with the NodeAgent (the daemon's export
   path: ``topology_changed()`` after each commit, the rate-limited export task) over the
   wire-level server; 100 containers created back to back (a pod storm) and paced over a few
   seconds; counts the NodeResourceTopology PATCH requests the server saw. The bound is
   ``1 + elapsed / interval`` (+1 for the trailing write).

    .venv/bin/python bench/bench_node_agent.py
    .venv/bin/python bench/bench_node_agent.py --machines server-4s-144 --containers 500
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dependency_injector import providers
from tests.support.kube_apiserver import FakeApiServer

from nrirp.adapters.fakehw import FakeHardwareDiscovery, load_machine
from nrirp.adapters.kubernetes import NodeAgent, topology_document
from nrirp.adapters.kubernetes.lightkube_cluster import LightkubeCluster, client_config
from nrirp.adapters.memory import InMemoryStateStore, RecordingRuntimeUpdates
from nrirp.app.embed import EmbeddedContainer, KubernetesPod

NODE = "bench-node"
MEMORY = 64 << 30
CONFIGS = {
    "topology-aware": "reservedResources: {cpu: 750m}",
    "balloons": "reservedResources: {cpu: 750m}",
}


def manager_for(policy: str, machine: str, agent: Any = None) -> Any:
    from nrirp.adapters.documents import load_policy_config

    container = EmbeddedContainer()
    container.config.from_dict({"policy": policy})
    adapters = container.adapters.container
    adapters.hardware.override(providers.Object(FakeHardwareDiscovery(load_machine(machine))))
    adapters.topology_hints.override(providers.Object(None))
    adapters.state_store.override(providers.Object(InMemoryStateStore()))
    adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    if agent is not None:
        adapters.kubernetes.override(providers.Object(agent))
    core = container.core.container
    manager = core.resource_manager()
    manager.start(load_policy_config(policy, CONFIGS[policy], core.policy_registry()))
    return manager


def pod(index: int) -> Any:
    manifest = {
        "metadata": {"name": f"p{index}", "namespace": "bench", "uid": f"uid-{index}"},
        "spec": {
            "containers": [
                {"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
            ]
        },
    }
    return KubernetesPod.from_manifest(manifest)


def create(manager: Any, index: int) -> None:
    spec = pod(index)
    p = spec.sandbox(f"sandbox-{index}")
    manager.run_pod(p)
    ctr = spec.container("c", f"ctr-{index}", pod_id=p.id, memory_capacity=MEMORY)
    manager.create_container(p, ctr)


def update_cost(args: argparse.Namespace, server: FakeApiServer, kubeconfig: Path) -> None:
    print(f"== update cost (medians of {args.repeat}; us)")
    print(
        f"{'machine':<18}{'policy':<16}{'ctrs':>6}{'zones':>7}{'read':>9}{'build':>9}{'write':>9}"
    )

    async def write(document: dict[str, Any]) -> float:
        cluster = LightkubeCluster(client_config(str(kubeconfig)))
        try:
            await cluster.apply_topology(document)  # warm the connection
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                await cluster.apply_topology(document)
                times.append(time.perf_counter() - start)
            return statistics.median(times)
        finally:
            await cluster.close()

    for machine in args.machines:
        for policy in args.policies:
            manager = manager_for(policy, machine)
            for i in range(args.containers):
                create(manager, i)
            reads, builds = [], []
            zones: Any = ()
            for _ in range(args.repeat):
                start = time.perf_counter()
                zones = manager.topology_zones()
                reads.append(time.perf_counter() - start)
                start = time.perf_counter()
                document = topology_document(NODE, policy, zones)
                builds.append(time.perf_counter() - start)
            written = asyncio.run(write(document))
            print(
                f"{machine:<18}{policy:<16}{args.containers:>6}{len(zones):>7}"
                f"{statistics.median(reads) * 1e6:>9.0f}{statistics.median(builds) * 1e6:>9.0f}"
                f"{written * 1e6:>9.0f}"
            )


def calls_per_100(args: argparse.Namespace, server: FakeApiServer, kubeconfig: Path) -> None:
    print(f"\n== NodeResourceTopology writes per 100 creations (interval {args.interval} s)")
    print(
        f"{'pace':<14}{'elapsed s':>10}{'writes':>8}{'bound':>7}"
        f"{'create p50 us: agent':>22}{'no agent':>10}"
    )
    for label, gap in (("burst", 0.0), ("paced 20 ms", 0.02), ("paced 50 ms", 0.05)):
        node = f"{NODE}-{label.split()[0]}-{gap}"

        async def run(
            with_agent: bool, node: str = node, gap: float = gap
        ) -> tuple[float, int, list[float]]:
            agent = None
            if with_agent:
                cluster = LightkubeCluster(client_config(str(kubeconfig)))
                agent = NodeAgent(cluster, node=node, topology_interval=args.interval)
            manager = manager_for("topology-aware", args.machines[0], agent)
            if agent is not None:
                agent.attach_topology("topology-aware", manager.topology_zones)
                await agent.start()
            await asyncio.sleep(0.5)  # the first export (at start) is done
            before = server.count("PATCH", "noderesourcetopologies")
            started = time.perf_counter()
            times = []
            for i in range(100):
                t0 = time.perf_counter()
                create(manager, i)
                times.append(time.perf_counter() - t0)
                await asyncio.sleep(gap)
            elapsed = time.perf_counter() - started
            await asyncio.sleep(args.interval + 0.5)  # the trailing write
            writes = server.count("PATCH", "noderesourcetopologies") - before
            if agent is not None:
                await agent.stop()
            return elapsed, writes, times

        elapsed, writes, times = asyncio.run(run(True))
        _, _, plain = asyncio.run(run(False))
        bound = 2 + int(elapsed / args.interval)
        print(
            f"{label:<14}{elapsed:>10.2f}{writes:>8}{bound:>7}"
            f"{statistics.median(times) * 1e6:>22.0f}{statistics.median(plain) * 1e6:>10.0f}"
        )
        if writes > bound:
            print(f"FAIL: {writes} writes > bound {bound}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--machines", nargs="+", default=["box-16", "server-4s-144", "server-112-pmem"]
    )
    parser.add_argument("--policies", nargs="+", default=["topology-aware", "balloons"])
    parser.add_argument("--containers", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    server = FakeApiServer().start()
    for suffix in ("", "-burst-0.0", "-paced-0.02", "-paced-0.05"):
        server.add_node(NODE + suffix)
    try:
        kubeconfig = server.write_kubeconfig(Path(tempfile.mkdtemp()) / "kubeconfig")
        update_cost(args, server, kubeconfig)
        calls_per_100(args, server, kubeconfig)
    finally:
        server.stop()
    print("\n(a shared 2-core machine: absolute numbers move with the load of other jobs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
