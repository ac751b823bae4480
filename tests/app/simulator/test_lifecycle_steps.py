"""Containers that exit without a restart, init containers, and the policy's view after each
step (pools, who holds each allocation, scheduling and I/O priority as adjusted)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nrirp.app.simulator import (
    ReplayResult,
    WorkloadError,
    build_simulator,
    parse_workload,
    replay,
    replay_document,
    replay_result,
)
from nrirp.app.simulator.composition import SimulatorContainer
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import IOPriority, IOPriorityClass, Scheduling, SchedulingPolicy

EXAMPLES = Path(__file__).parents[3] / "examples" / "workloads" / "topology-aware"


def simulate(
    text: str, policy: str = "topology-aware", *, config: str | None = None
) -> tuple[ReplayResult, SimulatorContainer]:
    workload = parse_workload(text, name="test")
    container = build_simulator(policy, machine="box-16", config_file=config)
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(asyncio.wait_for(replay(container, workload), 60))
    result = replay_result(container, workload, steps, hardware="box-16", config_file=config)
    return result, container


EXIT = """
- createPod:
    name: job
    containers:
      - name: worker
        resources: {limits: {cpu: 2, memory: 1Gi}}
      - name: sidecar
        resources: {limits: {cpu: 100m, memory: 64Mi}}
- exitContainer: {pod: job, container: worker}
- exitContainer: {pod: job, container: worker}
  expectError: is not running
- deletePod: {name: job}
"""


def test_a_container_that_exits_is_stopped_and_released_by_the_policy() -> None:
    result, container = simulate(EXIT)
    created, exited, again, deleted = result.steps
    worker = next(c for c in created.containers if c.name == "worker")
    assert worker.state == "running" and len(worker.cpus or ()) == 2
    assert worker.pool is not None
    assert exited.ok and exited.description == "container default/job/worker exits (no restart)"
    stopped = next(c for c in exited.containers if c.name == "worker")
    assert stopped.state == "stopped" and stopped.pool is None  # released: no pool holds it
    assert all("default/job/worker" not in p.containers for p in exited.pools)
    # its exclusive CPUs are shared again in the pool that held them
    pool = next(p for p in exited.pools if p.name == worker.pool)
    assert (worker.cpus or CPUSet()) <= CPUSet.parse(pool.shared)
    assert not again.ok and again.as_expected
    assert "is not running (state stopped)" in again.errors[0]
    assert deleted.ok and deleted.containers == ()
    runtime = container.runtime()
    stops = [r.target for r in runtime.journal.operations if r.operation == "StopContainer"]
    assert stops[0] == worker.id  # the runtime reported it stopped


INIT = """
- createPod:
    name: app
    initContainers:
      - name: setup
        resources: {limits: {cpu: 2, memory: 256Mi}}
      - name: migrate
        resources: {limits: {cpu: 1, memory: 128Mi}}
    containers:
      - name: server
        resources: {limits: {cpu: 2, memory: 1Gi}}
"""


def test_init_containers_run_to_completion_one_after_another_first() -> None:
    result, container = simulate(INIT)
    (step,) = result.steps
    assert step.ok
    assert step.description == (
        "create pod default/app (Guaranteed; init containers setup, migrate; container server)"
    )
    states = {c.name: c.state for c in step.containers}
    assert states == {"setup": "stopped", "migrate": "stopped", "server": "running"}
    names = {c.id: c.name for c in step.containers}
    order = [
        (r.operation, names[r.target])
        for r in container.runtime().journal.operations
        if r.target in names
    ]
    assert order == [
        ("CreateContainer", "setup"),
        ("StartContainer", "setup"),
        ("StopContainer", "setup"),
        ("CreateContainer", "migrate"),
        ("StartContainer", "migrate"),
        ("StopContainer", "migrate"),
        ("CreateContainer", "server"),
        ("StartContainer", "server"),
    ]
    # the init containers held exclusive CPUs while they ran, and gave them back
    held = {c.name: c.pool for c in step.containers}
    assert held["setup"] is None and held["migrate"] is None and held["server"] is not None


def test_a_refused_init_container_stops_the_pod() -> None:
    result, _ = simulate(INIT.replace("cpu: 2, memory: 256Mi", "cpu: 40, memory: 256Mi"))
    (step,) = result.steps
    assert not step.ok
    assert step.errors[0].startswith("init container setup: ")
    assert step.errors[1] == "the pod's containers were not started"
    assert [c.name for c in step.containers] == []  # the refused creation was undone


def test_init_container_names_are_unique_in_the_pod() -> None:
    text = (
        "- createPod: {name: p, initContainers: [{name: a}], containers: [{name: a}]}\n"
        "- createPod: {name: q, initContainers: [{name: a}]}\n"
    )
    with pytest.raises(WorkloadError) as err:
        parse_workload(text, name="w.yaml")
    assert "steps[0].createPod.containers[0].name (step 1): duplicate container name 'a'" in str(
        err.value
    )
    assert "a pod needs at least one container" in str(err.value)


def test_the_policy_view_after_each_step() -> None:
    result, _ = simulate(EXIT)
    created = result.steps[0]
    names = [p.name for p in created.pools]
    assert names == [
        "root",
        "socket #0",
        "NUMA node #0",
        "NUMA node #1",
        "socket #1",
        "NUMA node #2",
        "NUMA node #3",
    ]
    worker = next(c for c in created.containers if c.name == "worker")
    holder = next(p for p in created.pools if p.name == worker.pool)
    assert "default/job/worker" in holder.containers
    assert not (CPUSet.parse(holder.shared) & (worker.cpus or CPUSet()))  # taken out of shared
    doc = replay_document(result)["steps"][0]
    pool = doc["pools"][0]
    assert list(pool) == [
        "name",
        "kind",
        "parent",
        "cpus",
        "shared",
        "reserved",
        "isolated",
        "mems",
        "containers",
    ]
    assert (pool["name"], pool["reserved"], pool["mems"]) == ("root", "0", "0-3")
    row = next(c for c in doc["containers"] if c["name"] == "worker")
    assert row["pool"] == worker.pool and row["scheduling"] is None and row["io_priority"] is None
    assert doc["balloons"] == []


def test_scheduling_and_io_priority_as_adjusted() -> None:
    config = str(EXAMPLES / "configs" / "box16-classes.yaml")
    workload = (EXAMPLES / "classes.yaml").read_text()
    result, _ = simulate(workload, config=config)
    seen = {
        (c.pod, c.name): (c.scheduling, c.io_priority) for s in result.steps for c in s.containers
    }
    assert seen[("job", "worker")] == (
        Scheduling(policy=SchedulingPolicy.BATCH, nice=10),
        IOPriority(IOPriorityClass.BEST_EFFORT, 7),
    )
    assert seen[("rt", "app")][0] == Scheduling(policy=SchedulingPolicy.FIFO, priority=42)
    doc = replay_document(result)
    rows = [c for s in doc["steps"] for c in s["containers"] if c["pod"] == "job"]
    assert rows[0]["scheduling"] == {
        "policy": "batch",
        "nice": 10,
        "priority": None,
        "flags": [],
        "runtime": None,
        "deadline": None,
        "period": None,
    }
    assert rows[0]["io_priority"] == {"class": "best-effort", "priority": 7}


def test_balloons_hold_their_members_by_name() -> None:
    text = "- createPod: {name: web, containers: [{name: app, resources: {requests: {cpu: 1}}}]}\n"
    result, _ = simulate(text, "balloons")
    (step,) = result.steps
    (app,) = step.containers
    assert app.pool is not None and app.pool in {b.name for b in step.balloons}
    assert step.pools == ()
