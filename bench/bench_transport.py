"""Micro-benchmark of the NRI transport (mux + ttRPC) alone: unary call round trips.

Modes (default: inproc and xproc):
  inproc   two sessions over a socketpair in one process and one event loop
  xproc    the server session in a child process (the realistic case: two processes, two loops)
  go       the Go NRI runtime harness (gomockrt's nrimockrt) driving, in alternating runs, the Go
           no-op plugin (nristub) and a raw Python plugin built on this transport alone (every
           Plugin method answers an empty reply, as nristub does); compares per-event latency.

Examples:
  .venv/bin/python bench/bench_transport.py
  .venv/bin/python bench/bench_transport.py --mode xproc --calls 50000 --payload 2048
  .venv/bin/python bench/bench_transport.py --mode go --runs 5 --pods 200
  .venv/bin/python bench/bench_transport.py --loop uvloop     (if uvloop is importable)

Output is plain text on stdout: percentiles of the per-call round trip in microseconds, and
throughput with ``--concurrency`` callers in flight.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from nrirp.adapters.nri.api import PLUGIN_SERVICE, RUNTIME_SERVICE
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import (
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    CallContext,
    Endpoint,
    Session,
)

SERVICE = "bench.Echo"
NRI_PLUGIN_METHODS = tuple(api_pb2.DESCRIPTOR.services_by_name["Plugin"].methods_by_name)
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.support.gomockrt import build_gomockrt  # noqa: E402


def run(main: Coroutine[Any, Any, None], loop_name: str) -> None:
    if loop_name == "uvloop":
        import uvloop  # type: ignore[import-not-found]

        uvloop.run(main)
    else:
        asyncio.run(main)


# ---------------------------------------------------------------------- echo server / client


async def echo(payload: bytes, _ctx: CallContext) -> bytes:
    return payload


def serve_echo(session: Session) -> None:
    session.open(PLUGIN_SERVICE_CONN).serve(SERVICE, {"Echo": echo})


async def measure(endpoint: Endpoint, calls: int, warmup: int, payload: bytes) -> list[float]:
    for _ in range(warmup):
        await endpoint.call(SERVICE, "Echo", payload, timeout=2.0)
    samples = []
    clock = time.perf_counter_ns
    for _ in range(calls):
        start = clock()
        await endpoint.call(SERVICE, "Echo", payload, timeout=2.0)
        samples.append((clock() - start) / 1000)
    return samples


async def throughput(endpoint: Endpoint, calls: int, concurrency: int, payload: bytes) -> float:
    per_worker = max(1, calls // concurrency)

    async def worker() -> None:
        for _ in range(per_worker):
            await endpoint.call(SERVICE, "Echo", payload, timeout=10.0)

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return per_worker * concurrency / (time.perf_counter() - start)


def report(title: str, samples: list[float], rate: float | None) -> None:
    ordered = sorted(samples)

    def pct(p: float) -> float:
        return ordered[min(len(ordered) - 1, int(p / 100 * len(ordered)))]

    line = (
        f"{title:<28} n={len(samples):<6} p50={pct(50):7.1f}us p90={pct(90):7.1f}us "
        f"p99={pct(99):7.1f}us max={ordered[-1]:8.1f}us mean={statistics.fmean(samples):7.1f}us"
    )
    if rate is not None:
        line += f"  concurrent: {rate:,.0f} calls/s"
    print(line, flush=True)


async def bench_inproc(args: argparse.Namespace) -> None:
    left, right = socket.socketpair()
    server, client = Session(), Session()
    serve_echo(server)
    endpoint = client.open(PLUGIN_SERVICE_CONN)
    await server.attach(left)
    await client.attach(right)
    payload = b"x" * args.payload
    samples = await measure(endpoint, args.calls, args.warmup, payload)
    rate = await throughput(endpoint, args.calls, args.concurrency, payload)
    report(f"inproc payload={args.payload}", samples, rate)
    client.close()
    server.close()
    await client.wait_closed()
    await server.wait_closed()


async def bench_xproc(args: argparse.Namespace) -> None:
    left, right = socket.socketpair()
    child = subprocess.Popen(
        [sys.executable, __file__, "--serve-fd", str(left.fileno()), "--loop", args.loop],
        pass_fds=[left.fileno()],
    )
    left.close()
    client = Session()
    endpoint = client.open(PLUGIN_SERVICE_CONN)
    await client.attach(right)
    payload = b"x" * args.payload
    samples = await measure(endpoint, args.calls, args.warmup, payload)
    rate = await throughput(endpoint, args.calls, args.concurrency, payload)
    report(f"xproc payload={args.payload}", samples, rate)
    client.close()
    await client.wait_closed()
    child.wait(timeout=10)


async def serve_fd(fd: int) -> None:
    done = asyncio.Event()
    session = Session(on_close=lambda _reason: done.set())
    serve_echo(session)
    await session.attach(socket.socket(fileno=fd))
    await done.wait()
    await session.wait_closed()


# ---------------------------------------------------------------------- raw NRI plugin vs Go


def _string_field(tag: int, text: str) -> bytes:
    raw = text.encode()
    return bytes((tag, len(raw))) + raw


async def raw_nri_plugin(socket_path: str) -> None:
    """An NRI plugin that is nothing but this transport: every Plugin method returns empty."""
    done = asyncio.Event()
    session = Session(on_close=lambda _reason: done.set())

    async def empty(_payload: bytes, _ctx: CallContext) -> bytes:
        return b""

    session.open(PLUGIN_SERVICE_CONN).serve(
        PLUGIN_SERVICE, dict.fromkeys(NRI_PLUGIN_METHODS, empty)
    )
    runtime = session.open(RUNTIME_SERVICE_CONN)
    await session.connect(socket_path)
    register = _string_field(0x0A, "pytransport") + _string_field(0x12, "90")
    await runtime.call(RUNTIME_SERVICE, "RegisterPlugin", register, timeout=5.0)
    await done.wait()
    await session.wait_closed()


def bench_go(args: argparse.Namespace) -> None:
    bindir = build_gomockrt() / "bin"
    python_plugin = f"{sys.executable} {__file__} --loop {args.loop} --nri-plugin %s"
    plugins = {"go-nristub": f"{bindir / 'nristub'} -socket %s", "py-transport": python_plugin}
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in plugins}
    with tempfile.TemporaryDirectory() as tmp:
        for run_index in range(args.runs):
            for name, command in plugins.items():
                out = Path(tmp) / f"{name}-{run_index}.json"
                subprocess.run(
                    [
                        str(bindir / "nrimockrt"),
                        "-socket",
                        str(Path(tmp) / "nri.sock"),
                        "-pods",
                        str(args.pods),
                        "-warmup",
                        "20",
                        "-sync",
                        str(args.sync),
                        "-json",
                        str(out),
                        "-exec",
                        command,
                    ],
                    check=True,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                results[name].append(json.loads(out.read_text()))
    events = [event["event"] for event in results["go-nristub"][0]["events"]]
    print(f"nrimockrt, {args.runs} alternating runs of {args.pods} pods; medians across runs (us)")
    print(f"{'event':<22}{'Go p50':>9}{'Py p50':>9}{'ratio':>7}{'Go p99':>10}{'Py p99':>10}")
    for event in events:

        def median_of(name: str, key: str, event: str = event) -> float:
            return statistics.median(
                next(e for e in run["events"] if e["event"] == event)[key] for run in results[name]
            )

        go50, py50 = median_of("go-nristub", "p50_us"), median_of("py-transport", "p50_us")
        go99, py99 = median_of("go-nristub", "p99_us"), median_of("py-transport", "p99_us")
        print(f"{event:<22}{go50:>9.1f}{py50:>9.1f}{py50 / go50:>7.2f}{go99:>10.1f}{py99:>10.1f}")


# ---------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["inproc", "xproc", "both", "go"], default="both")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--warmup", type=int, default=2000)
    parser.add_argument("--payload", type=int, default=0, help="request and reply bytes")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--loop", choices=["asyncio", "uvloop"], default="asyncio")
    parser.add_argument("--runs", type=int, default=3, help="go mode: runs per plugin")
    parser.add_argument("--pods", type=int, default=200, help="go mode: pods per run")
    parser.add_argument("--sync", type=int, default=10, help="go mode: containers to synchronize")
    parser.add_argument("--serve-fd", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--nri-plugin", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fd is not None:
        run(serve_fd(args.serve_fd), args.loop)
        return
    if args.nri_plugin is not None:
        run(raw_nri_plugin(args.nri_plugin), args.loop)
        return
    if args.mode == "go":
        bench_go(args)
        return
    print(f"python {sys.version.split()[0]}, loop={args.loop}, cpus={os.cpu_count()}")
    benches: list[Callable[[argparse.Namespace], Coroutine[Any, Any, None]]] = []
    if args.mode in ("inproc", "both"):
        benches.append(bench_inproc)
    if args.mode in ("xproc", "both"):
        benches.append(bench_xproc)
    for bench in benches:
        run(bench(args), args.loop)


if __name__ == "__main__":
    main()
