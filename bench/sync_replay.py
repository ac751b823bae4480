"""Replay a runtime's Synchronize through the daemon's own composition, in process.

Where the time and the memory of a big Synchronize go, without the runtime and the socket:
the payload a runtime sent (dumped by ``bench/tail_probe.py`` with ``TAIL_PROBE_DUMP_SYNC``,
e.g. under ``bench/gomockrt_topology_aware.py --sync 900 --variants small --probe``) is handed
to the Plugin service's Synchronize handler of a daemon composed as ``nrirp run`` composes it
(``DaemonContainer``: the policy, its configuration, the fake machine's sysfs tree, the file
state store in a fresh directory, garbage collection settled and paused around the sync as in
the daemon). Each ``--runs`` is a fresh process (the first Synchronize of a daemon is what is
measured), one after another, or alternating with another source tree (``--against SRC``: the
``src`` directory of another checkout, e.g. from ``git archive``), so that both see the same
machine load.

    .venv/bin/python bench/sync_replay.py --payload sync.bin --sysfs-root TREE
    .venv/bin/python bench/sync_replay.py --payload sync.bin --sysfs-root TREE --runs 7 \\
        --against /tmp/base/src
    .venv/bin/python bench/sync_replay.py --payload sync.bin --sysfs-root TREE --profile out.prof
    .venv/bin/python bench/sync_replay.py --payload sync.bin --sysfs-root TREE --tracemalloc

Prints per run the handler's wall and CPU time, the reply's size and the RSS before, after the
Synchronize and after the first state write (``--no-write`` leaves it out), then medians.
``--profile FILE`` writes a cProfile (CPU clock) of the handler; ``--tracemalloc`` lists what
the Synchronize and the first write left allocated, by line.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CONFIG = "reservedResources:\n  cpu: 750m\n"  # the reference Helm chart's default


def rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def one(args: argparse.Namespace) -> None:
    """One replay in this process; prints a line of ``key=value`` for the parent."""
    from nrirp.adapters.system import configure_logging

    configure_logging("warning", "text")
    from nrirp.adapters.nri.gen import api_pb2
    from nrirp.adapters.nri.stub.dispatch import Dispatcher
    from nrirp.adapters.nri.stub.scope import HANDLERS
    from nrirp.adapters.system.latency import settle, tune_switch_interval
    from nrirp.adapters.system.logs import log_in_background
    from nrirp.app.composition.node_agent import follow_pod_resources
    from nrirp.app.daemon import DaemonContainer

    work = Path(tempfile.mkdtemp(prefix="sync-replay-"))
    (work / "cgroups").mkdir()
    config = work / "config.yaml"
    config.write_text(CONFIG if args.policy == "topology-aware" else "{}\n")
    container = DaemonContainer()
    container.config.from_dict(
        {
            "policy": args.policy,
            "config_file": str(config),
            "nri_socket": str(work / "nri.sock"),
            "plugin_name": "resource-manager",
            "plugin_index": "90",
            "state_dir": str(work / "state"),
            "sysfs_root": str(args.sysfs_root),
            "memory_types": {},
            "cgroup_root": str(work / "cgroups"),
            "host_controls": None,
            "pod_resources_socket": None,
        }
    )
    container.config.agent.from_value(None)
    core = container.core.container
    manager = core.resource_manager()
    follow_pod_resources(container.adapters.container.topology_hints(), manager)
    store = container.adapters.container.state_store()
    store.lock()
    manager.start(core.policy_config())
    plugin = container.plugin()
    stub = container.stub()
    tune_switch_interval()
    settle()
    log_in_background(HANDLERS)
    payload = args.payload.read_bytes()
    before = rss_mib()
    tracemalloc: Any = None
    if args.tracemalloc:
        import tracemalloc

        tracemalloc.start(1)
        base = tracemalloc.take_snapshot()

    async def configure(request: api_pb2.ConfigureRequest) -> Any:
        return await plugin.configure(request)

    async def replay() -> tuple[float, float, int]:
        await plugin.configure(
            api_pb2.ConfigureRequest(runtime_name="nrimockrt", runtime_version="0.6.1")
        )
        synchronize = Dispatcher(stub.handlers, configure).methods()["Synchronize"]
        profile = None
        if args.profile:
            import cProfile

            profile = cProfile.Profile(time.process_time)
            profile.enable()
        wall, cpu = time.perf_counter(), time.process_time()
        reply = await synchronize(payload, None)  # type: ignore[arg-type]  # unused context
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if profile is not None:
            profile.disable()
            profile.dump_stats(args.profile)
        return wall, cpu, len(reply)

    wall, cpu, size = asyncio.run(replay())
    after_sync = rss_mib()
    after_write = after_sync
    if not args.no_write:
        store.flush()
        after_write = rss_mib()
    print(
        f"wall={wall * 1e3:.1f} cpu={cpu * 1e3:.1f} reply={size} rss_before={before:.1f} "
        f"rss_sync={after_sync:.1f} rss_write={after_write:.1f}",
        flush=True,
    )
    if tracemalloc is not None:
        for stat in tracemalloc.take_snapshot().compare_to(base, "lineno")[:30]:
            print(f"  {stat}", file=sys.stderr)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--payload", type=Path, required=True, help="a SynchronizeRequest")
    parser.add_argument("--sysfs-root", type=Path, required=True, help="a fake sysfs tree")
    parser.add_argument("--policy", default="topology-aware")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", type=Path, help="another checkout's src, alternated")
    parser.add_argument("--no-write", action="store_true", help="no state write after it")
    parser.add_argument("--profile", help="cProfile of the handler (CPU clock) to this file")
    parser.add_argument("--tracemalloc", action="store_true")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one or args.profile or args.tracemalloc:
        one(args)
        return 0
    sources = {"this": Path(__file__).resolve().parents[1] / "src"}
    if args.against is not None:
        sources["against"] = args.against
    child = [sys.executable, __file__, "--one", "--payload", str(args.payload)]
    child += ["--sysfs-root", str(args.sysfs_root), "--policy", args.policy]
    if args.no_write:
        child.append("--no-write")
    results: dict[str, list[dict[str, float]]] = {name: [] for name in sources}
    for run in range(args.runs):
        for name, source in sources.items():
            env = {**os.environ, "PYTHONPATH": str(source)}
            done = subprocess.run(child, env=env, capture_output=True, text=True, check=False)
            line = next((x for x in done.stdout.splitlines() if x.startswith("wall=")), None)
            if done.returncode != 0 or line is None:
                sys.exit(f"{name} run {run + 1} failed:\n{done.stderr[-2000:]}")
            values = {k: float(v) for k, v in (part.split("=") for part in line.split())}
            results[name].append(values)
            load = os.getloadavg()[0]
            print(f"{name:8} run {run + 1}: {line} (load {load:.2f})")
    for name, rows in results.items():
        med = {k: statistics.median(r[k] for r in rows) for k in rows[0]}
        print(
            f"{name}: median handler CPU {med['cpu']:.1f} ms (wall {med['wall']:.1f}); RSS "
            f"{med['rss_before']:.1f} before, {med['rss_sync']:.1f} after the Synchronize, "
            f"{med['rss_write']:.1f} MiB after the first state write ({len(rows)} runs)"
        )
    if args.against is not None:
        ratios = [
            t["cpu"] / a["cpu"] for t, a in zip(results["this"], results["against"], strict=True)
        ]
        print(f"this/against handler CPU, median of the pairs: {statistics.median(ratios):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
