"""CreateContainer under gomockrt with the daemon at different log levels, interleaved.

``nrirp run`` logs a decision line per admitted container at its default level, ``info``;
``bench/gomockrt_topology_aware.py`` runs it at ``warning``. This script runs the same
workload (``--variant`` of that script, ``--pods`` live pods of mixed QoS on
``server-112-pmem``) with the daemon at each of ``--levels``, in a shuffled order each round,
and prints per round the CreateContainer p50 and p99 of each level, then the medians and the
median per-round difference of each level to the first one (what the log lines cost).

    .venv/bin/python bench/gomockrt_log_level.py --rounds 30
    .venv/bin/python bench/gomockrt_log_level.py --rounds 10 --levels warning info debug

About 1.2 s per run (20 rounds of two levels: under a minute). Run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gomockrt_topology_aware import (
    VARIANTS,
    build,
    daemon_command,
    event,
    nrimockrt_run,
    scratch_setup,
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--levels", nargs="+", default=["warning", "info"])
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="fractional")
    parser.add_argument("--machine", default="server-112-pmem")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--sync", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=20)
    args = parser.parse_args()

    bindir = build() / "bin"
    workdir, tree, config, cgroups = scratch_setup("gomockrt-log", args.machine)
    results: dict[str, list[tuple[float, float]]] = {level: [] for level in args.levels}
    for number in range(args.rounds):
        order = list(args.levels)
        random.shuffle(order)
        for level in order:
            label = f"{level}{number}"
            command = daemon_command(
                "topology-aware",
                tree,
                config,
                workdir / f"state-{label}",
                cgroups,
                workdir / f"nrirp-{label}.log",
                log_level=level,
            )
            run, _ = nrimockrt_run(
                bindir / "nrimockrt", workdir, label, command, VARIANTS[args.variant], args
            )
            p50 = event(run, "CreateContainer", "p50_us")
            p99 = event(run, "CreateContainer", "p99_us")
            results[level].append((p50, p99))
            print(
                f"round {number + 1} {level:>8}: CreateContainer p50 {p50:8.1f} us p99 {p99:8.1f}",
                file=sys.stderr,
                flush=True,
            )
    first = args.levels[0]
    print(
        f"{args.machine}, {args.pods} live pods ({args.variant}), {args.rounds} interleaved "
        f"rounds; CreateContainer, medians (us); difference: median of the per-round differences "
        f"to {first}"
    )
    print(f"  {'level':<8} {'p50':>8} {'p99':>8} {'d p50':>8} {'d p99':>8}")
    for level in args.levels:
        rows = results[level]
        p50 = statistics.median(r[0] for r in rows)
        p99 = statistics.median(r[1] for r in rows)
        d50 = statistics.median(r[0] - b[0] for r, b in zip(rows, results[first], strict=True))
        d99 = statistics.median(r[1] - b[1] for r, b in zip(rows, results[first], strict=True))
        print(f"  {level:<8} {p50:8.1f} {p99:8.1f} {d50:+8.1f} {d99:+8.1f}")
    print(f"raw outputs: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
