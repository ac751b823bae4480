"""The daemon with the topology-aware policy vs the no-op Go stub, end to end under gomockrt.

``nrimockrt`` (``tools/gomockrt``: the Go NRI 0.6.1 runtime side, what containerd 1.7.16-1.7.25
embeds) drives ``--pods`` live pods of mixed QoS (``-qos mix``: Guaranteed, Burstable,
BestEffort in turn) against two plugins, interleaved ``--rounds`` times (stub, daemon, stub,
...), on a fake machine:

- ``nristub``: the Go no-op plugin (subscribes to every event, returns nothing);
- ``nrirp run --policy topology-aware --sysfs-root TREE --config-file CONFIG --state-dir DIR``:
  TREE is the catalogue machine's sysfs tree written by the fakehw writer, CONFIG the reference
  Helm chart's default (``reservedResources: {cpu: 750m}``), DIR a fresh directory per round;
  ``--cgroup-root`` points at an empty directory, so nothing on this host is touched.

Variants (``--variants``), each run on its own interleaved rounds:

- ``fractional``: nrimockrt's defaults (Guaranteed 500m, Burstable 100m..500m): every
  container lands in a shared pool;
- ``integer``: ``-cpu-request 250 -cpu-limit 1000`` (Guaranteed 1 CPU: exclusive CPUs sliced
  out of the shared pools, whose other containers get updates; Burstable 250m..1000m);
- ``small``: ``-cpu-request 50 -cpu-limit 100`` (Guaranteed 100m, Burstable 50m..100m): what
  a large ``--sync`` (900 containers) fits in; with it the table also gives Synchronize.

After the create phase nrimockrt dumps every live container's cpus/mems as it applied them
(adjustments and updates); the script checks them against the fake machine: every container
pinned, cpus online and non-empty, mems existing nodes covering the NUMA nodes of the cpus,
exclusive (integer Guaranteed) CPUs of the right count and shared with no other container, and
at least one CPU (the reserved one: no pod here is in kube-system) used by none of them.

    .venv/bin/python bench/gomockrt_topology_aware.py                      # 5 rounds, 200 pods
    .venv/bin/python bench/gomockrt_topology_aware.py --rounds 7 --max-ratio 5
    .venv/bin/python bench/gomockrt_topology_aware.py --machine sparse-8s-4096 --rounds 1
    .venv/bin/python bench/gomockrt_topology_aware.py --pods 500 --variants fractional
    .venv/bin/python bench/gomockrt_topology_aware.py --sync 900 --pods 200 --variants small

Prints, per variant, CreateContainer p50/p99/max of both plugins (medians across rounds) and
the ratio daemon/stub of the p50s, the Synchronize time of both, the daemon's peak RSS and
the CreateContainer p50 per quarter of each run; exits 1 if a ratio is above ``--max-ratio``
(target 5) or a cpuset check fails. A variant whose Guaranteed pods ask for more exclusive CPUs
than the machine has to give (``integer`` at 500 pods: 171 on server-112-pmem's 111) is
skipped with a line saying so: the policy would refuse the pods beyond them, and nrimockrt
aborts on the first refused call. ``--probe`` runs the daemon under ``bench/tail_probe.py``
(where each slow request's time went: ``tail_probe.py --summary FILE``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.gomockrt import GomockrtBuildError, build_gomockrt

from nrirp.adapters.fakehw import expected_machine, load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import scratch_dir
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine

VARIANTS: dict[str, list[str]] = {
    "fractional": [],
    "integer": ["-cpu-request", "250", "-cpu-limit", "1000"],
}
SMALL = {"small": ["-cpu-request", "50", "-cpu-limit", "100"]}
"""Not run unless asked (``--variants small``): for a large ``--sync``."""
RESERVED_MCPU = 750
CONFIG = f"reservedResources:\n  cpu: {RESERVED_MCPU}m\n"  # the reference Helm chart's default
PERIOD = 100_000
TREND = re.compile(r"^\s*CreateContainer\s+(\[1\].*)$", re.MULTILINE)


def build() -> Path:
    """Build (or reuse) the harness; returns its directory."""
    try:
        return build_gomockrt()
    except GomockrtBuildError as exc:
        sys.exit(str(exc))


def kill_left_over(workdir: Path, grace: float = 5.0) -> None:
    """Kill what still runs with ``workdir`` in its command line once ``grace`` seconds passed
    (nrimockrt starts the plugin in a process group of its own and leaves it running when it
    aborts; a plugin that is only finishing its exit, e.g. writing ``--probe`` output, gets
    the time). This process and its ancestors (a ``timeout`` or ``flock`` around the script
    names the directory too) are left alone."""
    mark = os.fsencode(workdir)
    spared = _ancestors()
    deadline = time.monotonic() + grace
    while True:
        left = _running_with(mark, spared)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _ancestors() -> set[int]:
    pids = set()
    pid = os.getpid()
    while pid > 1 and pid not in pids:
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as stat:
                pid = int(stat.read().rsplit(b")", 1)[1].split()[1])
        except (FileNotFoundError, ValueError, IndexError):
            break
    return pids


def _running_with(mark: bytes, spared: set[int]) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in spared:
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                if mark not in cmdline.read():
                    continue
            with open(f"/proc/{entry}/stat", "rb") as stat:
                if stat.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue  # a zombie: gone, only not reaped yet
            pids.append(int(entry))
        except (FileNotFoundError, ProcessLookupError, PermissionError, IndexError):
            continue
    return pids


def nrimockrt_run(
    nrimockrt: Path, workdir: Path, label: str, command: str, extra: list[str], args: Any
) -> tuple[dict[str, Any], str]:
    """One nrimockrt run against ``command``; its JSON summary and its stdout."""
    out = workdir / f"{label}.json"
    log = workdir / f"{label}.log"
    argv = [
        str(nrimockrt),
        "-socket", str(workdir / "nri.sock"),
        "-pods", str(args.pods),
        "-qos", "mix",
        "-sync", str(args.sync),
        "-warmup", str(args.warmup),
        "-json", str(out),
        "-dump", str(workdir / f"{label}.dump.json"),
        "-wait", "90s",
        *extra,
        "-exec", command,
    ]  # fmt: skip
    with log.open("w") as output:
        try:
            returncode = subprocess.run(
                argv, stdout=output, stderr=subprocess.STDOUT, timeout=1800, check=False
            ).returncode
        finally:
            kill_left_over(workdir)
    if returncode != 0:
        errors = [line for line in log.read_text(errors="replace").splitlines() if "ERROR" in line]
        detail = "".join(f"\n  {line}" for line in errors[:5])
        sys.exit(f"{label}: nrimockrt failed (exit {returncode}); see {log}{detail}")
    summary: dict[str, Any] = json.loads(out.read_text())
    return summary, log.read_text(errors="replace")


def exclusive_demand(extra: list[str], pods: int, sync: int) -> int:
    """Exclusive CPUs the Guaranteed pods of a variant ask for: with ``-qos mix`` every third
    pod (index 0, 3, ...) of the measured pods and of the synchronized ones is Guaranteed,
    with request = limit; a whole-CPU limit gets that many exclusive CPUs."""
    options = dict(zip(extra[::2], extra[1::2], strict=True))
    limit = int(options.get("-cpu-limit", "500"))
    if limit % 1000:
        return 0
    guaranteed = -(-pods // 3) + -(-sync // 3)
    return guaranteed * (limit // 1000)


def event(run: dict[str, Any], name: str, key: str) -> float:
    return float(next(e[key] for e in run["events"] if e["event"] == name))


def scratch_setup(prefix: str, machine: str) -> tuple[Path, Path, Path, Path]:
    """A fresh work directory for a comparison script, and in it: the catalogue ``machine``'s
    sysfs tree (on tmpfs when there is one), the topology-aware config (:data:`CONFIG`) and an
    empty cgroup root. Returns (workdir, tree, config, cgroups)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"{prefix}-"))
    tree = Path(tempfile.mkdtemp(prefix=f"{prefix}-sysfs-", dir=scratch_dir())) / "sys"
    spec = load_machine(machine)
    write_sysfs(resolve(spec, f"machine {spec.name}"), tree)
    config = workdir / "topology-aware.yaml"
    config.write_text(CONFIG)
    cgroups = workdir / "no-cgroups"
    cgroups.mkdir()
    return workdir, tree, config, cgroups


def daemon_command(
    policy: str,
    tree: Path,
    config: Path,
    state: Path,
    cgroups: Path,
    log: Path,
    probe: Path | None = None,
    log_level: str = "warning",
) -> str:
    """``nrirp run`` with the policy on the fake machine (``%s`` stands for the socket); under
    ``bench/tail_probe.py`` writing ``probe`` when given; at ``log_level`` (the daemon's
    default is ``info``: a decision line per container, ``bench/gomockrt_log_level.py``)."""
    head = [sys.executable, "-m", "nrirp"]
    if probe is not None:
        head = [sys.executable, str(Path(__file__).with_name("tail_probe.py")), "--out", str(probe)]
        head.append("--")
    argv = [
        *head, "run",
        "--policy", policy,
        "--sysfs-root", str(tree),
        "--config-file", str(config),
        "--state-dir", str(state),
        "--cgroup-root", str(cgroups),
        "--config-poll-interval", "0",
        "--log-level", log_level,
    ]  # fmt: skip
    quoted = " ".join(shlex.quote(part) for part in argv)
    return f"{quoted} --nri-socket %s 2>{shlex.quote(str(log))}"


# ---------------------------------------------------------------- cpuset checks


def check_dump(
    dump: list[dict[str, Any]], machine: Machine, expected: int
) -> tuple[list[str], str]:
    """Problems with the cpusets nrimockrt applied to the ``expected`` live containers (the
    measured pods and the synchronized ones), and a one-line description of them."""
    problems: list[str] = []
    all_cpus = machine.online
    all_nodes = CPUSet.from_ids(machine.nodes)
    node_of = {cpu.id: cpu.node_id for cpu in machine.cpus.values()}
    if len(dump) != expected:
        problems.append(f"{len(dump)} live containers in the dump, expected {expected}")
    exclusive: dict[str, CPUSet] = {}
    others: dict[str, CPUSet] = {}
    shapes: Counter[str] = Counter()
    for entry in dump:
        name = f"{entry['pod']}/{entry['container']} ({entry['qos']})"
        if not entry["cpus"] or not entry["mems"]:
            problems.append(f"{name}: not pinned (cpus={entry['cpus']!r} mems={entry['mems']!r})")
            continue
        cpus, mems = CPUSet.parse(entry["cpus"]), CPUSet.parse(entry["mems"])
        if not cpus <= all_cpus:
            problems.append(f"{name}: cpus {cpus} not all online CPUs of the machine")
        if not mems <= all_nodes:
            problems.append(f"{name}: mems {mems} not all NUMA nodes of the machine")
        cpu_nodes = CPUSet.from_ids(node_of[c] for c in cpus if c in node_of)
        if not cpu_nodes <= mems:
            problems.append(f"{name}: mems {mems} miss the nodes {cpu_nodes} of its cpus {cpus}")
        quota = int(entry["quota"])
        integer = entry["qos"] == "guaranteed" and quota >= PERIOD and quota % PERIOD == 0
        if integer:
            exclusive[name] = cpus
            if len(cpus) != quota // PERIOD:
                problems.append(
                    f"{name}: {len(cpus)} exclusive CPUs {cpus}, asked {quota // PERIOD}"
                )
        else:
            others[name] = cpus
        shapes[f"{'exclusive' if integer else 'shared'} {len(cpus)} cpus mems {mems}"] += 1
    taken = CPUSet()
    for name, cpus in exclusive.items():
        if cpus & taken:
            problems.append(f"{name}: exclusive CPUs {cpus & taken} given to another container too")
        taken |= cpus
    for name, cpus in others.items():
        if cpus & taken:
            problems.append(f"{name}: runs on exclusive CPUs {cpus & taken}")
    used = CPUSet().union(*exclusive.values(), *others.values())
    unused = all_cpus - used
    if not unused:
        # reservedResources cpu 750m keeps at least one CPU for kube-system only: no pod here
        problems.append("every CPU is used by some container: the reserved CPUs are not kept")
    common = "; ".join(f"{n}x {s}" for s, n in shapes.most_common(4))
    described = (
        f"{len(dump)} containers, {len(exclusive)} exclusive ({len(taken)} CPUs), "
        f"{len(others)} shared, {len(unused)} CPUs used by none ({unused}); most common: {common}"
    )
    return problems, described


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machine", default="server-112-pmem", help="catalogue machine")
    parser.add_argument("--rounds", type=int, default=5, help="runs per plugin and variant")
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--sync", type=int, default=10, help="containers to synchronize")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument(
        "--variants", nargs="+", choices=[*VARIANTS, *SMALL], default=list(VARIANTS)
    )
    parser.add_argument("--max-ratio", type=float, default=5.0, help="fail above this ratio")
    parser.add_argument(
        "--workdir", type=Path,
        help="keep the sysfs tree, state dirs, JSON outputs and logs here (default: a temporary "
        "directory that keeps only the JSON outputs and logs)",
    )  # fmt: skip
    parser.add_argument("--policy", default="topology-aware", help=argparse.SUPPRESS)
    parser.add_argument(
        "--probe", action="store_true", help="run the daemon under tail_probe.py (slower)"
    )
    parser.add_argument(
        "--log-level",
        default="warning",
        help="the daemon's --log-level (default warning, as every figure in docs/benchmarks.md; "
        "operators run the default, info)",
    )
    args = parser.parse_args()

    bindir = build() / "bin"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gomockrt-ta-"))
    workdir.mkdir(parents=True, exist_ok=True)
    spec = load_machine(args.machine)
    machine = expected_machine(spec)
    if args.workdir is None:
        # over 100k tiny files for sparse-8s-4096: on tmpfs when there is one, to write and
        # remove them fast
        tree = Path(tempfile.mkdtemp(prefix="gomockrt-ta-sysfs-", dir=scratch_dir())) / "sys"
    else:
        tree = workdir / f"sysfs-{args.machine}"
    if not tree.exists():
        write_sysfs(resolve(spec, f"machine {spec.name}"), tree)
    config = workdir / f"{args.policy}.yaml"
    config.write_text(CONFIG if args.policy == "topology-aware" else "{}\n")
    cgroup_root = workdir / "no-cgroups"
    cgroup_root.mkdir(exist_ok=True)

    failures: list[str] = []
    skipped: list[str] = []
    rows: list[tuple[str, dict[str, float], dict[str, float], float]] = []
    reserved = -(-RESERVED_MCPU // 1000)
    allocatable = len(machine.online) - reserved
    for variant in args.variants:
        extra = {**VARIANTS, **SMALL}[variant]
        demand = exclusive_demand(extra, args.pods, args.sync)
        if demand > allocatable:
            # the policy refuses the first Guaranteed pod beyond the free CPUs, and nrimockrt
            # aborts on a refused call: no run to measure, and nothing to pretend about
            skip = (
                f"{variant}: skipped: {demand} exclusive CPUs asked (every third pod of "
                f"--pods {args.pods} and of --sync {args.sync} is Guaranteed with "
                f"{' '.join(extra)}), {allocatable} to give on {args.machine} "
                f"({len(machine.online)} online, {reserved} reserved): the policy refuses "
                "the pods beyond them and nrimockrt aborts on the first refusal; use fewer "
                "--pods or the fractional variant"
            )
            print(skip, file=sys.stderr)
            skipped.append(skip)
            continue
        runs: dict[str, list[dict[str, Any]]] = {"stub": [], "daemon": []}
        trends: list[str] = []
        warnings = 0
        for round_number in range(args.rounds):
            label = f"{variant}{round_number}"
            state = workdir / f"state-{label}"
            daemon_log = workdir / f"nrirp-{label}.log"
            commands = {
                "stub": f"{shlex.quote(str(bindir / 'nristub'))} -socket %s",
                "daemon": daemon_command(
                    args.policy,
                    tree,
                    config,
                    state,
                    cgroup_root,
                    daemon_log,
                    workdir / f"probe-{label}.json" if args.probe else None,
                    args.log_level,
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
                    text = daemon_log.read_text(errors="replace") if daemon_log.exists() else ""
                    warnings += sum(1 for line in text.splitlines() if line.strip())
                    dump = json.loads((workdir / f"daemon-{label}.dump.json").read_text())
                    problems, described = check_dump(dump or [], machine, args.pods + args.sync)
                    print(f"  {label} cpusets: {described}", file=sys.stderr)
                    failures += [f"{variant} round {round_number + 1}: {p}" for p in problems]
            print(f"{variant}: round {round_number + 1}/{args.rounds} done", file=sys.stderr)

        medians = {
            plugin: {
                key: statistics.median(event(r, "CreateContainer", f"{key}_us") for r in done)
                for key in ("p50", "p99", "max")
            }
            for plugin, done in runs.items()
        }
        for plugin, done in runs.items():
            medians[plugin]["sync"] = statistics.median(
                event(r, "Synchronize", "p50_us") for r in done
            )
        ratio = medians["daemon"]["p50"] / medians["stub"]["p50"]
        rss = [
            r["plugin_proc_after"]["vmhwm_kib"]
            for r in runs["daemon"]
            if r.get("plugin_proc_after")
        ]
        rows.append((variant, medians["stub"], medians["daemon"], max(rss, default=0) / 1024))
        for plugin, done in runs.items():
            print(
                f"{variant} {plugin} CreateContainer p50/p99/max per round (us): "
                + "; ".join(
                    "/".join(
                        f"{event(r, 'CreateContainer', f'{k}_us'):.0f}"
                        for k in ("p50", "p99", "max")
                    )
                    for r in done
                ),
                file=sys.stderr,
            )
        if not ratio <= args.max_ratio:
            failures.append(f"{variant}: CreateContainer p50 ratio {ratio:.2f} > {args.max_ratio}")

        print(f"\n== {variant} ({' '.join(extra) or 'nrimockrt defaults'}), medians of p50 (us)")
        print(f"{'event':<22}{'Go nristub':>12}{'daemon':>12}{'ratio':>8}")
        for name in (e["event"] for e in runs["stub"][0]["events"]):
            go = statistics.median(event(r, name, "p50_us") for r in runs["stub"])
            py = statistics.median(event(r, name, "p50_us") for r in runs["daemon"])
            print(f"{name:<22}{go:>12.1f}{py:>12.1f}{py / go:>8.2f}")
        updates = [r["updates_in_create_responses"] for r in runs["daemon"]]
        unsolicited = [r["unsolicited_updates"] for r in runs["daemon"]]
        rss = [
            r["plugin_proc_after"]["vmhwm_kib"]
            for r in runs["daemon"]
            if r.get("plugin_proc_after")
        ]
        print(
            f"daemon: updates in CreateContainer responses per run {updates}, unsolicited "
            f"{unsolicited}; peak RSS KiB median {statistics.median(rss) if rss else 0:.0f}; "
            f"log lines at warning or above {warnings}"
        )
        for number, trend in enumerate(trends, 1):
            print(
                f"daemon CreateContainer trend (p50/mean us per quarter), round {number}: {trend}"
            )

    print(
        f"\n{args.machine}: {args.pods} live pods (-qos mix), sync {args.sync}, "
        f"{args.rounds} interleaved rounds; CreateContainer and Synchronize, medians across "
        "rounds (us); daemon peak RSS, the highest of the rounds"
    )
    print(
        f"  {'variant':<11}{'stub p50':>9}{'p99':>8}{'max':>8}{'daemon p50':>11}{'p99':>8}"
        f"{'max':>8}{'ratio':>7}{'sync stub':>11}{'daemon':>9}{'ratio':>7}{'RSS MiB':>9}"
    )
    for variant, stub, daemon, rss_mib in rows:
        print(
            f"  {variant:<11}{stub['p50']:>9.0f}{stub['p99']:>8.0f}{stub['max']:>8.0f}"
            f"{daemon['p50']:>11.0f}{daemon['p99']:>8.0f}{daemon['max']:>8.0f}"
            f"{daemon['p50'] / stub['p50']:>7.2f}{stub['sync']:>11.0f}{daemon['sync']:>9.0f}"
            f"{daemon['sync'] / stub['sync']:>7.2f}{rss_mib:>9.1f}"
        )
    for skip in skipped:
        print(f"  {skip}")
    if args.workdir is None:
        # the sysfs tree (670 MB for sparse-8s-4096) and the state dirs; JSON and logs stay
        shutil.rmtree(tree.parent, ignore_errors=True)
        for state in workdir.glob("state-*"):
            shutil.rmtree(state, ignore_errors=True)
    print(f"raw outputs: {workdir}")
    if failures:
        print("FAIL:")
        for failure in failures[:30]:
            print(f"  {failure}")
        if len(failures) > 30:
            print(f"  ... {len(failures) - 30} more")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
