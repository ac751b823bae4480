"""Run ``nrirp`` with probes that say where a slow NRI request's time went.

Used as the plugin command of a gomockrt run (``bench/gomockrt_topology_aware.py --probe``),
in place of ``python -m nrirp``::

    python bench/tail_probe.py --out PROBE.json -- run --policy topology-aware ...

Probes (timestamps from ``time.perf_counter``, written as JSON when the process exits):

- every request the Plugin service gets: method, when its bytes were decoded (arrival), when
  its handler task began (queueing on the event loop), when the reply was written, and the
  thread CPU time the handler used;
- every garbage collection: generation, start, duration, objects collected (``gc.callbacks``);
- every state-file write on the writer thread: start and duration (it competes for the GIL),
  and how long encoding the changed objects and writing the file took;
- every event-loop callback over 1 ms (``loop.slow_callback_duration`` via asyncio debug is too
  slow, so handles are timed by wrapping ``asyncio.events.Handle._run``).

``--summary PROBE.json`` prints, for the slowest requests of a method, what overlapped them.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import gc
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

REQUESTS: list[tuple[str, float, float, float, float]] = []
"""(method, arrival, started, replied, handler CPU seconds)"""
GCS: list[tuple[int, float, float, int]] = []
"""(generation, start, duration, collected)"""
WRITES: list[tuple[float, float, float, float]] = []
"""(start, duration, thread CPU seconds, encoding-and-writing seconds) of state-file writes"""
SLOW_CALLBACKS: list[tuple[float, float, str]] = []
"""(start, duration, what) of event-loop callbacks over 1 ms that were not request handlers"""


def install(out: Path) -> None:
    from nrirp.adapters.nri.transport import ttrpc
    from nrirp.adapters.storage import file_store

    perf = time.perf_counter
    thread_time = time.thread_time
    arrivals: dict[int, float] = {}

    on_request = ttrpc.Endpoint._on_request

    def probed_on_request(self: Any, stream_id: int, data: Any) -> None:
        arrivals[stream_id] = perf()
        on_request(self, stream_id, data)

    serve_call = ttrpc.Endpoint._serve_call

    profiled = os.environ.get("TAIL_PROBE_PROFILE_METHOD")
    profile = None
    if profiled:
        import cProfile

        profile = cProfile.Profile()
        atexit.register(lambda: profile.dump_stats(os.environ["TAIL_PROBE_PROFILE_OUT"]))

    async def probed_serve_call(self: Any, handler: Any, payload: bytes, context: Any) -> None:
        if context.method == "Synchronize" and os.environ.get("TAIL_PROBE_DUMP_SYNC"):
            with open(os.environ["TAIL_PROBE_DUMP_SYNC"], "ab") as dump:  # chunks merge
                dump.write(payload)
        started = perf()
        cpu = thread_time()
        if profile is not None and context.method == profiled:
            profile.enable()
            try:
                await serve_call(self, handler, payload, context)
            finally:
                profile.disable()
        else:
            await serve_call(self, handler, payload, context)
        REQUESTS.append(
            (
                context.method,
                arrivals.pop(context.stream_id, started),
                started,
                perf(),
                thread_time() - cpu,
            )
        )

    ttrpc.Endpoint._on_request = probed_on_request  # type: ignore[method-assign]
    ttrpc.Endpoint._serve_call = probed_serve_call  # type: ignore[method-assign]

    write_file = file_store.FileStateStore._write_file
    if os.environ.get("TAIL_PROBE_LINGER"):
        store_init = file_store.FileStateStore.__init__

        def lingering_init(self: Any, *args: Any, **kwargs: Any) -> None:
            kwargs["linger"] = float(os.environ["TAIL_PROBE_LINGER"])
            store_init(self, *args, **kwargs)

        file_store.FileStateStore.__init__ = lingering_init  # type: ignore[method-assign]

    from nrirp.adapters.storage import json_encoding

    write_draft = json_encoding.Draft.write
    encoding = [0.0]

    def probed_write_draft(self: Any, *args: Any) -> None:
        started = perf()
        try:
            write_draft(self, *args)
        finally:
            encoding[0] = perf() - started

    writer_profile = None
    if os.environ.get("TAIL_PROBE_WRITER_PROFILE"):
        import cProfile

        writer_profile = cProfile.Profile()
        atexit.register(lambda: writer_profile.dump_stats(os.environ["TAIL_PROBE_WRITER_PROFILE"]))

    def probed_write_file(self: Any, snapshot: Any) -> None:
        started = perf()
        cpu = thread_time()
        try:
            if writer_profile is not None:
                writer_profile.runcall(write_file, self, snapshot)
            else:
                write_file(self, snapshot)
        finally:
            WRITES.append((started, perf() - started, thread_time() - cpu, encoding[0]))

    json_encoding.Draft.write = probed_write_draft  # type: ignore[method-assign]

    file_store.FileStateStore._write_file = probed_write_file  # type: ignore[method-assign]

    gc_start = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_start[0] = perf()
        else:
            GCS.append(
                (info["generation"], gc_start[0], perf() - gc_start[0], info.get("collected", 0))
            )

    gc.callbacks.append(on_gc)

    handle_run = asyncio.events.Handle._run

    def probed_run(self: Any) -> None:
        started = perf()
        handle_run(self)
        took = perf() - started
        if took > 0.001:
            SLOW_CALLBACKS.append((started, took, repr(self._callback)[:120]))

    asyncio.events.Handle._run = probed_run  # type: ignore[method-assign]

    if os.environ.get("TAIL_PROBE_SWITCH"):
        sys.setswitchinterval(float(os.environ["TAIL_PROBE_SWITCH"]))
    if os.environ.get("TAIL_PROBE_GC"):
        gc.set_threshold(*(int(x) for x in os.environ["TAIL_PROBE_GC"].split(",")))

    lock = threading.Lock()

    def dump() -> None:
        with lock:
            out.write_text(
                json.dumps(
                    {
                        "requests": REQUESTS,
                        "gcs": GCS,
                        "writes": WRITES,
                        "slow_callbacks": SLOW_CALLBACKS,
                        "gc_threshold": gc.get_threshold(),
                        "switch_interval": sys.getswitchinterval(),
                    }
                )
            )

    atexit.register(dump)


def overlaps(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def summary(path: Path, method: str, top: int) -> None:
    data = json.loads(path.read_text())
    requests = [r for r in data["requests"] if r[0] == method]
    if not requests:
        print(f"no {method} requests in {path}")
        return
    totals = sorted((r[3] - r[1]) * 1e3 for r in requests)
    n = len(totals)
    print(
        f"{method}: {n} calls, in-process arrival->reply ms: p50 {totals[n // 2]:.2f} "
        f"p99 {totals[min(n - 1, int(n * 0.99))]:.2f} max {totals[-1]:.2f}"
    )
    gcs = data["gcs"]
    for gen in (0, 1, 2):
        pauses = sorted(g[2] * 1e3 for g in gcs if g[0] == gen)
        if pauses:
            print(
                f"  gc gen{gen}: {len(pauses)} collections, p50 {pauses[len(pauses) // 2]:.2f} "
                f"ms, max {pauses[-1]:.2f} ms, total {sum(pauses):.0f} ms"
            )
    writes = sorted(w[1] * 1e3 for w in data["writes"])
    if writes:
        cpu = sorted(w[2] * 1e3 for w in data["writes"])
        enc = sorted(w[3] * 1e3 for w in data["writes"])
        print(
            f"  state writes: {len(writes)}, wall p50 {writes[len(writes) // 2]:.2f} ms "
            f"max {writes[-1]:.2f} ms total {sum(writes):.0f} ms; thread CPU p50 "
            f"{cpu[len(cpu) // 2]:.2f} max {cpu[-1]:.2f} total {sum(cpu):.0f} ms; encoding+writing "
            f"p50 {enc[len(enc) // 2]:.2f} max {enc[-1]:.2f}"
        )
    slow = data["slow_callbacks"]
    print(f"  event-loop callbacks over 1 ms (not handlers): {len(slow)}")
    print(f"  slowest {top}: total = queue + handler wall (handler CPU) | gc, write overlap")
    for r in sorted(requests, key=lambda r: r[1] - r[3])[:top]:
        _, arrival, started, replied, cpu = r
        gc_ms = sum(overlaps(arrival, replied, g[1], g[1] + g[2]) for g in gcs) * 1e3
        gens = sorted({g[0] for g in gcs if overlaps(arrival, replied, g[1], g[1] + g[2]) > 0})
        write_ms = sum(overlaps(arrival, replied, w[0], w[0] + w[1]) for w in data["writes"])
        callbacks = [c for c in slow if overlaps(arrival, replied, c[0], c[0] + c[1]) > 0]
        print(
            f"  {(replied - arrival) * 1e3:7.2f} = {(started - arrival) * 1e3:6.2f} + "
            f"{(replied - started) * 1e3:6.2f} ({cpu * 1e3:6.2f} cpu) | gc {gc_ms:5.2f} "
            f"{gens} write {write_ms * 1e3:5.2f}"
            + (f" | {len(callbacks)} slow callbacks" if callbacks else "")
        )


def main() -> int:
    if "--summary" in sys.argv:
        parser = argparse.ArgumentParser()
        parser.add_argument("--summary", type=Path, required=True)
        parser.add_argument("--method", default="CreateContainer")
        parser.add_argument("--top", type=int, default=15)
        args = parser.parse_args()
        summary(args.summary, args.method, args.top)
        return 0
    split = sys.argv.index("--")
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(sys.argv[1:split])
    install(args.out)
    from nrirp.app.cli import main as nrirp_main

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # replaced by the daemon's own
    return nrirp_main(sys.argv[split + 1 :])


if __name__ == "__main__":
    sys.exit(main())
