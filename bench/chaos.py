"""Chaos: SIGKILL the daemon and restart the runtime at random moments during a pod storm.

The simulated runtime (``nrirp.simruntime``) listens on a unix socket and plays a kubelet: a
storm task creates pods (Guaranteed with 1 or 2 exclusive CPUs, Burstable, BestEffort) and
deletes them, a few at a time, without pause. ``nrirp run`` (a real process, the file state
store, ``--policy``) serves it. Then, ``--kills`` times, at a random moment of the storm,
either the daemon is killed with SIGKILL and started again at once or after a short random
delay (the storm goes on without it, as a kubelet would), or (``--runtime-restarts``, the
probability) the runtime restarts (plugins dropped, socket removed for a random downtime,
containers kept running, as containerd restarts with its shims alive).

After every kill or restart, once the daemon has registered and synchronized again, the storm
pauses and these must hold (checked again for up to ``--settle`` seconds while updates land):

* no container lost: every container the runtime runs is in the daemon's state file and no
  container the runtime no longer has is;
* the decisions applied: every running container's cpuset at the runtime is the one the state
  records (nothing left unpinned);
* (topology-aware) no exclusive CPU in two containers: exclusive grants are disjoint, and no
  other container's cpuset at the runtime includes another's exclusive CPUs.

Prints the kills and restarts survived, re-registration times (daemon killed: process start ->
registered; runtime restarted: socket back -> registered), p50/max, the storm's operations
(refusals while the daemon is down are expected and counted), and every violation; exits 1 on
any violation. Not part of the test suite (minutes of wall-clock time):

    .venv/bin/python bench/chaos.py                          # 100 kills, topology-aware
    .venv/bin/python bench/chaos.py --kills 20 --seed 7 --keep
    .venv/bin/python bench/chaos.py --policy balloons --runtime-restarts 0.5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
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

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model.kubelet import Resources
from nrirp.simruntime import ContainerSpec, PluginEventKind, PodSpec, SimRuntime
from nrirp.simruntime.model import ContainerState

NAME = "90-resource-manager"
TAG_EXCLUSIVE = "topology-aware.exclusive"
LIVE = (ContainerState.CREATED, ContainerState.RUNNING)


class Daemon:
    """``nrirp run`` processes, one incarnation after the other, logging to one file."""

    def __init__(self, args: argparse.Namespace, tmp: Path) -> None:
        self.argv = [
            sys.executable, "-m", "nrirp", "run",
            "--policy", args.policy,
            "--nri-socket", str(tmp / "nri.sock"),
            "--state-dir", str(tmp / "state"),
            "--sysfs-root", str(tmp / "sys"),
            "--cgroup-root", str(tmp / "no-cgroups"),
            "--config-poll-interval", "0",
            "--log-format", "json",
        ]  # fmt: skip
        self.log = tmp / "daemon.log"
        self.state = tmp / "state" / "cache"
        self.proc: subprocess.Popen[bytes] | None = None
        self.started = 0.0
        self.incarnations = 0

    def start(self) -> None:
        with open(self.log, "ab") as out:
            self.started = asyncio.get_running_loop().time()
            self.proc = subprocess.Popen(self.argv, stdout=out, stderr=subprocess.STDOUT)
        self.incarnations += 1

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def saved(self) -> dict[str, Any]:
        """The state file's containers by id (empty when there is no file yet)."""
        try:
            data = json.loads(self.state.read_text())
        except (FileNotFoundError, ValueError):
            return {}
        return {c["id"]: c for c in data.get("containers", [])}


class Storm:
    """Pods created and deleted without pause, until paused."""

    def __init__(self, runtime: SimRuntime, rnd: random.Random, args: argparse.Namespace):
        self.runtime = runtime
        self.rnd = rnd
        self.max_pods = args.max_pods
        self.exclusive_budget = args.exclusive_cpus
        self.pods: dict[str, int] = {}  # name -> exclusive CPUs asked
        self.serial = 0
        self.ops: Counter[str] = Counter()
        self.running = asyncio.Event()
        self.idle = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.running.set()
        self.task = asyncio.create_task(self._run())

    async def pause(self) -> None:
        self.running.clear()
        await self.idle.wait()

    def resume(self) -> None:
        self.running.set()

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def _run(self) -> None:
        while True:
            self.idle.set()
            await self.running.wait()
            self.idle.clear()
            try:
                if len(self.pods) < self.max_pods and (not self.pods or self.rnd.random() < 0.6):
                    await self._create()
                else:
                    await self._delete()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # refusals, calls to a plugin that went away
                self.ops[f"failed: {type(exc).__name__}"] += 1
            self.idle.set()
            await asyncio.sleep(self.rnd.uniform(0, 0.03))

    async def _create(self) -> None:
        self.serial += 1
        name = f"p{self.serial}"
        used = sum(self.pods.values())
        kind = self.rnd.choice(["guaranteed", "burstable", "besteffort"])
        exclusive = self.rnd.choice([1, 2]) if kind == "guaranteed" else 0
        if used + exclusive > self.exclusive_budget:
            kind, exclusive = "burstable", 0
        if kind == "guaranteed":
            cpu = f"{exclusive}"
            resources = Resources.of(
                requests={"cpu": cpu, "memory": "256Mi"}, limits={"cpu": cpu, "memory": "256Mi"}
            )
        elif kind == "burstable":
            resources = Resources.of(requests={"cpu": "200m"}, limits={"cpu": "1"})
        else:
            resources = Resources.of()
        self.pods[name] = exclusive  # counted before the call: a failed create may have placed
        spec = PodSpec(name, containers=[ContainerSpec("c", resources=resources)])
        try:
            await self.runtime.run_pod(spec)
        finally:
            self.ops[f"create {kind}"] += 1

    async def _delete(self) -> None:
        name = self.rnd.choice(sorted(self.pods))
        pod = self.runtime.find_pod("default", name)
        await self.runtime.delete_pod(pod)
        del self.pods[name]
        self.ops["delete"] += 1


def violations(runtime: SimRuntime, daemon: Daemon, policy: str) -> list[str]:
    """What is wrong right now (empty: every invariant holds)."""
    live = {c.id: c for c in runtime.containers() if c.state in LIVE}
    saved = daemon.saved()
    found = [
        f"container lost: {cid} runs but the daemon's state lacks it"
        for cid in live.keys() - saved.keys()
    ]
    found += [
        f"stale container: {cid} in the state, gone at the runtime"
        for cid in saved.keys() - live.keys()
    ]
    exclusive: dict[str, CPUSet] = {}
    for cid, ctr in live.items():
        record = saved.get(cid)
        if record is None:
            continue
        recorded = record.get("resources", {}).get("cpus")
        actual = ctr.resources.cpus
        if recorded is not None and (actual is None or str(actual) != recorded):
            found.append(
                f"not applied: {cid} runs on {actual or 'all CPUs'}, state says {recorded}"
            )
        tag = record.get("tags", {}).get(TAG_EXCLUSIVE, "")
        if tag:
            exclusive[cid] = CPUSet.parse(tag)
    if policy == "topology-aware":
        owners: dict[int, str] = {}
        for cid, cpus in exclusive.items():
            for cpu in cpus:
                if cpu in owners:
                    found.append(f"exclusive CPU {cpu} granted to {owners[cpu]} and {cid}")
                owners[cpu] = cid
        for cid, ctr in live.items():
            cpus = ctr.resources.cpus
            for cpu, owner in owners.items():
                if owner != cid and (cpus is None or cpu in cpus):
                    found.append(f"{cid} may run on exclusive CPU {cpu} of {owner}")
    return found


async def wait_synchronized(runtime: SimRuntime, seen: int, timeout: float) -> tuple[float, float]:
    """(registered, synchronized) times of the first connection after journal event ``seen``."""

    def synchronized() -> bool:
        return any(
            e.kind is PluginEventKind.SYNCHRONIZED and e.plugin == NAME
            for e in runtime.journal.events[seen:]
        )

    try:
        await runtime.journal.wait_for(synchronized, timeout)
    except TimeoutError:
        events = "; ".join(
            f"{e.kind.value} {e.plugin} {e.detail}" for e in runtime.journal.events[seen:]
        )
        raise RuntimeError(
            f"not synchronized within {timeout} s: {events or 'no plugin event'}"
        ) from None
    fresh = runtime.journal.events[seen:]
    registered = next(e.at for e in fresh if e.kind is PluginEventKind.REGISTERED)
    synced = next(e.at for e in fresh if e.kind is PluginEventKind.SYNCHRONIZED)
    return registered, synced


async def settle(runtime: SimRuntime, daemon: Daemon, policy: str, timeout: float) -> list[str]:
    """The violations still there after up to ``timeout`` seconds (updates may be landing)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = violations(runtime, daemon, policy)
        if not found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.05)


async def chaos(args: argparse.Namespace, tmp: Path) -> int:
    rnd = random.Random(args.seed)
    write_sysfs(resolve(load_machine(args.machine), args.machine), tmp / "sys")
    runtime = await SimRuntime(socket_path=tmp / "nri.sock").start()
    daemon = Daemon(args, tmp)
    storm = Storm(runtime, rnd, args)
    after_kill: list[float] = []
    after_restart: list[float] = []
    problems: list[str] = []
    kills = restarts = exclusive_seen = 0
    loop = asyncio.get_running_loop()
    began = time.monotonic()
    try:
        seen = len(runtime.journal.events)
        daemon.start()
        await wait_synchronized(runtime, seen, 60)
        storm.start()
        for round_ in range(1, args.kills + 1):
            await asyncio.sleep(rnd.uniform(0.2, args.storm))
            seen = len(runtime.journal.events)
            if rnd.random() < args.runtime_restarts:
                restarts += 1
                await runtime.restart(downtime=rnd.uniform(0, 0.5))
                back = loop.time()  # the socket is there again
                registered, _ = await wait_synchronized(runtime, seen, 30)
                after_restart.append(registered - back)
                what = "runtime restart"
            else:
                kills += 1
                daemon.kill()
                if rnd.random() < 0.5:
                    await asyncio.sleep(rnd.uniform(0, 0.5))  # the storm goes on without it
                seen = len(runtime.journal.events)
                daemon.start()
                registered, _ = await wait_synchronized(runtime, seen, 60)
                after_kill.append(registered - daemon.started)
                what = "SIGKILL"
            await storm.pause()
            found = await settle(runtime, daemon, args.policy, args.settle)
            live = sum(1 for c in runtime.containers() if c.state in LIVE)
            held = sum(1 for c in daemon.saved().values() if c.get("tags", {}).get(TAG_EXCLUSIVE))
            exclusive_seen += held > 0
            if found:
                problems += [f"round {round_} ({what}): {p}" for p in found]
                print(f"round {round_:3d} {what:15}: {live:2d} containers, VIOLATIONS:")
                for problem in found:
                    print(f"    {problem}")
            elif args.verbose:
                print(f"round {round_:3d} {what:15}: {live:2d} containers, {held} exclusive, ok")
            if not daemon.alive():
                problems.append(f"round {round_}: the daemon exited ({daemon.proc.returncode})")  # type: ignore[union-attr]
                break
            storm.resume()
    finally:
        await storm.stop()
        daemon.kill()
        await runtime.close()
    elapsed = time.monotonic() - began
    print(
        f"chaos: {args.policy} on {args.machine}, seed {args.seed}, {elapsed:.0f} s: "
        f"{kills} SIGKILLs and {restarts} runtime restarts survived "
        f"({daemon.incarnations} daemon processes)"
    )
    for label, times in (("after SIGKILL (process start", after_kill),
                         ("after a runtime restart (socket back", after_restart)):  # fmt: skip
        if times:
            print(
                f"  re-registration {label} -> registered): p50 "
                f"{statistics.median(times) * 1e3:.0f} ms, max {max(times) * 1e3:.0f} ms "
                f"({len(times)})"
            )
    print(f"  rounds checked with exclusive grants live: {exclusive_seen}")
    print("  storm:", ", ".join(f"{k} {v}" for k, v in sorted(storm.ops.items())))
    print(f"  violations: {len(problems)}")
    for problem in problems[:50]:
        print(f"    {problem}")
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="kills and restarts in all")
    parser.add_argument("--runtime-restarts", type=float, default=0.25,
                        help="probability that a round restarts the runtime")  # fmt: skip
    parser.add_argument("--policy", default="topology-aware")
    parser.add_argument("--machine", default="box-16")
    parser.add_argument("--max-pods", type=int, default=12)
    parser.add_argument("--exclusive-cpus", type=int, default=8,
                        help="at most this many exclusive CPUs asked by live pods")  # fmt: skip
    parser.add_argument("--storm", type=float, default=1.5,
                        help="storm at most this long between kills (seconds)")  # fmt: skip
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep", action="store_true", help="keep the directory and the log")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="nrirp-chaos-"))
    try:
        return asyncio.run(chaos(args, tmp))
    finally:
        if args.keep:
            print(f"kept {tmp} (daemon log: {tmp / 'daemon.log'})")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
