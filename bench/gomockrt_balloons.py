"""The daemon with the balloons policy vs the no-op Go stub, end to end under gomockrt.

As ``gomockrt_topology_aware.py`` (whose helpers it uses): ``nrimockrt`` (the Go NRI 0.6.1
runtime side, ``tools/gomockrt``) drives ``--pods`` live pods of mixed QoS (``-qos mix``)
against the Go ``nristub`` and ``nrirp run --policy balloons --sysfs-root TREE`` in turn,
``--rounds`` interleaved rounds per variant, on a catalogue machine's sysfs tree (default
server-112-pmem, 112 CPUs). The config is the reference Helm chart's default
(``reservedResources: {cpu: 750m}``): every pod lands in the one ``default`` balloon, which
inflates as their requests add up, and each time its CPUs change every container in it gets an
update (sent with the CreateContainer reply).

Variants: ``fractional`` (nrimockrt's defaults: Guaranteed 500m, Burstable 100m..500m) and
``integer`` (``-cpu-request 250 -cpu-limit 1000``).

After the create phase nrimockrt dumps every live container's cpuset as it applied them; the
script checks it: every container pinned to the same cpuset (the default balloon), of exactly
``max(1, ceil(sum of requests))`` CPUs of the machine, with memory nodes covering those CPUs'
nodes, and the reserved CPU used by none of them.

    .venv/bin/python bench/gomockrt_balloons.py                      # 5 rounds, 200 pods
    .venv/bin/python bench/gomockrt_balloons.py --rounds 3 --variants fractional

Prints per variant CreateContainer p50/p99 of both plugins (medians across rounds) and the
ratio daemon/stub of the p50s; exits 1 if a ratio is above ``--max-ratio`` (default 4) or a
cpuset check fails. ``--probe`` runs the daemon under ``bench/tail_probe.py`` (as
``gomockrt_topology_aware.py --probe``; ``tail_probe.py --summary FILE``).
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from gomockrt_topology_aware import TREND, VARIANTS, build, daemon_command, event, nrimockrt_run

from nrirp.adapters.fakehw import expected_machine, load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import scratch_dir
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import millis_from_shares
from nrirp.domain.topology import Machine

CONFIG = "reservedResources:\n  cpu: 750m\n"  # the reference Helm chart's default


def check_dump(
    dump: list[dict[str, Any]], machine: Machine, expected: int
) -> tuple[list[str], str]:
    """Problems with the cpusets nrimockrt applied, and a one-line description of them."""
    problems: list[str] = []
    node_of = {cpu.id: cpu.node_id for cpu in machine.cpus.values()}
    if len(dump) != expected:
        problems.append(f"{len(dump)} live containers in the dump, expected {expected}")
    cpusets = {entry["cpus"] for entry in dump}
    requested = sum(millis_from_shares(int(e["shares"])) if e["shares"] else 0 for e in dump)
    if len(cpusets) != 1:
        problems.append(f"{len(cpusets)} different cpusets, expected one (the default balloon)")
    for entry in dump:
        name = f"{entry['pod']}/{entry['container']} ({entry['qos']})"
        if not entry["cpus"] or not entry["mems"]:
            problems.append(f"{name}: not pinned (cpus={entry['cpus']!r} mems={entry['mems']!r})")
            continue
        cpus, mems = CPUSet.parse(entry["cpus"]), CPUSet.parse(entry["mems"])
        if not cpus <= machine.online:
            problems.append(f"{name}: cpus {cpus} not all online CPUs of the machine")
        nodes = CPUSet.from_ids(node_of[c] for c in cpus if c in node_of)
        if not nodes <= mems:
            problems.append(f"{name}: mems {mems} miss the nodes {nodes} of its cpus {cpus}")
    balloon = CPUSet.parse(next(iter(cpusets))) if len(cpusets) == 1 and dump else CPUSet()
    want = min(max(1, math.ceil(requested / 1000)), len(machine.online) - 1)
    if dump and len(balloon) != want:
        problems.append(f"the balloon has {len(balloon)} CPUs for {requested}m, expected {want}")
    unused = machine.online - balloon
    if dump and not unused:
        problems.append("every CPU is in the default balloon: the reserved CPU is not kept")
    described = (
        f"{len(dump)} containers on {len(balloon)} CPUs ({balloon}) for {requested}m; "
        f"{len(unused)} CPUs outside the balloon"
    )
    return problems, described


def median(runs: list[dict[str, Any]], key: str) -> float:
    """The median across rounds of a CreateContainer statistic."""
    return statistics.median(event(r, "CreateContainer", key) for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machine", default="server-112-pmem", help="catalogue machine")
    parser.add_argument("--rounds", type=int, default=5, help="runs per plugin and variant")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--sync", type=int, default=10, help="containers to synchronize")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--max-ratio", type=float, default=4.0, help="fail above this ratio")
    parser.add_argument("--workdir", type=Path, help="keep every output here")
    parser.add_argument(
        "--probe", action="store_true", help="run the daemon under tail_probe.py (slower)"
    )
    args = parser.parse_args()

    bindir = build() / "bin"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gomockrt-balloons-"))
    workdir.mkdir(parents=True, exist_ok=True)
    spec = load_machine(args.machine)
    machine = expected_machine(spec)
    if args.workdir is None:
        tree = Path(tempfile.mkdtemp(prefix="gomockrt-balloons-sysfs-", dir=scratch_dir())) / "sys"
    else:
        tree = workdir / f"sysfs-{args.machine}"
    if not tree.exists():
        write_sysfs(resolve(spec, f"machine {spec.name}"), tree)
    config = workdir / "balloons.yaml"
    config.write_text(CONFIG)
    cgroup_root = workdir / "no-cgroups"
    cgroup_root.mkdir(exist_ok=True)

    failures: list[str] = []
    rows: list[tuple[str, float, float, float, float, float]] = []
    for variant in args.variants:
        extra = VARIANTS[variant]
        runs: dict[str, list[dict[str, Any]]] = {"stub": [], "daemon": []}
        trends: list[str] = []
        for round_number in range(args.rounds):
            label = f"{variant}{round_number}"
            state = workdir / f"state-{label}"
            daemon_log = workdir / f"nrirp-{label}.log"
            commands = {
                "stub": f"{shlex.quote(str(bindir / 'nristub'))} -socket %s",
                "daemon": daemon_command(
                    "balloons",
                    tree,
                    config,
                    state,
                    cgroup_root,
                    daemon_log,
                    workdir / f"probe-{label}.json" if args.probe else None,
                ),
            }
            for plugin, command in commands.items():
                run, stdout = nrimockrt_run(
                    bindir / "nrimockrt", workdir, f"{plugin}-{label}", command, extra, args
                )
                runs[plugin].append(run)
                if plugin == "daemon":
                    trend = TREND.search(stdout)
                    trends.append(trend.group(1) if trend else "?")
                    dump = json.loads((workdir / f"daemon-{label}.dump.json").read_text())
                    problems, described = check_dump(dump or [], machine, args.pods + args.sync)
                    print(f"  {label} cpusets: {described}", file=sys.stderr)
                    failures += [f"{variant} round {round_number + 1}: {p}" for p in problems]
            print(f"{variant}: round {round_number + 1}/{args.rounds} done", file=sys.stderr)

        stub_p50, stub_p99 = median(runs["stub"], "p50_us"), median(runs["stub"], "p99_us")
        daemon_p50 = median(runs["daemon"], "p50_us")
        daemon_p99 = median(runs["daemon"], "p99_us")
        ratio = daemon_p50 / stub_p50
        rows.append((variant, stub_p50, stub_p99, daemon_p50, daemon_p99, ratio))
        if not ratio <= args.max_ratio:
            failures.append(f"{variant}: CreateContainer p50 ratio {ratio:.2f} > {args.max_ratio}")
        print(f"\n== {variant} ({' '.join(extra) or 'nrimockrt defaults'}), medians of p50 (us)")
        print(f"{'event':<22}{'Go nristub':>12}{'daemon':>12}{'ratio':>8}")
        for name in (e["event"] for e in runs["stub"][0]["events"]):
            go = statistics.median(event(r, name, "p50_us") for r in runs["stub"])
            py = statistics.median(event(r, name, "p50_us") for r in runs["daemon"])
            print(f"{name:<22}{go:>12.1f}{py:>12.1f}{py / go:>8.2f}")
        updates = [r["updates_in_create_responses"] for r in runs["daemon"]]
        print(f"daemon: updates in CreateContainer responses per run {updates}")
        for number, trend in enumerate(trends, 1):
            print(
                f"daemon CreateContainer trend (p50/mean us per quarter), round {number}: {trend}"
            )

    print(
        f"\n{args.machine}: {args.pods} live pods (-qos mix), sync {args.sync}, "
        f"{args.rounds} interleaved rounds; CreateContainer, medians across rounds (us)"
    )
    print(
        f"  {'variant':<11}{'stub p50':>10}{'stub p99':>10}{'daemon p50':>12}{'daemon p99':>12}"
        f"{'ratio p50':>11}"
    )
    for variant, s50, s99, d50, d99, ratio in rows:
        print(f"  {variant:<11}{s50:>10.1f}{s99:>10.1f}{d50:>12.1f}{d99:>12.1f}{ratio:>11.2f}")
    if args.workdir is None:
        shutil.rmtree(tree.parent, ignore_errors=True)
        for state in workdir.glob("state-*"):
            shutil.rmtree(state, ignore_errors=True)
    print(f"raw outputs: {workdir}")
    if failures:
        print("FAIL:")
        for failure in failures[:30]:
            print(f"  {failure}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
