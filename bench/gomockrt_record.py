"""Does recording cost CreateContainer anything? The topology-aware daemon under gomockrt with
and without ``--record``, interleaved.

``nrimockrt`` (``tools/gomockrt``) drives ``--pods`` live pods of mixed QoS against the daemon
(``nrirp run --policy topology-aware`` on a fake machine's sysfs tree, as
``bench/gomockrt_topology_aware.py`` runs it, with the Helm chart's default configuration) in
these variants, once each per round, ``--rounds`` rounds, the order rotating from round to
round (off then on, on then off, ...: the second run of a pair is a little slower on this
machine whatever it runs, see ``--aa``):

- ``off``: no recording;
- ``on``: ``--record FILE`` with the default limits (4 MiB files, 4 of them), a fresh FILE
  per round;
- ``against`` (with ``--against SRC``): the same as ``on``, by the ``nrirp`` package under
  SRC (another checkout's ``src``, put first on ``PYTHONPATH``): an older recorder, say
  (repeated: ``against1``, ``against2``, ... in the order given);
- ``imports`` (with ``--control-imports MODULES``): no recording, the daemon started after
  importing these modules (never used): a control that only loads more code.
- ``padded`` (with ``--padded``): no recording, an environment variable as long as what
  ``--record FILE`` adds to ``on``'s arguments: a control for where the process's stack
  begins (arguments and environment lie above it).

``--route SRC`` starts ``off``, ``on`` and ``imports`` through ``env PYTHONPATH=SRC`` as well
(SRC: an exact copy of this ``src``), and adds ``direct``: ``off`` started as without
``--route`` (the package found through the virtual environment). How a variant is started
moves the p50 by as much as recording does (an exact copy through ``env PYTHONPATH`` made
+5 us against ``on``), so compare variants started the same way.

``--shuffle`` starts every run through ``bench/layout_shuffle.py`` with a fresh random seed:
the heap laid out at random, so that a difference between variants is their work and not
where their objects happen to land (a fixed layout per variant otherwise; see that file).
With ``--control-imports`` every variant starts through that wrapper, shuffled or not.

    .venv/bin/python bench/gomockrt_record.py                  # 5 rounds each, 200 pods
    .venv/bin/python bench/gomockrt_record.py --rounds 20 --aa
    .venv/bin/python bench/gomockrt_record.py --rounds 20 --against /tmp/before/src
    .venv/bin/python bench/gomockrt_record.py --rounds 81 --shuffle --control-imports decimal,email

Prints CreateContainer p50/p99 per round and their medians per variant, the ratios to 'off',
the median of the per-round differences of the p50s (a variant minus 'off': the runs of a
round share the machine's load) with how many rounds it was slower and the sign test's
two-sided p-value (were 'slower' and 'faster' equally likely), and what the recordings
hold (steps and bytes, in how many files). ``--aa`` runs 'on' without recording too: the same
numbers then show what the machine's noise alone makes. Say the load average (``uptime``)
with the numbers: the machine is shared.
"""

from __future__ import annotations

import argparse
import math
import random
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from gomockrt_topology_aware import CONFIG, VARIANTS, build, daemon_command, event, nrimockrt_run

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.fakehw.discovery import scratch_dir

PAD = "NRIRP_BENCH_PAD"
"""The variable 'padded' adds to the environment (nothing reads it)."""


def sign_test(above: int, below: int) -> float:
    """The two-sided p-value of ``above`` rounds one way and ``below`` the other (ties left
    out) if either way were as likely: the exact binomial test."""
    n = above + below
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(max(above, below), n + 1)) / 2**n
    return min(1.0, 2 * tail)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--machine", default="server-112-pmem", help="catalogue machine")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--pods", type=int, default=200)
    parser.add_argument("--sync", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="fractional")
    parser.add_argument(
        "--aa",
        action="store_true",
        help="run 'on' without --record too: what the order of the rounds alone makes",
    )
    parser.add_argument(
        "--against",
        type=Path,
        action="append",
        default=[],
        metavar="SRC",
        help="also record with the nrirp package under SRC (another checkout's src); "
        "repeat for more (variants against, against1, ...)",
    )
    parser.add_argument(
        "--route",
        type=Path,
        metavar="SRC",
        help="start 'off', 'on' and 'imports' with the nrirp package under SRC (an exact copy "
        "of src) through env PYTHONPATH too: every variant started the same way as --against's; "
        "adds 'direct' ('off' started without it)",
    )
    parser.add_argument(
        "--shuffle",
        action="store_true",
        help="lay every run's heap out at random (bench/layout_shuffle.py, a fresh seed each)",
    )
    parser.add_argument(
        "--control-imports",
        metavar="MODULES",
        default="",
        help="also run a variant that records nothing and imports these modules (commas)",
    )
    parser.add_argument(
        "--padded",
        action="store_true",
        help="also run 'padded': 'off' with an environment variable as long as the bytes "
        "'--record FILE' adds to 'on''s arguments (both lie at the top of the process's stack)",
    )
    args = parser.parse_args()
    wrapper = Path(__file__).with_name("layout_shuffle.py")
    through_wrapper = args.shuffle or bool(args.control_imports)
    seeds = random.Random()

    bindir = build() / "bin"
    workdir = Path(tempfile.mkdtemp(prefix="gomockrt-record-"))
    tree = Path(tempfile.mkdtemp(prefix="gomockrt-record-sysfs-", dir=scratch_dir())) / "sys"
    spec = load_machine(args.machine)
    write_sysfs(resolve(spec, f"machine {spec.name}"), tree)
    cgroups = workdir / "no-cgroups"
    cgroups.mkdir()
    config = workdir / "config.yaml"
    config.write_text(CONFIG)
    against = {
        f"against{number or ''}": source.resolve() for number, source in enumerate(args.against)
    }
    variants = ["off", "on", *against]
    variants += ["imports"] if args.control_imports else []
    variants += ["padded"] if args.padded else []
    variants += ["direct"] if args.route else []
    results: dict[str, list[tuple[float, float]]] = {variant: [] for variant in variants}
    recorded: list[tuple[int, int, int]] = []
    for number in range(args.rounds):
        shift = number % len(variants)
        for variant in variants[shift:] + variants[:shift]:
            label = f"{variant}{number}"
            command = daemon_command(
                "topology-aware",
                tree,
                config,
                workdir / f"state-{label}",
                cgroups,
                workdir / f"nrirp-{label}.log",
            )
            record = workdir / f"rec-{label}.yaml"
            recording = (variant == "on" or variant in against) and not args.aa
            if through_wrapper:
                module = f"{shlex.quote(sys.executable)} -m nrirp "
                assert command.startswith(module), command
                wrapped = [sys.executable, str(wrapper)]
                if args.shuffle:
                    wrapped += ["--seed", str(seeds.randrange(2**32))]
                if variant == "imports":
                    wrapped += ["--import", args.control_imports]
                wrapped.append("--")
                command = " ".join(map(shlex.quote, wrapped)) + " " + command[len(module) :]
            if recording:  # the options go before the redirection
                head, _, tail = command.partition(" --nri-socket ")
                command = f"{head} --record {shlex.quote(str(record))} --nri-socket {tail}"
            source_dir = against.get(variant) or (None if variant == "direct" else args.route)
            environment = []
            if source_dir is not None:
                environment.append(f"PYTHONPATH={shlex.quote(str(source_dir.resolve()))}")
            if variant == "padded":  # as many bytes as 'on''s "--record\0FILE\0" in this round
                added = len("--record") + 1 + len(str(workdir / f"rec-on{number}.yaml")) + 1
                environment.append(f"{PAD}={'x' * (added - len(PAD) - 2)}")  # "=" and NUL
            if environment:
                command = f"env {' '.join(environment)} {command}"
            run, _ = nrimockrt_run(
                bindir / "nrimockrt", workdir, label, command, VARIANTS[args.variant], args
            )
            p50 = event(run, "CreateContainer", "p50_us")
            p99 = event(run, "CreateContainer", "p99_us")
            results[variant].append((p50, p99))
            if variant == "on" and recording:
                parts = sorted(workdir.glob(f"rec-{label}.yaml*"))
                steps = sum(p.read_text().count("\n- {") for p in parts)
                recorded.append((steps, sum(p.stat().st_size for p in parts), len(parts)))
            print(f"round {number + 1} {variant:>7}: CreateContainer p50 {p50:8.1f} us, "
                  f"p99 {p99:8.1f} us", file=sys.stderr)  # fmt: skip
    print(
        f"\n{args.machine}: {args.pods} live pods (-qos mix, {args.variant}), sync {args.sync}, "
        f"{args.rounds} interleaved rounds"
        + (" (A/A: nothing recorded)" if args.aa else "")
        + (", heap layout shuffled per run" if args.shuffle else "")
        + (f", every variant through env PYTHONPATH ({args.route})" if args.route else "")
    )
    print(f"{'variant':<10}{'p50 med':>10}{'p99 med':>10}  p50 per round / p99 per round")
    medians: dict[str, tuple[float, float]] = {}
    for variant, rows in results.items():
        p50 = statistics.median(r[0] for r in rows)
        p99 = statistics.median(r[1] for r in rows)
        medians[variant] = (p50, p99)
        per_round = " ".join(f"{r[0]:.0f}" for r in rows)
        per_round_99 = " ".join(f"{r[1]:.0f}" for r in rows)
        print(f"{variant:<10}{p50:>10.1f}{p99:>10.1f}  {per_round} / {per_round_99}")
    for variant in variants[1:]:
        print(
            f"{variant}/off ratio: p50 {medians[variant][0] / medians['off'][0]:.3f}, "
            f"p99 {medians[variant][1] / medians['off'][1]:.3f}"
        )
        differences = [a[0] - b[0] for a, b in zip(results[variant], results["off"], strict=True)]
        slower = sum(1 for d in differences if d > 0)
        faster = sum(1 for d in differences if d < 0)
        print(
            f"p50 {variant} minus off per round: median {statistics.median(differences):+.1f} "
            f"us, '{variant}' slower in {slower} of {len(differences)} rounds (sign test, "
            f"two-sided: p = {sign_test(slower, faster):.3f})"
        )
        print("  per round: " + " ".join(f"{d:+.1f}" for d in differences))
    if recorded:
        steps, size, files = recorded[-1]
        print(f"a recording (last round): {steps} steps, {size} bytes in {files} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
