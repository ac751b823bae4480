"""CreateContainer under the Go harness with and without the node agent.

The same runs as ``bench/gomockrt_topology_aware.py`` (``nrimockrt``, the Go NRI runtime side,
driving ``--pods`` live pods of mixed QoS against ``nrirp run --policy topology-aware`` on a
fake catalogue machine), interleaved round by round between two daemons:

- ``off``: the daemon as there (``--config-file``, no agent);
- ``on``: the same daemon with the node agent (``--kubeconfig`` to the wire-level fake API
  server on 127.0.0.1 in this process, ``--node-name``, ``--topology-update-interval 1``): every
  committed operation signals the agent, which reads the zones and writes NodeResourceTopology
  at most once a second. (``--config-file`` stays, so configuration resources are not watched:
  they cost nothing per request.)

Prints CreateContainer p50/p99 (medians across rounds) of both and the ratio on/off, and the
NodeResourceTopology writes per run. The machine is shared and busy: compare within a run.

    .venv/bin/python bench/gomockrt_node_agent.py --rounds 5
"""

from __future__ import annotations

import argparse
import shlex
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gomockrt_topology_aware import (  # type: ignore[import-not-found]
    VARIANTS,
    build,
    daemon_command,
    event,
    nrimockrt_run,
    scratch_setup,
)
from tests.support.kube_apiserver import FakeApiServer

NODE = "gomockrt-node"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machine", default="server-112-pmem")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--sync", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--variant", choices=list(VARIANTS), default="fractional")
    args = parser.parse_args()

    bindir = build() / "bin"
    workdir, tree, config, cgroups = scratch_setup("gomockrt-agent", args.machine)
    server = FakeApiServer().start()
    server.add_node(NODE)
    kubeconfig = server.write_kubeconfig(workdir / "kubeconfig")
    agent_args = (
        f" --kubeconfig {shlex.quote(str(kubeconfig))} --node-name {NODE}"
        " --topology-update-interval 1"
    )
    runs: dict[str, list[dict[str, Any]]] = {"off": [], "on": []}
    writes: list[int] = []
    try:
        for number in range(args.rounds):
            for mode in ("off", "on"):
                label = f"{mode}{number}"
                command = daemon_command(
                    "topology-aware",
                    tree,
                    config,
                    workdir / f"state-{label}",
                    cgroups,
                    workdir / f"nrirp-{label}.log",
                )
                if mode == "on":
                    head, _, tail = command.partition(" --nri-socket %s")
                    command = f"{head}{agent_args} --nri-socket %s{tail}"
                before = server.count("PATCH", "noderesourcetopologies")
                run, _ = nrimockrt_run(
                    bindir / "nrimockrt", workdir, label, command, VARIANTS[args.variant], args
                )
                runs[mode].append(run)
                if mode == "on":
                    writes.append(server.count("PATCH", "noderesourcetopologies") - before)
            print(f"round {number + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        server.stop()

    def median(mode: str, key: str) -> float:
        return statistics.median(event(r, "CreateContainer", key) for r in runs[mode])

    off50, on50 = median("off", "p50_us"), median("on", "p50_us")
    print(
        f"{args.machine}: {args.pods} live pods ({args.variant}), {args.rounds} interleaved "
        "rounds; CreateContainer, medians across rounds (us)"
    )
    print(f"  {'agent':<6}{'p50':>10}{'p99':>10}")
    print(f"  {'off':<6}{off50:>10.1f}{median('off', 'p99_us'):>10.1f}")
    print(f"  {'on':<6}{on50:>10.1f}{median('on', 'p99_us'):>10.1f}")
    print(f"  ratio on/off p50: {on50 / off50:.2f}")
    for mode in ("off", "on"):
        rounds = [round(event(r, "CreateContainer", "p50_us")) for r in runs[mode]]
        print(f"  per-round p50 {mode}: {rounds}")
    print(f"  NodeResourceTopology writes per run (on): {writes}")
    print(f"raw outputs: {workdir}  (a shared, busy 2-core machine: numbers are noisy)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
