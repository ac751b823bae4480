"""Start-up of ``nrirp run``: process start -> registered with the runtime (issue 9 item 9).

The script plays the runtime with the simulated one (``nrirp.simruntime``) listening on a unix
socket, then starts the daemon ``--runs`` times (each time with a fresh state directory, after
the previous one stopped on SIGTERM) and takes, from the runtime's journal, the moment its
RegisterPlugin arrived. The clock starts just before ``subprocess.Popen``, so the figure
includes fork/exec, the interpreter's own start, imports, hardware discovery, the policy's
start and the NRI handshake up to registration. Target: p50 under 0.5 s on an idle node.

Examples:
  .venv/bin/python bench/bench_startup.py
  .venv/bin/python bench/bench_startup.py --runs 20 --policy balloons
  .venv/bin/python bench/bench_startup.py --config-file examples/configs/topology-aware.yaml

Output: one line per run (registered, synchronized, in ms, and the CPU time the daemon had
used by then: on a busy machine the wall-clock figures grow with the load, the CPU time
hardly does), then p50 and max, and the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.simruntime import PluginEventKind, SimRuntime

NAME = "90-resource-manager"


def daemon_argv(args: argparse.Namespace, tmp: Path, state: Path) -> list[str]:
    argv = [
        sys.executable, "-m", "nrirp", "run",
        "--policy", args.policy,
        "--nri-socket", str(tmp / "nri.sock"),
        "--state-dir", str(state),
        "--sysfs-root", str(tmp / "sys"),
        "--cgroup-root", str(tmp / "no-cgroups"),
        "--config-poll-interval", "0",
    ]  # fmt: skip
    if args.config_file:
        argv += ["--config-file", os.path.abspath(args.config_file)]
    return argv


def cpu_seconds(pid: int) -> float:
    """User + system CPU time the process has used so far (from /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(runtime: SimRuntime, argv: list[str], log: Path) -> tuple[float, float, float]:
    """(registered, synchronized) seconds after the process was started, and the CPU time
    it had used once synchronized (a figure the machine's load hardly changes)."""
    loop = asyncio.get_running_loop()
    seen = len(runtime.journal.events)
    with open(log, "ab") as out:
        start = loop.time()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
    try:

        def synchronized() -> bool:
            return any(
                e.kind is PluginEventKind.SYNCHRONIZED and e.plugin == NAME
                for e in runtime.journal.events[seen:]
            )

        await runtime.journal.wait_for(synchronized, timeout=30)
        fresh = runtime.journal.events[seen:]
        registered = next(e.at for e in fresh if e.kind is PluginEventKind.REGISTERED)
        synced = next(e.at for e in fresh if e.kind is PluginEventKind.SYNCHRONIZED)
        cpu = cpu_seconds(proc.pid)
    finally:
        proc.send_signal(signal.SIGTERM)
        await asyncio.to_thread(proc.wait, 30)
    return registered - start, synced - start, cpu


async def main(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-startup-"))
    try:
        write_sysfs(resolve(load_machine(args.machine), args.machine), tmp / "sys")
        runtime = await SimRuntime(socket_path=tmp / "nri.sock").start()
        registered: list[float] = []
        cpu: list[float] = []
        try:
            for run in range(args.runs):
                state = tmp / f"state-{run}"
                argv = daemon_argv(args, tmp, state)
                reg, synced, used = await one_run(runtime, argv, tmp / "log")
                registered.append(reg)
                cpu.append(used)
                print(
                    f"run {run + 1:3d}: registered {reg * 1e3:7.1f} ms, synchronized "
                    f"{synced * 1e3:7.1f} ms, CPU used {used * 1e3:5.0f} ms"
                )
        finally:
            await runtime.close()
        print(
            f"process start -> registered ({args.policy}, {args.machine}, {args.runs} runs): "
            f"p50 {statistics.median(registered) * 1e3:.1f} ms, "
            f"max {max(registered) * 1e3:.1f} ms; CPU time used p50 "
            f"{statistics.median(cpu) * 1e3:.0f} ms (load average {os.getloadavg()[0]:.1f})"
        )
    finally:
        if args.keep:
            print(f"kept {tmp} (daemon log: {tmp / 'log'})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--policy", default="topology-aware")
    parser.add_argument("--machine", default="box-16", help="fake machine (default: box-16)")
    parser.add_argument("--config-file", help="the daemon's --config-file (default: none)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    return parser.parse_args()


if __name__ == "__main__":
    sys.exit(asyncio.run(main(parse_args())))
