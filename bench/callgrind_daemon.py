"""Instructions per pod, not microseconds: the topology-aware daemon under gomockrt run by
valgrind's callgrind, so that two variants compare by what the CPU executes rather than by
wall-clock times that move with the machine's load and with the memory layout.

Each variant is a ``src`` directory (an exact copy of this checkout's, or of another, or one
with a change to try: ``git archive HEAD src | tar -x -C DIR``), started through ``env
PYTHONPATH=SRC`` (all the same way), with ``--record FILE`` when its spec ends in ``+record``.
It runs under callgrind (``--separate-threads=yes --cache-sim=yes``) twice, with ``--pods A``
and ``--pods B`` live pods (``-qos mix``, the fractional variant of
``bench/gomockrt_topology_aware.py``); the main thread's counts of the second run minus those of
the first, divided by ``B - A``, are what one more pod costs: start-up and shutdown cancel out.
nrimockrt's timeouts are raised (a request takes ~100x longer under callgrind), and the daemon
is let finish its SIGTERM (callgrind writes its counts at exit).

Printed per variant: instructions (Ir), data reads/writes, L1 and last-level misses of the
simulated caches per pod, and each variant's difference to the first; with ``--functions N``,
the N C functions whose Ir per pod differ most from the first variant's. Run a variant twice
(``--variant a=SRC --variant b=SRC``: an A/A) to see what differs between two processes of
the same code: CPython's attribute cache (4,096 entries, indexed by the addresses of types'
version tags and names) misses more or less with where things land, about 5,000 Ir per pod
from one process to another here, so a difference below ~10,000 Ir per pod needs repeats.

    .venv/bin/python bench/callgrind_daemon.py --variant off=/tmp/a/src \\
        --variant on=/tmp/a/src+record --variant aa=/tmp/a/src --functions 12

A variant with ``+record``: its recorder looks for a quiet moment to write once a second of
wall-clock time, which under callgrind falls inside the burst (natively it writes at the end);
for a like-for-like count use a copy whose ``Recorder`` ``interval`` is long (the runs in
docs/benchmarks.md used 3600 s).

Slow (a run of 300 pods takes ~3 minutes; two variants' runs go in parallel with --jobs 2)
but exact enough to need no quiet machine. Requires valgrind.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gomockrt_topology_aware import CONFIG, VARIANTS, build, daemon_command, kill_left_over

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import scratch_dir

EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
SHOWN = ("Ir", "Dr", "Dw", "D1mr", "D1mw", "DLmr", "DLmw")
WRAPPER = """\
"$@" &
child=$!
trap 'kill -TERM $child' TERM
wait $child
wait $child
"""
"""Run the daemon in the background and pass nrimockrt's SIGTERM on: nrimockrt kills what it
started 5 s after SIGTERM, before callgrind would have written its counts; it kills this
shell then, and the daemon (and callgrind) finish."""


def run(
    nrimockrt: Path, workdir: Path, tree: Path, config: Path, name: str, src: Path,
    record: bool, pods: int, args: argparse.Namespace,
) -> Path:  # fmt: skip
    """One callgrind run; returns the main thread's output file."""
    label = f"{name}-{pods}"
    out = workdir / f"callgrind-{label}"
    command = daemon_command(
        "topology-aware", tree, config, workdir / f"state-{label}", workdir / "no-cgroups",
        workdir / f"nrirp-{label}.log",
    )  # fmt: skip
    if record:
        head, _, tail = command.partition(" --nri-socket ")
        recording = shlex.quote(str(workdir / f"rec-{label}.yaml"))
        command = f"{head} --record {recording} --nri-socket {tail}"
    valgrind = (
        "valgrind --tool=callgrind --separate-threads=yes --cache-sim=yes "
        f"--callgrind-out-file={out}.%p"
    )
    wrapper = workdir / "wrapper.sh"
    command = f"sh {wrapper} env PYTHONPATH={shlex.quote(str(src))} {valgrind} {command}"
    run_dir = workdir / label
    run_dir.mkdir()
    argv = [
        str(nrimockrt), "-socket", str(run_dir / "nri.sock"), "-pods", str(pods), "-qos", "mix",
        "-sync", str(args.sync), "-warmup", str(args.warmup), "-wait", "600s",
        "-registration-timeout", "300s", "-request-timeout", "120s",
        *VARIANTS["fractional"], "-exec", command,
    ]  # fmt: skip
    with open(workdir / f"{label}.log", "w") as log:
        code = subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, check=False).returncode
    deadline = time.monotonic() + 600
    while alive(run_dir) and time.monotonic() < deadline:  # the daemon's shutdown, counted
        time.sleep(1)
    kill_left_over(run_dir)
    if code != 0:
        sys.exit(f"{label}: nrimockrt failed (exit {code}); see {workdir / (label + '.log')}")
    mains = sorted(workdir.glob(f"callgrind-{label}.*-01"))
    if not mains:
        sys.exit(f"{label}: callgrind wrote no counts for the main thread (see {workdir})")
    print(f"  {label}: done", file=sys.stderr)
    return mains[0]


def alive(marker: Path) -> bool:
    """Whether a process still has ``marker`` in its command line."""
    mark = os.fsencode(marker)
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if mark in cmdline.read():
                        return True
            except OSError:
                continue
    return False


def totals(path: Path) -> list[int]:
    for line in path.read_text(errors="replace").splitlines():
        if line.startswith(("summary:", "totals:")):
            return [int(x) for x in line.split()[1:]]
    sys.exit(f"{path}: no totals")


def functions(path: Path) -> dict[str, int]:
    """Ir per C function (self cost), from callgrind_annotate."""
    text = subprocess.run(
        ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--show-percs=no", str(path)],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    costs: dict[str, int] = {}
    for line in text.splitlines():
        match = re.match(r"^\s*([\d,]+)((?:\s+(?:[\d,]+|\.))*)\s+(\S.*)$", line)
        if match and len(match.group(2).split()) == len(EVENTS) - 1:
            name = re.sub(r" \[.*\]$", "", match.group(3))
            if name == "PROGRAM TOTALS":
                continue
            costs[name] = costs.get(name, 0) + int(match.group(1).replace(",", ""))
    return costs


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--variant",
        action="append",
        required=True,
        metavar="NAME=SRC[+record]",
        help="a variant: its name, its src directory, '+record' to run it with --record",
    )
    parser.add_argument("--pods", default="100,300", help="the two pod counts (A,B)")
    parser.add_argument("--machine", default="server-112-pmem")
    parser.add_argument("--sync", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--jobs", type=int, default=2, help="runs at a time")
    parser.add_argument("--functions", type=int, default=0, metavar="N")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    variants: list[tuple[str, Path, bool]] = []
    for spec in args.variant:
        name, _, source = spec.partition("=")
        record = source.endswith("+record")
        src = Path(source.removesuffix("+record")).resolve()
        if not (src / "nrirp").is_dir():
            parser.error(f"{spec}: {src} has no nrirp package")
        variants.append((name, src, record))
    low, high = (int(n) for n in args.pods.split(","))
    nrimockrt = build() / "bin" / "nrimockrt"
    workdir = Path(tempfile.mkdtemp(prefix="callgrind-daemon-"))
    (workdir / "wrapper.sh").write_text(WRAPPER)
    (workdir / "no-cgroups").mkdir()
    config = workdir / "config.yaml"
    config.write_text(CONFIG)
    tree = Path(tempfile.mkdtemp(prefix="callgrind-sysfs-", dir=scratch_dir())) / "sys"
    spec = load_machine(args.machine)
    write_sysfs(resolve(spec, f"machine {spec.name}"), tree)
    jobs = [(v, pods) for v in variants for pods in (low, high)]
    with ThreadPoolExecutor(args.jobs) as pool:
        outputs = list(
            pool.map(
                lambda job: run(
                    nrimockrt, workdir, tree, config, job[0][0], job[0][1], job[0][2], job[1], args
                ),
                jobs,
            )
        )
    files = {(job[0][0], job[1]): out for job, out in zip(jobs, outputs, strict=True)}
    span = high - low
    per_pod: dict[str, list[float]] = {}
    for name, _, _ in variants:
        a, b = totals(files[name, low]), totals(files[name, high])
        per_pod[name] = [(y - x) / span for x, y in zip(a, b, strict=True)]
    print(
        f"\n{args.machine}: main thread per pod ({high} minus {low} live pods, -qos mix, "
        f"fractional), callgrind"
    )
    print(f"{'variant':<12}" + "".join(f"{e:>12}" for e in SHOWN))
    first = variants[0][0]
    for name, _, record in variants:
        row = per_pod[name]
        print(
            f"{name + (' (rec)' if record else ''):<12}"
            + "".join(f"{row[EVENTS.index(e)]:>12.0f}" for e in SHOWN)
        )
        if name != first:
            diff = [r - f for r, f in zip(row, per_pod[first], strict=True)]
            print(
                f"{'  - ' + first:<12}" + "".join(f"{diff[EVENTS.index(e)]:>+12.0f}" for e in SHOWN)
            )
    if args.functions:
        costs = {key: functions(path) for key, path in files.items()}

        def pod_cost(name: str, function: str) -> float:
            return (costs[name, high].get(function, 0) - costs[name, low].get(function, 0)) / span

        for name, _, _ in variants[1:]:
            names = set(costs[name, low]) | set(costs[name, high]) | set(costs[first, high])
            rows = sorted(
                ((pod_cost(name, f) - pod_cost(first, f), f) for f in names),
                key=lambda r: -abs(r[0]),
            )
            print(f"\n{name} minus {first}: Ir per pod by C function (self cost)")
            for delta, function in rows[: args.functions]:
                print(f"  {delta:+10.0f}  {function[-110:]}")
    if args.keep:
        print(f"\nwork directory kept: {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
