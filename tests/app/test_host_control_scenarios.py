"""The host control scenarios of examples/workloads (topology-aware and balloons) replayed on
server-112-pmem's fake host tree: the values each step applied, read back from the files the
adapters wrote, and everything given back at the end; scheduling classes by NRI or by the
host controller depending on the runtime's NRI release."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import FakeHostTree, load_machine
from nrirp.app.simulator import build_simulator, load_workload, replay
from nrirp.app.simulator.results import StepResult
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import SchedulingPolicy

EXAMPLES = Path(__file__).parents[2] / "examples" / "workloads"
MACHINE = "server-112-pmem"


def run(policy: str, config: Path, workload: Path, nri_version: str | None = None) -> Any:
    container = build_simulator(
        policy, machine=MACHINE, config_file=str(config), nri_version=nri_version
    )
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(asyncio.wait_for(replay(container, load_workload(str(workload))), 120))
    return container, steps


def read(root: str, rel: str) -> str:
    with open(os.path.join(root, rel), encoding="utf-8") as f:
        return f.read().strip()


FRESH = FakeHostTree(load_machine(MACHINE))
"""The host tree as the machine has it before anything is written."""


def at(step: StepResult, rel: str) -> str:
    """A file's value after ``step``: as written then, else as the host had it."""
    assert step.host is not None
    return step.host.files.get(rel) or read(FRESH.root, rel)


def cpus_of(step: StepResult, name: str) -> CPUSet:
    found = next(c for c in step.containers if c.name == name)
    assert found.cpus is not None
    return found.cpus


def groups(step: StepResult) -> dict[str, tuple[str, Any, Any]]:
    assert step.host is not None
    return {g.cpu_class: (g.cpus, g.min_khz, g.max_khz) for g in step.host.cpu_classes}


@pytest.mark.parametrize("nri_version", [None, "v0.6.1"])
def test_topology_aware_host_control(nri_version: str | None) -> None:
    container, steps = run(
        "topology-aware",
        EXAMPLES / "topology-aware/configs/server112-host-control.yaml",
        EXAMPLES / "topology-aware/host-control.yaml",
        nri_version,
    )
    assert [s.ok for s in steps] == [True] * 5
    root = container.adapters.host().tree.root
    cpu = "sys/devices/system/cpu"
    # step 1: the reserved and shared CPUs' classes, the resctrl groups, the export
    first = steps[0]
    assert groups(first) == {
        "system": ("0,56", None, 2_700_000),
        "eco": ("1-55,57-111", None, 2_000_000),
    }
    assert at(first, f"{cpu}/cpu1/cpufreq/scaling_max_freq") == "2000000"
    assert first.host is not None and [g for g, _ in first.host.rdt_groups] == [
        "Guaranteed",
        "Burstable",
        "BestEffort",
    ]
    assert at(first, "sys/fs/resctrl/Burstable/schemata") == "L3:0=7f;1=7f; MB:0=60;1=60"
    nginx = next(c for c in first.containers if c.name == "nginx")
    assert nginx.rdt_class == "Burstable"  # usePodQoSAsDefaultClass, through NRI
    export = next(v for k, v in first.host.files.items() if k.endswith("resources.sh"))
    assert 'SHARED_CPUS="1-55,57-111"' in export
    # step 2: turbo on the exclusive CPUs, uncore of their die, interrupts off them
    second = steps[1]
    pg = cpus_of(second, "pg")
    assert groups(second)["turbo"] == (str(pg), 2_700_000, 4_000_000)
    one = pg.min()
    assert at(second, f"{cpu}/cpu{one}/cpufreq/scaling_governor") == "performance"
    assert at(second, f"{cpu}/cpu{one}/cpuidle/state3/disable") == "1"  # C6
    package = container.core.machine().cpus[one].package_id
    assert second.host is not None and second.host.uncore == ((f"{package}/0", 2_000_000, None),)
    uncore = f"{cpu}/intel_uncore_frequency/package_{package:02d}_die_00/min_freq_khz"
    assert at(second, uncore) == "2000000"
    assert at(second, "proc/irq/40/smp_affinity_list") == str(CPUSet.parse("0-111") - pg)
    assert at(second, "proc/irq/9/smp_affinity_list") == "0-111"  # not controllable
    pg_view = next(c for c in second.containers if c.name == "pg")
    assert pg_view.scheduling is not None and pg_view.scheduling.policy is SchedulingPolicy.FIFO
    assert pg_view.applied_by == ("host" if nri_version else "nri")
    # step 4: the exclusive CPUs are eco again; uncore and interrupts as the host had them
    fourth = steps[3]
    assert groups(fourth)["eco"][0] == "1-55,57-111" and "turbo" not in groups(fourth)
    assert at(fourth, f"{cpu}/cpu{one}/cpufreq/scaling_max_freq") == "2000000"
    assert at(fourth, f"{cpu}/cpu{one}/cpuidle/state3/disable") == "0"
    assert at(fourth, uncore) == "1200000"
    assert at(fourth, "proc/irq/40/smp_affinity_list") == "0-111"
    # step 5: no classes, no RDT: every file as a fresh tree has it, the groups gone
    last = steps[4]
    assert last.host is not None and last.host.cpu_classes == () and last.host.rdt_groups == ()
    assert not os.path.exists(f"{root}/sys/fs/resctrl/Burstable")
    with FakeHostTree(load_machine(MACHINE)) as fresh:
        for rel in first.host.files:
            if rel.startswith(("sys/", "proc/")) and "resctrl/" not in rel.removeprefix("sys/fs/"):
                assert read(root, rel) == read(fresh.root, rel), rel


def test_balloons_host_control() -> None:
    container, steps = run(
        "balloons",
        EXAMPLES / "balloons/configs/host-control.yaml",
        EXAMPLES / "balloons/host-control.yaml",
        "v0.6.1",
    )
    assert [s.ok for s in steps] == [True] * 3
    root = container.adapters.host().tree.root
    cpu = "sys/devices/system/cpu"
    first, second, third = steps
    bulk = cpus_of(first, "job")
    assert groups(first) == {
        "idle": (str(CPUSet.parse("0-111") - bulk), None, 1_000_000),
        "lo": (str(bulk), None, None),
    }
    idle = (CPUSet.parse("0-111") - bulk).min()
    assert at(first, f"{cpu}/cpu{idle}/cpuidle/state2/disable") == "1"  # C1E
    assert at(first, "proc/irq/40/smp_affinity_list") == str(bulk)  # the sink
    job = next(c for c in first.containers if c.name == "job")
    assert job.scheduling is not None and job.scheduling.policy is SchedulingPolicy.BATCH
    assert job.applied_by == "host"
    assert container.adapters.host_control().settings[job.id].io_priority is not None
    # a fast balloon claims eth, its class takes turbo from lo in the same package
    engine = cpus_of(second, "engine")
    assert groups(second)["hi"] == (str(engine), 2_700_000, 4_000_000)
    assert groups(second)["lo"] == (str(bulk), None, 2_700_000)
    assert at(second, "proc/irq/40/smp_affinity_list") == str(engine)
    assert at(second, "proc/irq/60/smp_affinity_list") == str(bulk)
    # it goes: its CPUs idle again, eth back to the sink, lo keeps turbo again
    assert groups(third)["lo"] == (str(bulk), None, None)
    assert at(third, "proc/irq/40/smp_affinity_list") == str(bulk)
    assert at(third, f"{cpu}/cpu{bulk.min()}/cpufreq/scaling_max_freq") == "4000000"
    # shutdown: the host as it was
    container.core.resource_manager().shutdown()
    assert read(root, "proc/irq/40/smp_affinity_list") == "0-111"
    assert read(root, f"{cpu}/cpu{idle}/cpuidle/state2/disable") == "0"
    assert read(root, f"{cpu}/cpu{idle}/cpufreq/scaling_max_freq") == "4000000"
