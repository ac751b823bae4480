"""Our logger example plugin vs the Go stub plugin, both driven by the Go NRI runtime side.

The harness is gomockrt (``tools/gomockrt``, built by ``tests/support/gomockrt.py``):
``nrimockrt`` plays the runtime with the Go NRI library's own ``pkg/adaptation`` (0.6.1, what
containerd 1.7.16-1.7.25 embeds) and ``nristub`` is a Go plugin on the Go ``pkg/stub`` that
subscribes to every event and returns nothing. Both plugins are run alternately (Go, Python, Go,
Python, ...) ``--rounds`` times each, because the machine is noisy; the medians across rounds of
each event's p50 are compared.

    .venv/bin/python bench/gomockrt_compare.py                 # 5 rounds, 300 pods
    .venv/bin/python bench/gomockrt_compare.py --rounds 7 --pods 500 --max-ratio 1.25

Prints a per-event table (Go p50, Python p50, ratio; medians across rounds) and the
CreateContainer ratio; exits 1 if that ratio is above ``--max-ratio``. The logger example logs
one line per event to a file (``--log-file``), as it would in production.
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.gomockrt import REPO_ROOT, GomockrtBuildError, build_gomockrt

LOGGER_EXAMPLE = REPO_ROOT / "examples" / "plugins" / "logger.py"


def build() -> Path:
    """Build (or reuse) the harness; returns its directory."""
    try:
        return build_gomockrt()
    except GomockrtBuildError as exc:
        sys.exit(str(exc))


def run_once(
    nrimockrt: Path, workdir: Path, label: str, command: str, args: argparse.Namespace
) -> dict[str, object]:
    out = workdir / f"{label}.json"
    log = workdir / f"{label}.log"
    with log.open("w") as stderr:
        done = subprocess.run(
            [
                str(nrimockrt),
                "-socket",
                str(workdir / "nri.sock"),
                "-pods",
                str(args.pods),
                "-sync",
                str(args.sync),
                "-warmup",
                str(args.warmup),
                "-json",
                str(out),
                "-exec",
                command,
            ],
            stdout=stderr,
            stderr=subprocess.STDOUT,
            timeout=600,
            check=False,
        )
    if done.returncode != 0:
        sys.exit(f"{label}: nrimockrt failed (exit {done.returncode}); see {log}")
    result: dict[str, object] = json.loads(out.read_text())
    return result


def p50s(run: dict[str, object]) -> dict[str, float]:
    events = run["events"]
    assert isinstance(events, list)
    return {e["event"]: float(e["p50_us"]) for e in events}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5, help="runs per plugin (default 5)")
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--sync", type=int, default=10, help="containers to synchronize")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--max-ratio", type=float, default=None, help="fail above this ratio")
    parser.add_argument("--workdir", type=Path, help="keep JSON outputs and logs here")
    args = parser.parse_args()

    bindir = build() / "bin"
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gomockrt-compare-"))
    workdir.mkdir(parents=True, exist_ok=True)
    python = shlex.quote(sys.executable)
    plugin_log = shlex.quote(str(workdir / "logger-events.log"))
    commands = {
        "go": f"{shlex.quote(str(bindir / 'nristub'))} -socket %s",
        "py": f"{python} {shlex.quote(str(LOGGER_EXAMPLE))} --socket %s "
        f"--log-file {plugin_log} --no-reconnect",
    }
    runs: dict[str, list[dict[str, object]]] = {"go": [], "py": []}
    for round_number in range(args.rounds):
        for label, command in commands.items():
            runs[label].append(
                run_once(bindir / "nrimockrt", workdir, f"{label}{round_number}", command, args)
            )
        print(f"round {round_number + 1}/{args.rounds} done", file=sys.stderr)

    go = [p50s(r) for r in runs["go"]]
    py = [p50s(r) for r in runs["py"]]
    print(
        f"nrimockrt (Go NRI 0.6.1 runtime side): {args.rounds} interleaved rounds per plugin, "
        f"{args.pods} pods, sync {args.sync}; medians across rounds of p50 (us)"
    )
    print(f"{'event':<22}{'Go nristub':>12}{'Py logger':>12}{'ratio':>8}")
    ratio_create = float("nan")
    for event in go[0]:
        go_median = statistics.median(r[event] for r in go)
        py_median = statistics.median(r[event] for r in py)
        ratio = py_median / go_median
        if event == "CreateContainer":
            ratio_create = ratio
        print(f"{event:<22}{go_median:>12.1f}{py_median:>12.1f}{ratio:>8.2f}")
    rss = [
        statistics.median(
            r["plugin_proc_after"]["vmhwm_kib"]  # type: ignore[index]
            for r in runs[label]
            if r.get("plugin_proc_after")
        )
        for label in ("go", "py")
    ]
    print(f"plugin peak RSS KiB (median): Go {rss[0]:.0f}, Py {rss[1]:.0f}")
    print(f"CreateContainer p50 ratio Py/Go: {ratio_create:.2f}")
    print(f"raw outputs: {workdir}")
    if args.max_ratio is not None and not ratio_create <= args.max_ratio:
        print(f"FAIL: ratio {ratio_create:.2f} above {args.max_ratio}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
