"""Replays through our NRI plugin and the simulated runtime: what each container ends up with."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from dependency_injector import providers

from nrirp.adapters.fakehw import expected_machine, load_machine, machine_names
from nrirp.adapters.memory import InMemoryStateStore, RecordingDecisionLog
from nrirp.app.simulator import (
    Change,
    ContainerView,
    ReplayResult,
    StepResult,
    build_simulator,
    parse_workload,
    replay,
    replay_result,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model.kubelet import shares_from_millis
from nrirp.domain.ports.decisions import NullDecisionLog
from tests.app.simulator.policies import MODULE as TEST_POLICIES

EXAMPLES = Path(__file__).parents[3] / "examples"
EXCLUSIVE = str(EXAMPLES / "policies" / "exclusive_cpus.py")


def simulate(
    text: str,
    policy: str = "template",
    *,
    machine: str = "box-16",
    modules: list[str] | None = None,
    base_dir: str = ".",
    nri_version: str | None = None,
) -> ReplayResult:
    workload = parse_workload(text, name="test", base_dir=base_dir)
    container = build_simulator(
        policy, machine=machine, policy_modules=modules, nri_version=nri_version
    )
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(asyncio.wait_for(replay(container, workload), 60))
    return replay_result(container, workload, steps, hardware=machine, config_file=None)


def by_name(step: StepResult) -> dict[str, ContainerView]:
    return {f"{c.namespace}/{c.pod}/{c.name}": c for c in step.containers}


def cpus(step: StepResult) -> dict[str, str | None]:
    return {k: None if c.cpus is None else str(c.cpus) for k, c in by_name(step).items()}


# ---------------------------------------------------------------------- template policy
TEMPLATE = """
- createPod:
    name: web
    namespace: prod
    containers:
      - name: app
        resources: {requests: {cpu: 500m, memory: 128Mi}, limits: {cpu: 1, memory: 256Mi}}
      - name: pinned
        resources: {limits: {cpu: 2, memory: 1Gi}}
        cpusetCpus: 2-3
        cpusetMems: "1"
- updateContainer:
    pod: web
    namespace: prod
    container: app
    resources: {requests: {cpu: 1}, limits: {cpu: 2, memory: 512Mi}}
- deletePod: {name: web, namespace: prod}
"""


def test_template_changes_nothing_and_the_runtime_holds_what_kubelet_asked() -> None:
    result = simulate(TEMPLATE)
    create, update, delete = result.steps
    assert all(s.ok and s.as_expected for s in result.steps)
    assert create.decisions == () and [p.qos for p in create.pods] == ["Burstable"]
    app, pinned = create.containers
    assert (app.cpus, app.mems) == (None, None)  # not restricted, as CRI asked
    assert (app.cpu_shares, app.cpu_quota, app.cpu_period) == (512, 100_000, 100_000)
    assert app.memory_limit == 256 << 20 and app.state == "running"
    # kubelet's OOM score for a Burstable container: 1000 - 1000 * request / capacity
    capacity = sum(n.memory_bytes for n in expected_machine(load_machine("box-16")).nodes.values())
    assert app.oom_score_adj == 1000 - 1000 * (128 << 20) // capacity
    assert (pinned.cpus, pinned.mems) == (CPUSet.of(2, 3), CPUSet.of(1))  # the CPU manager's
    assert pinned.cpu_shares == shares_from_millis(2000) and pinned.memory_limit == 1 << 30
    assert all(c.change is Change.NEW and c.matches_decision for c in create.containers)
    resized = by_name(update)["prod/web/app"]
    assert (resized.cpu_shares, resized.cpu_quota, resized.memory_limit) == (
        1024,
        200_000,
        512 << 20,
    )
    assert resized.change is Change.CHANGED
    assert by_name(update)["prod/web/pinned"].change is Change.UNCHANGED
    assert delete.containers == () and delete.pods == ()
    assert result.nri_version == "v0.12.2" and result.cpus == CPUSet.range(0, 16)


def test_an_older_nri_release_reports_no_oom_score() -> None:
    result = simulate(TEMPLATE, nri_version="v0.6.1")
    assert result.nri_version == "v0.6.1"
    assert result.steps[0].containers[0].oom_score_adj is None


# ---------------------------------------------------------------------- the example policy
def test_example_policy_workload_through_the_whole_nri_path() -> None:
    text = (EXAMPLES / "workloads" / "exclusive-cpus.yaml").read_text()
    result = simulate(
        text,
        "exclusive-cpus",
        modules=[EXCLUSIVE],
        base_dir=str(EXAMPLES / "workloads"),
    )
    steps = result.steps
    assert [s.ok for s in steps] == [True, True, True, False, True, True, False, False] + [True] * 3
    assert not result.unexpected  # the three failures are the expected ones
    every = "0-15"
    assert cpus(steps[0]) == {"shop/frontend/nginx": every, "shop/frontend/metrics": every}
    # the exclusive CPUs come in the adjustment, the shrunk shared pool in the same reply
    assert cpus(steps[1]) == {
        "shop/frontend/nginx": "4-15",
        "shop/frontend/metrics": "4-15",
        "shop/db/postgres": "0-3",
    }
    assert by_name(steps[1])["shop/db/postgres"].mems == CPUSet.of(0)
    assert by_name(steps[1])["shop/frontend/nginx"].change is Change.CHANGED
    # refused creation: the runtime fails it, nothing changes, the replay goes on
    assert "cannot give crunch 12 exclusive CPUs" in steps[3].errors[0]
    assert "jobs/batch/crunch" not in by_name(steps[3])
    assert cpus(steps[3]) == cpus(steps[2])
    # in-place resize through UpdateContainer: 2 CPUs back to the shared pool
    assert cpus(steps[4])["shop/db/postgres"] == "0-1"
    assert cpus(steps[4])["shop/cache/redis"] == "2-15"
    # reconfiguration: updates to running containers go out with UpdateContainers
    assert cpus(steps[5])["shop/db/postgres"] == "2-3"
    assert cpus(steps[5])["shop/frontend/nginx"] == "4-15"
    # a bad config and a refused one: the old one stays, nothing moves
    assert steps[6].errors == (
        "reservedResources.cpus: unknown field (did you mean cpu?)",
        "configuration not applied, the old one stays",
    )
    assert steps[7].errors[0].startswith("the policy refused the configuration: the new pool")
    assert cpus(steps[6]) == cpus(steps[7]) == cpus(steps[5])
    assert cpus(steps[8])["kube-system/coredns/coredns"] == "0-1"  # the reserved CPUs
    # restart: a new container id with the resized spec (2 CPUs), on the same CPUs
    old_id = by_name(steps[8])["shop/db/postgres"].id
    new = by_name(steps[9])["shop/db/postgres"]
    assert new.id != old_id and new.change is Change.NEW and str(new.cpus) == "2-3"
    assert cpus(steps[10]) == {
        "shop/frontend/nginx": "2-15",
        "shop/frontend/metrics": "2-15",
        "shop/cache/redis": "2-15",
        "kube-system/coredns/coredns": "0-1",
    }
    assert all(c.matches_decision for s in steps for c in s.containers)


# ---------------------------------------------------------------------- reconfiguration
RECONFIGURE = """
- createPod:
    name: db
    containers: [{name: pg, resources: {limits: {cpu: 2, memory: 1Gi}}}]
- createPod:
    name: web
    containers: [{name: app}]
- reconfigure: {file: good.yaml}
- reconfigure: {file: bad.yaml}
- reconfigure: {file: missing.yaml}
- reconfigure: {config: "reservedResources: {cpu: 'cpuset:0-1'}\\n"}
- createPod:
    name: late
    containers: [{name: app}]
"""


def test_reconfiguration_good_then_bad_keeps_the_good_one(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text("availableResources: {cpu: 'cpuset:8-15'}\n")
    (tmp_path / "bad.yaml").write_text("availableResources: {cpu: 'cpuset:x'}\nextra: 1\n")
    result = simulate(RECONFIGURE, "exclusive-cpus", modules=[EXCLUSIVE], base_dir=str(tmp_path))
    _, web, good, bad, missing, inline, late = result.steps
    assert cpus(web) == {"default/db/pg": "0-1", "default/web/app": "2-15"}
    assert good.ok and cpus(good) == {"default/db/pg": "8-9", "default/web/app": "10-15"}
    assert not bad.ok and bad.errors[-1] == "configuration not applied, the old one stays"
    assert any(e.startswith("availableResources.cpu: invalid value 'cpuset:x'") for e in bad.errors)
    assert "extra: unknown field" in bad.errors
    assert not missing.ok and "missing.yaml" in missing.errors[0]
    assert cpus(bad) == cpus(missing) == cpus(good)
    # inline YAML text replaces the whole config: the good file's pool is gone; pg keeps the
    # exclusive CPUs that are still in the pool
    assert inline.ok and cpus(inline) == {"default/db/pg": "8-9", "default/web/app": "2-7,10-15"}
    assert cpus(late)["default/late/app"] == "2-7,10-15"


# ---------------------------------------------------------------------- events, failures
EVENTS = """
- createPod: {name: a, containers: [{name: c1}, {name: c2}]}
- event: {kind: move, data: "4-5"}
- event: {kind: fail, data: nope}
- expectError: true
  event: {kind: move, data: ""}
- restartContainer: {pod: a, container: c1}
- restartContainer: {pod: a, container: zz}
- updateContainer: {pod: nope, container: c1, resources: {limits: {cpu: 1}}}
- deletePod: {name: nope}
- createPod: {name: a, containers: [{name: c1}]}
- expectError: something else
  deletePod: {name: nope}
- expectError: true
  sleep: 0s
"""


def test_events_failures_and_expectations() -> None:
    result = simulate(EVENTS, "sim-move", modules=[TEST_POLICIES])
    steps = result.steps
    assert cpus(steps[0]) == {"default/a/c1": "0", "default/a/c2": "0"}
    # policy-initiated updates are delivered with UpdateContainers before the state is read
    assert steps[1].ok and cpus(steps[1]) == {"default/a/c1": "4-5", "default/a/c2": "4-5"}
    assert [d.reason for d in steps[1].decisions] == ["moved by event to 4-5"] * 2
    # a failing event handler is rolled back and reported; the step fails
    assert steps[2].errors == ("event fail simulator failed: event refused: nope",)
    assert cpus(steps[2]) == cpus(steps[1])
    # an empty cpuset cannot be written to a cgroup: the runtime keeps the old one, and the
    # replay shows that it differs from what the policy decided
    moved = by_name(steps[3])["default/a/c1"]
    assert str(moved.cpus) == "4-5" and moved.decided_cpus == CPUSet()
    assert not moved.matches_decision
    assert steps[3].ok and steps[3].unmet_expectation == "the step was expected to fail"
    restarted = by_name(steps[4])["default/a/c1"]
    assert restarted.id != by_name(steps[3])["default/a/c1"].id and str(restarted.cpus) == "0"
    assert steps[5].errors == ("pod default/a has no container 'zz'",)
    assert steps[6].errors == ("no pod sandbox default/nope",)
    assert steps[7].errors == ("no pod sandbox default/nope",)
    assert steps[8].errors == ("pod default/a already exists",)
    assert steps[9].unmet_expectation == "the step was expected to fail with 'something else'"
    assert steps[10].unmet_expectation == "the step was expected to fail"
    assert [s.number for s in result.unexpected] == [3, 4, 6, 7, 8, 9, 10, 11]
    assert [s.number for s in result.failed] == [3, 6, 7, 8, 9, 10]


def test_a_container_refused_in_a_pod_does_not_stop_the_others() -> None:
    text = """
- createPod:
    name: mix
    containers:
      - {name: big, resources: {limits: {cpu: 16, memory: 1Gi}}}
      - {name: small, resources: {limits: {cpu: 1, memory: 1Gi}}}
"""
    (step,) = simulate(text, "exclusive-cpus", modules=[EXCLUSIVE]).steps
    assert len(step.errors) == 1 and step.errors[0].startswith("container big: plugin ")
    assert "cannot give big 16 exclusive CPUs" in step.errors[0]
    assert cpus(step) == {"default/mix/small": "0"}


# ---------------------------------------------------------------------- machines, overrides
SMALL = """
- createPod:
    name: g
    containers: [{name: c, resources: {limits: {cpu: 2, memory: 1Gi}}}]
- createPod:
    name: b
    containers: [{name: c, resources: {requests: {cpu: 100m}}}]
- deletePod: {name: g}
"""


@pytest.mark.parametrize("machine", machine_names())
def test_catalogue_machines(machine: str) -> None:
    expected = expected_machine(load_machine(machine))
    result = simulate(SMALL, "exclusive-cpus", machine=machine, modules=[EXCLUSIVE])
    assert all(s.ok for s in result.steps) and result.cpus == expected.online
    _, b, after = result.steps
    exclusive = by_name(b)["default/g/c"].cpus
    shared = by_name(b)["default/b/c"].cpus
    assert exclusive is not None and shared is not None
    assert len(exclusive) == 2 and exclusive.isdisjoint(shared)
    assert exclusive | shared == expected.online - expected.isolated
    memory_nodes = {n for n, node in expected.nodes.items() if node.memory_bytes > 0}
    mems = by_name(b)["default/g/c"].mems
    assert mems is not None and set(mems) <= memory_nodes
    assert set(mems) == {expected.node_of(c) for c in exclusive} & memory_nodes
    assert by_name(after)["default/b/c"].cpus == expected.online - expected.isolated


def test_decisions_need_a_recording_log_but_the_replay_works_without() -> None:
    workload = parse_workload(SMALL)
    container = build_simulator("exclusive-cpus", machine="box-16", policy_modules=[EXCLUSIVE])
    container.adapters.decision_log.override(providers.Object(NullDecisionLog()))
    container.core.resource_manager().start()
    steps = asyncio.run(replay(container, workload))
    assert [s.decisions for s in steps] == [(), (), ()]
    assert str(by_name(steps[0])["default/g/c"].cpus) == "0-1"
    recorded = build_simulator("exclusive-cpus", machine="box-16", policy_modules=[EXCLUSIVE])
    assert isinstance(recorded.adapters.decision_log(), RecordingDecisionLog)


def test_replay_needs_the_settling_updates_adapter() -> None:
    container = build_simulator("template", machine="box-16")
    from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates

    container.adapters.runtime_updates.override(providers.Singleton(NriRuntimeUpdates))
    container.core.resource_manager().start()
    with pytest.raises(TypeError, match="SettlingRuntimeUpdates"):
        asyncio.run(replay(container, parse_workload(SMALL)))


def test_state_is_saved_once_per_step_and_unsaveable_state_fails_the_step() -> None:
    text = """
- createPod: {name: good, containers: [{name: a}, {name: b}]}
- createPod: {name: worse, containers: [{name: bad}]}
- deletePod: {name: worse}
"""
    workload = parse_workload(text)
    container = build_simulator("sim-bad-state", machine="box-16", policy_modules=[TEST_POLICIES])
    store = container.adapters.state_store()
    assert isinstance(store, InMemoryStateStore)
    container.core.resource_manager().start()
    steps = asyncio.run(replay(container, workload))
    assert steps[0].ok and steps[2].ok
    assert len(steps[1].errors) == 1
    assert steps[1].errors[0].startswith("state not saved: state is not JSON-compatible")
    assert store.saves > 3  # one per operation, encoded once per step
    saved = json.loads(store.raw or "")
    assert sorted(c["name"] for c in saved["containers"]) == ["a", "b"]
