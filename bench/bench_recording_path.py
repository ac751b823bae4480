"""What recording costs each call on the pipeline's path, in process (no NRI, no runtime).

Three resource managers (template policy, the in-memory state store, ``--existing`` running
containers each) drive pod lifecycles (run-pod, create, post-create, start, post-start, stop,
remove, remove-pod), ``--cycles`` of them per batch, in turn, the order rotating from round
to round:

- ``off``: no inbound observer;
- ``null``: an observer that does nothing (the pipeline's hook alone: making the call);
- ``on``: the daemon's recorder (``--record``: a file under a temporary directory, default
  limits), its thread writing at the quiet moment after each batch (a pause of ``--pause``
  seconds, as the Go harness's burst is written after it).

Prints per operation the median latency of each variant (microseconds, over all rounds) and
the median over rounds of the per-round difference of the medians (a variant minus ``off``),
with how many rounds it was slower; then the recorder's own methods timed alone (``timeit``,
medians of ``--repeat`` repetitions). Say the load average (``uptime``) with the numbers.

    .venv/bin/python bench/bench_recording_path.py
    .venv/bin/python bench/bench_recording_path.py --rounds 60 --cycles 100
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import timeit
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from pipeline_workload import container, machine, pod, populate

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.adapters.recording import Recorder
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy

OPERATIONS = (
    "run-pod",
    "create",
    "post-create",
    "start",
    "post-start",
    "stop",
    "remove",
    "remove-pod",
)


class NullObserver:
    """Hears everything, does nothing: what is left is the pipeline's hook."""

    def started(self, config: Any, restored: Mapping[str, Any] | None, *rest: Any) -> None:
        pass

    def handled(
        self,
        operation: str,
        pod: Any = None,
        container: Any = None,
        resources: Any = None,
        pods: Any = (),
        containers: Any = (),
        config: Any = None,
        failure: Any = None,
    ) -> None:
        pass


def make_recorder(path: Path) -> Recorder:
    return Recorder(str(path), policy="template", machine=machine(), dump_config=lambda c: {})


def batch(manager: ResourceManager, first: int, cycles: int) -> dict[str, list[float]]:
    """``cycles`` pod lifecycles from pod number ``first``: each operation's latencies (us)."""
    clock = time.perf_counter
    out: dict[str, list[float]] = {name: [] for name in OPERATIONS}
    steps: list[tuple[str, Callable[..., object]]] = [
        ("run-pod", manager.run_pod),
        ("create", manager.create_container),
        ("post-create", manager.post_create),
        ("start", manager.start_container),
        ("post-start", manager.post_start),
        ("stop", manager.stop_container),
        ("remove", manager.remove_container),
        ("remove-pod", manager.remove_pod),
    ]
    for i in range(first, first + cycles):
        p = pod(i)
        c = container(p)
        for name, fn in steps:
            args = (p,) if name in ("run-pod", "remove-pod") else (p, c)
            start = clock()
            fn(*args)
            out[name].append((clock() - start) * 1e6)
    return out


def in_process(args: argparse.Namespace, directory: Path) -> None:
    recorder = make_recorder(directory / "rec.yaml")
    recorder.open()
    observers: dict[str, Any] = {"off": None, "null": NullObserver(), "on": recorder}
    managers = {}
    for name, observer in observers.items():
        manager = ResourceManager(
            policy=TemplatePolicy(),
            machine=machine(),
            store=InMemoryStateStore(),
            observer=observer,
        )
        populate(manager, args.existing)
        managers[name] = manager
    names = list(managers)
    all_times: dict[str, dict[str, list[float]]] = {n: {o: [] for o in OPERATIONS} for n in names}
    per_round: dict[str, dict[str, list[float]]] = {n: {o: [] for o in OPERATIONS} for n in names}
    first = args.existing
    for round_ in range(args.rounds + 1):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            times = batch(managers[name], first, args.cycles)
            time.sleep(args.pause)  # a quiet moment: the recorder writes what waits
            if round_ == 0:
                continue  # warm-up
            for op, values in times.items():
                all_times[name][op].extend(values)
                per_round[name][op].append(statistics.median(values))
        first += args.cycles
    recorder.close()
    print(
        f"in process: template policy, {args.existing} containers, {args.rounds} rounds of "
        f"{args.cycles} lifecycles per variant; recording: {recorder.steps} steps"
    )
    header = f"  {'operation':<12}" + "".join(f" {n + ' p50':>10}" for n in names)
    header += "".join(f" {n + '-off':>10} {'slower':>7}" for n in names[1:])
    print(header)
    for op in (*OPERATIONS, "lifecycle"):
        if op == "lifecycle":
            medians = {
                n: sum(statistics.median(all_times[n][o]) for o in OPERATIONS) for n in names
            }
            rounds = {
                n: [sum(per_round[n][o][r] for o in OPERATIONS) for r in range(args.rounds)]
                for n in names
            }
        else:
            medians = {n: statistics.median(all_times[n][op]) for n in names}
            rounds = {n: per_round[n][op] for n in names}
        line = f"  {op:<12}" + "".join(f" {medians[n]:>10.2f}" for n in names)
        for n in names[1:]:
            diffs = [a - b for a, b in zip(rounds[n], rounds["off"], strict=True)]
            slower = sum(1 for d in diffs if d > 0)
            line += f" {statistics.median(diffs):>+10.2f} {slower:>3}/{len(diffs):<3}"
        print(line)


def alone(args: argparse.Namespace, directory: Path) -> None:
    """The recorder's methods on their own, each call as the pipeline makes it."""
    recorder = make_recorder(directory / "alone.yaml")
    p = pod(0)
    c = container(p)
    handled = recorder.handled
    cases: dict[str, Callable[[], object]] = {  # as the pipeline calls it
        "handled(create-container)": lambda: handled(
            "create-container", p, c, None, (), (), None, None
        ),
        "handled(remove-container)": lambda: handled(
            "remove-container", p, c, None, (), (), None, None
        ),
        "handled(post-create)": lambda: handled("post-create", p, c, None, (), (), None, None),
    }
    number = 100  # 400 KB reckoned at most: below where the thread is woken
    print(f"the recorder alone (median of {args.repeat} x {number} calls, ns per call):")
    for name, call in cases.items():
        samples = []
        for _ in range(args.repeat):
            samples.append(timeit.timeit(call, number=number) / number * 1e9)
            recorder._queue.clear()  # not opened: nothing takes what waits
            recorder._queued = recorder._handed = 0  # as if the thread had taken it
        print(f"  {name:<28} {statistics.median(samples):>8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--cycles", type=int, default=100)
    parser.add_argument("--existing", type=int, default=100)
    parser.add_argument("--pause", type=float, default=0.15)
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--alone", action="store_true", help="the recorder's methods alone only")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="nrirp-bench-record-") as tmp:
        if not args.alone:
            in_process(args, Path(tmp))
        alone(args, Path(tmp))


if __name__ == "__main__":
    main()
