"""What host control costs a CreateContainer: the topology-aware pipeline on server-112-pmem
with CPU classes and controllable interrupts configured, with the host ports off, and on (the
real cpufreq/cpuidle/uncore, /proc/irq and resctrl adapters writing server-112-pmem's fake host
tree on tmpfs). Rounds of both are interleaved.

Two kinds of creation are timed, each through ``ResourceManager.create_container`` (wall clock
and the thread's CPU time, microseconds):

- ``shared``: a Burstable container; no CPU changes class and no interrupt moves, so the host
  enforcement only asks the policy for its assignment (the same object) and compares nothing;
- ``exclusive``: a Guaranteed 2-CPU container; its CPUs take the exclusive class and the
  interrupts move off them: the files are written (and written back when it goes).

    .venv/bin/python bench/bench_host_control.py                    # 5 rounds of 300 + 40
    .venv/bin/python bench/bench_host_control.py --rounds 3 --shared 200 --exclusive 20

The machine is shared and busy: compare the interleaved rounds' medians, and the CPU time
more than the wall clock.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from typing import Any

from pipeline_workload import pct

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import FakeHostTree, expected_machine, load_machine
from nrirp.adapters.hostcontrol.cpufreq import SysfsCPUPower
from nrirp.adapters.hostcontrol.irq import ProcInterruptControl
from nrirp.adapters.hostcontrol.resctrl import ResctrlFs
from nrirp.adapters.memory import RecordingDecisionLog, RecordingRuntimeUpdates
from nrirp.domain.model import Container, ContainerState, LinuxResources, Pod
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TopologyAwarePolicy

MACHINE = "server-112-pmem"
CONFIG = {
    "reservedResources": {"cpu": "cpuset:0,56"},
    "cpuClasses": [
        {"name": "turbo", "minFreq": "base", "maxFreq": "turbo", "turboPriority": 10},
        {"name": "eco", "maxFreq": 2000000, "disabledCstates": ["C6"]},
    ],
    "defaultExclusiveCPUClass": "turbo",
    "sharedPoolCPUClass": "eco",
    "control": {"rdt": {"enable": True, "partitions": {"p": {"classes": {"gold": {}}}}}},
}
GIB = 1 << 30


def pod(name: str, guaranteed: bool) -> Pod:
    parent = f"/kubepods/pod{name}" if guaranteed else f"/kubepods/burstable/pod{name}"
    return Pod(id=f"p-{name}", name=name, uid=name, namespace="default", cgroup_parent=parent)


def container(p: Pod, guaranteed: bool) -> Container:
    resources = (
        LinuxResources(cpu_shares=2048, cpu_quota=200_000, cpu_period=100_000, memory_limit=GIB)
        if guaranteed
        else LinuxResources(cpu_shares=102)
    )
    return Container(id=f"c-{p.name}", pod_id=p.id, name="c", resources=resources)


def manager(on: bool, tree: FakeHostTree | None) -> ResourceManager:
    ports: dict[str, Any] = {}
    if on:
        assert tree is not None
        ports = {
            "cpu_power": SysfsCPUPower(tree.sysfs_root),
            "interrupts": ProcInterruptControl(tree.procfs_root),
            "resctrl": ResctrlFs(tree.resctrl_root),
        }
    rm = ResourceManager(
        policy=TopologyAwarePolicy(),
        machine=expected_machine(load_machine(MACHINE)),
        updates=RecordingRuntimeUpdates(),
        decisions=RecordingDecisionLog(),
        **ports,
    )
    rm.start(load_policy_config("topology-aware", CONFIG))
    return rm


def lifecycle(rm: ResourceManager, name: str, guaranteed: bool) -> tuple[float, float, Any]:
    """Create one container (timed) and run it; returns (wall us, cpu us, its pod/container)."""
    p = pod(name, guaranteed)
    c = container(p, guaranteed)
    rm.run_pod(p)
    wall, cpu = time.perf_counter(), time.thread_time()
    rm.create_container(p, c)
    cpu_us, wall_us = (time.thread_time() - cpu) * 1e6, (time.perf_counter() - wall) * 1e6
    running = Container(
        id=c.id, pod_id=p.id, name="c", resources=c.resources, state=ContainerState.RUNNING
    )
    rm.post_create(p, running)
    rm.post_start(p, running)
    return wall_us, cpu_us, (p, c)


def stop(rm: ResourceManager, made: Any) -> None:
    p, c = made
    rm.stop_container(p, c)
    rm.remove_container(p, c)


def round_of(on: bool, shared: int, exclusive: int, background: int) -> dict[str, list[float]]:
    tree = FakeHostTree(load_machine(MACHINE)) if on else None
    try:
        rm = manager(on, tree)
        for i in range(background):
            lifecycle(rm, f"bg{i}", False)
        out: dict[str, list[float]] = {k: [] for k in ("shared", "shared_cpu", "excl", "excl_cpu")}
        made = []
        for i in range(shared):
            wall, cpu, m = lifecycle(rm, f"s{i}", False)
            out["shared"].append(wall)
            out["shared_cpu"].append(cpu)
            made.append(m)
        for m in made:
            stop(rm, m)
        for i in range(exclusive):
            wall, cpu, m = lifecycle(rm, f"e{i}", True)
            out["excl"].append(wall)
            out["excl_cpu"].append(cpu)
            stop(rm, m)
        rm.shutdown()
        return out
    finally:
        if tree is not None:
            tree.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--shared", type=int, default=300, help="shared creates per round")
    parser.add_argument("--exclusive", type=int, default=40, help="exclusive creates per round")
    parser.add_argument("--running", type=int, default=100, help="containers running meanwhile")
    args = parser.parse_args()
    print(f"{MACHINE}, topology-aware with CPU classes, {args.running} running; load {load()}")
    header = "round  host  shared p50/p99 (cpu p50)      exclusive p50/p99 (cpu p50)   [us]"
    print(header)
    medians: dict[bool, dict[str, list[float]]] = {False: {}, True: {}}
    for r in range(args.rounds):
        for on in (False, True):
            out = round_of(on, args.shared, args.exclusive, args.running)
            for key, values in out.items():
                medians[on].setdefault(key, []).append(pct(values, 0.5))
            print(
                f"{r + 1:>5}  {'on ' if on else 'off'}  "
                f"{pct(out['shared'], 0.5):7.0f} / {pct(out['shared'], 0.99):7.0f} "
                f"({pct(out['shared_cpu'], 0.5):5.0f})      "
                f"{pct(out['excl'], 0.5):7.0f} / {pct(out['excl'], 0.99):7.0f} "
                f"({pct(out['excl_cpu'], 0.5):5.0f})"
            )
    print(f"medians of the rounds' p50 (load {load()}):")
    for key in ("shared", "shared_cpu", "excl", "excl_cpu"):
        off, on = (statistics.median(medians[v][key]) for v in (False, True))
        print(f"  {key:<11} off {off:7.0f}  on {on:7.0f}  on/off {on / off:5.3f}")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


if __name__ == "__main__":
    main()
