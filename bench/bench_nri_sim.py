"""Benchmark of the simulated NRI runtime over a real unix socket, with a plugin process.

The plugin is our stub (``nrirp.adapters.nri.stub``) in a separate process, this very script
with ``--plugin``: it implements CreateContainer with an empty adjustment (so it subscribes to
CreateContainer only) and Synchronize (returning no updates).

Modes (default: both):
  create  CreateContainer round trip, p50/p99 over ``--calls`` (default 10,000) containers, each
          created then removed (removal does not reach the plugin). Two views: ``rpc``, the
          runtime's call to the plugin (request written -> reply parsed, from the journal), and
          ``op``, the whole ``create_container`` (objects built, call, merge, model update).
  sync    Synchronize of ``--pods`` x ``--per-pod`` containers (default 500 x 10 = 5,000) to a
          newly connected plugin: ``whole`` emulates NRI v0.6.1 (one message; containerd 1.7),
          ``chunked`` NRI v0.12.2 with ``--chunk-limit`` bytes per message (default 1 MiB) so the
          split sync runs. Reports the time from the end of Configure to the plugin being
          synchronized (includes building, encoding, the plugin merging chunks), the number and
          size of messages. Objects are ``bare`` (see ``ObjectStyle``) so that 5,000 fit into
          one 4 MiB message; ``--full-objects`` uses kubelet-like ones (about 3 KB each, far too
          big for a whole sync: that run reports the failure, as containerd 1.7 would fail).

  daemon  ``nrirp run --policy topology-aware`` as the plugin (``--machine``'s fake sysfs tree,
          its default configuration, a fresh state directory): Synchronize of ``--pods`` x
          ``--per-pod`` running containers of mixed QoS with small requests (BestEffort,
          Burstable 10m, Guaranteed 20m in turn), whole (NRI v0.6.1) and chunked (v0.12.2), then
          ``--after`` (default 200) pods created one after another: their CreateContainer round
          trips (journal), the first 20 and the rest, to show whether the sync leaves the
          daemon slow. Prints the daemon's peak RSS (VmHWM) per run.

Examples:
  .venv/bin/python bench/bench_nri_sim.py
  .venv/bin/python bench/bench_nri_sim.py --mode create --calls 20000
  .venv/bin/python bench/bench_nri_sim.py --mode sync --repeat 5 --chunk-limit 262144
  .venv/bin/python bench/bench_nri_sim.py --mode sync --full-objects
  .venv/bin/python bench/bench_nri_sim.py --mode daemon --full-objects --repeat 3

Output: plain text on stdout, times in microseconds (create) or milliseconds (sync).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import Plugin, Stub
from nrirp.simruntime import (
    CallOutcome,
    ContainerSpec,
    ObjectStyle,
    PluginEventKind,
    PodSpec,
    Resources,
    SimRuntime,
)

SCRIPT = Path(__file__).resolve()
PLUGIN_NAME, PLUGIN_INDEX = "bench", "50"
FULL_NAME = f"{PLUGIN_INDEX}-{PLUGIN_NAME}"
RESOURCES = Resources.of(requests={"cpu": "250m", "memory": "64Mi"}, limits={"memory": "128Mi"})


# ----------------------------------------------------------------------------- the plugin


class EmptyPlugin(Plugin):
    """Subscribes to CreateContainer only; changes nothing."""

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> None:
        return None

    async def create_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        return None


async def plugin_main(socket_path: str) -> None:
    stub = Stub(
        EmptyPlugin(),
        name=PLUGIN_NAME,
        index=PLUGIN_INDEX,
        socket_path=socket_path,
        reconnect=False,
    )
    await stub.run()


# ----------------------------------------------------------------------------- the runtime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start_plugin(socket_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), "--plugin", "--socket", str(socket_path)],
        stdout=subprocess.DEVNULL,
    )


async def bench_create(calls: int, warmup: int, directory: Path) -> None:
    sock = directory / "create.sock"
    async with SimRuntime(socket_path=sock, keep_messages=False, journal_limit=None) as rt:
        plugin = start_plugin(sock)
        try:
            await rt.wait_plugin(FULL_NAME, timeout=30)
            pod = await rt.run_pod_sandbox(PodSpec("bench", containers=[ContainerSpec("c")]))
            samples: list[float] = []
            for n in range(warmup + calls):
                started = time.perf_counter()
                ctr = await rt.create_container(pod, "c", resources=RESOURCES)
                elapsed = time.perf_counter() - started
                await rt.remove_container(ctr)
                if n >= warmup:
                    samples.append(elapsed * 1e6)
            rpc = [
                c.duration * 1e6
                for c in rt.journal.calls_to(FULL_NAME, "CreateContainer")
                if c.outcome is CallOutcome.OK
            ][warmup:]
            assert len(rpc) == calls, f"expected {calls} CreateContainer calls, got {len(rpc)}"
        finally:
            plugin.terminate()
            plugin.wait()
    print(f"CreateContainer, empty adjustment, {calls} calls (after {warmup} warm-up):")
    for label, values in (("rpc", rpc), ("op", samples)):
        print(
            f"  {label:>3}: p50={percentile(values, 0.50):7.1f}us "
            f"p99={percentile(values, 0.99):7.1f}us mean={statistics.fmean(values):7.1f}us "
            f"max={max(values):8.1f}us"
        )


async def one_sync(
    version: str,
    chunk_limit: int | None,
    pods: int,
    per_pod: int,
    style: ObjectStyle,
    sock: Path,
) -> tuple[float, list[int], str | None]:
    """Populate a runtime, connect a plugin; return (sync ms, message sizes, failure)."""
    options = {"sync_size_limit": chunk_limit} if chunk_limit else {}
    async with SimRuntime(
        socket_path=sock, nri_version=version, style=style, request_timeout=60.0, **options
    ) as rt:
        for p in range(pods):
            containers = [ContainerSpec(f"c{i}", RESOURCES) for i in range(per_pod)]
            await rt.run_pod(PodSpec(f"pod{p}", containers=containers))
        plugin = start_plugin(sock)
        try:
            await rt.journal.wait_for(
                lambda: any(
                    e.plugin == FULL_NAME
                    and e.kind in (PluginEventKind.SYNCHRONIZED, PluginEventKind.REJECTED)
                    for e in rt.journal.events
                ),
                timeout=120,
            )
        finally:
            plugin.terminate()
            plugin.wait()
        events = {e.kind: e for e in rt.journal.events if e.plugin == FULL_NAME}
        syncs = [c for c in rt.journal.calls_to(FULL_NAME, "Synchronize")]
        sizes = [c.request.ByteSize() for c in syncs if c.outcome is CallOutcome.OK and c.request]
        if PluginEventKind.REJECTED in events:
            return 0.0, sizes, events[PluginEventKind.REJECTED].detail
        took = events[PluginEventKind.SYNCHRONIZED].at - events[PluginEventKind.CONFIGURED].at
        return took * 1e3, sizes, None


async def bench_sync(args: argparse.Namespace, directory: Path) -> None:
    style = ObjectStyle() if args.full_objects else ObjectStyle.bare()
    total = args.pods * args.per_pod
    kind = "kubelet-like" if args.full_objects else "bare"
    print(f"Synchronize of {args.pods} pods, {total} containers ({kind} objects):")
    for label, version, limit in (
        ("whole (NRI v0.6.1)", "v0.6.1", None),
        (f"chunked (NRI v0.12.2, {args.chunk_limit} B limit)", "v0.12.2", args.chunk_limit),
    ):
        times: list[float] = []
        sizes: list[int] = []
        failure = None
        for n in range(args.repeat):
            took, sizes, failure = await one_sync(
                version, limit, args.pods, args.per_pod, style, directory / f"sync{n}.sock"
            )
            if failure is not None:
                break
            times.append(took)
        if failure is not None:
            print(f"  {label}: FAILED: {failure}")
            continue
        print(
            f"  {label}: median={statistics.median(times):7.1f}ms min={min(times):7.1f}ms "
            f"over {len(times)} runs; {len(sizes)} message(s), "
            f"largest {max(sizes) / (1 << 20):.2f} MiB, total {sum(sizes) / (1 << 20):.2f} MiB"
        )


DAEMON_NAME = "90-resource-manager"


def mixed_resources(n: int) -> Resources:
    """BestEffort, Burstable 10m, Guaranteed 20m in turn (5,000 fit on 112 CPUs)."""
    kind = n % 3
    if kind == 0:
        return Resources()
    if kind == 1:
        return Resources.of(requests={"cpu": "10m", "memory": "16Mi"}, limits={"memory": "32Mi"})
    return Resources.of(
        requests={"cpu": "20m", "memory": "32Mi"}, limits={"cpu": "20m", "memory": "32Mi"}
    )


def vmhwm_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def start_daemon(
    sock: Path, tree: Path, state: Path, log: Path, probe: Path | None
) -> subprocess.Popen[bytes]:
    """``nrirp run`` (under ``bench/tail_probe.py`` writing ``probe`` when given)."""
    head = [sys.executable, "-m", "nrirp"]
    if probe is not None:
        head = [sys.executable, str(SCRIPT.parent / "tail_probe.py"), "--out", str(probe), "--"]
    argv = [
        *head, "run", "--policy", "topology-aware",
        "--sysfs-root", str(tree), "--state-dir", str(state), "--nri-socket", str(sock),
        "--cgroup-root", str(state.parent / "no-cgroups"), "--config-poll-interval", "0",
        "--log-level", "warning",
    ]  # fmt: skip
    (state.parent / "no-cgroups").mkdir(exist_ok=True)
    with log.open("wb") as out:
        return subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=out)


async def one_daemon_sync(
    version: str, chunk_limit: int | None, args: argparse.Namespace, style: ObjectStyle, run: Path
) -> tuple[float, list[int], list[float], int, str | None]:
    """Populate a runtime, start the daemon; (sync ms, message sizes, create round trips us
    after it, daemon peak RSS KiB, failure)."""
    options = {"sync_size_limit": chunk_limit} if chunk_limit else {}
    sock = run / "nri.sock"
    async with SimRuntime(
        socket_path=sock, nri_version=version, style=style, request_timeout=60.0, **options
    ) as rt:
        serial = 0
        for p in range(args.pods):
            containers = []
            for i in range(args.per_pod):
                containers.append(ContainerSpec(f"c{i}", mixed_resources(serial)))
                serial += 1
            await rt.run_pod(PodSpec(f"pod{p}", containers=containers))
        probe = args.probe and args.probe.with_name(f"{args.probe.name}-{run.name}.json")
        daemon = start_daemon(sock, args.tree, run / "state", run / "daemon.log", probe)
        try:
            await rt.journal.wait_for(
                lambda: any(
                    e.plugin == DAEMON_NAME
                    and e.kind in (PluginEventKind.SYNCHRONIZED, PluginEventKind.REJECTED)
                    for e in rt.journal.events
                ),
                timeout=180,
            )
            events = {e.kind: e for e in rt.journal.events if e.plugin == DAEMON_NAME}
            syncs = list(rt.journal.calls_to(DAEMON_NAME, "Synchronize"))
            sizes = [c.request.ByteSize() for c in syncs if c.request is not None]
            if PluginEventKind.REJECTED in events:
                return (
                    0.0,
                    sizes,
                    [],
                    vmhwm_kib(daemon.pid),
                    events[PluginEventKind.REJECTED].detail,
                )
            took = events[PluginEventKind.SYNCHRONIZED].at - events[PluginEventKind.CONFIGURED].at
            before = len(list(rt.journal.calls_to(DAEMON_NAME, "CreateContainer")))
            for n in range(args.after):
                await rt.run_pod(
                    PodSpec(f"after{n}", containers=[ContainerSpec("c", mixed_resources(n))])
                )
            creates = [
                c.duration * 1e6
                for c in list(rt.journal.calls_to(DAEMON_NAME, "CreateContainer"))[before:]
                if c.outcome is CallOutcome.OK
            ]
            return took * 1e3, sizes, creates, vmhwm_kib(daemon.pid), None
        finally:
            daemon.terminate()
            daemon.wait(30)


async def bench_daemon(args: argparse.Namespace, directory: Path) -> None:
    from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs

    args.tree = directory / "sys"
    write_sysfs(resolve(load_machine(args.machine), args.machine), args.tree)
    style = ObjectStyle() if args.full_objects else ObjectStyle.bare()
    total = args.pods * args.per_pod
    kind = "kubelet-like" if args.full_objects else "bare"
    print(
        f"nrirp run --policy topology-aware on {args.machine}: Synchronize of {args.pods} pods, "
        f"{total} containers ({kind} objects), then {args.after} pods created:"
    )
    variants = [
        ("whole (NRI v0.6.1)", "v0.6.1", None),
        (f"chunked (NRI v0.12.2, {args.chunk_limit} B limit)", "v0.12.2", args.chunk_limit),
    ]
    for label, version, limit in variants:
        for n in range(args.repeat):
            run = directory / f"daemon-{version}-{n}"
            run.mkdir()
            took, sizes, creates, hwm, failure = await one_daemon_sync(
                version, limit, args, style, run
            )
            if failure is not None:
                print(f"  {label}: FAILED: {failure} (daemon peak RSS {hwm / 1024:.0f} MiB)")
                break
            first, rest = creates[:20], creates[20:] or creates
            print(
                f"  {label}: sync {took:7.1f} ms in {len(sizes)} message(s) "
                f"(largest {max(sizes) / (1 << 20):.2f} MiB); creates after it: first 20 "
                f"p50 {percentile(first, 0.5):6.0f} us max {max(first):6.0f} us, the rest p50 "
                f"{percentile(rest, 0.5):6.0f} us p99 {percentile(rest, 0.99):6.0f} us max "
                f"{max(rest):6.0f} us; daemon peak RSS {hwm / 1024:.1f} MiB"
            )


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-nri-sim-") as tmp:
        directory = Path(tmp)
        if args.mode in ("create", "both"):
            await bench_create(args.calls, args.warmup, directory)
        if args.mode in ("sync", "both"):
            await bench_sync(args, directory)
        if args.mode == "daemon":
            await bench_daemon(args, directory)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("create", "sync", "both", "daemon"), default="both")
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--per-pod", type=int, default=10)
    parser.add_argument("--chunk-limit", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full-objects", action="store_true")
    parser.add_argument("--after", type=int, default=200, help="daemon mode: pods created after")
    parser.add_argument("--machine", default="server-112-pmem", help="daemon mode: fake machine")
    parser.add_argument(
        "--probe", type=Path, help="daemon mode: run it under tail_probe.py, writing PROBE-*.json"
    )
    parser.add_argument("--plugin", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--socket", help=argparse.SUPPRESS)
    return parser.parse_args()


if __name__ == "__main__":
    arguments = parse_args()
    if arguments.plugin:
        asyncio.run(plugin_main(arguments.socket))
    else:
        asyncio.run(main(arguments))
