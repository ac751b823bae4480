"""``nrirp simulate`` with cluster steps: the in-process fake API and the node agent follow
applyConfig, deleteConfig and labelNode as the daemon's agent does."""

from __future__ import annotations

import asyncio
from pathlib import Path

from nrirp.app.simulator.cluster import NODE, SimulatedCluster, needs_cluster
from nrirp.app.simulator.replay import Replayer, replay
from nrirp.app.simulator.setup import build_simulator
from nrirp.app.simulator.updates import SettlingRuntimeUpdates
from nrirp.app.simulator.workload import load_workload, parse_workload

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "workloads" / "cluster" / "node-config.yaml"


def test_the_example_switches_refuses_and_falls_back() -> None:
    container = build_simulator("balloons", machine="box-16")
    container.core.container.resource_manager().start()
    steps = asyncio.run(replay(container, load_workload(str(EXAMPLE))))
    assert [s.kind for s in steps][:4] == ["applyConfig", "createPod", "applyConfig", "labelNode"]
    assert all(s.unmet_expectation is None and not s.failed_checks for s in steps)
    refused = steps[5]
    assert "spec.bogus: unknown field" in refused.errors
    assert refused.errors[-1] == (
        "BalloonsPolicy kube-system/node.sim-node not applied, the old configuration stays"
    )
    assert [s.number for s in steps if s.errors] == [6]
    assert steps[3].description == "label node config.nri/group=small"


def test_no_cluster_without_cluster_steps_and_topology_exported() -> None:
    plain = parse_workload("- createPod: {name: p, containers: [{name: c}]}\n")
    assert not needs_cluster(plain)
    workload = parse_workload(
        "- labelNode: {key: config.nri/group, value: x}\n"
        "- createPod: {name: p, containers: [{name: c, resources: {requests: {cpu: 1}}}]}\n"
    )
    assert needs_cluster(workload)
    container = build_simulator("topology-aware", machine="box-16")
    core = container.core.container
    core.resource_manager().start()

    async def scenario() -> dict[str, object] | None:
        adapters = container.adapters.container
        updates = adapters.runtime_updates()
        assert isinstance(updates, SettlingRuntimeUpdates)
        async with container.simulation() as simulation:
            replayer = Replayer(
                simulation,
                core.resource_manager(),
                updates,
                adapters.decision_log(),
                workload,
                adapters.state_store(),
                core.policy_registry(),
            )
            cluster = replayer.cluster
            assert isinstance(cluster, SimulatedCluster)
            await replayer.run()
            labels = cluster.cluster.nodes[NODE]["metadata"]["labels"]
            assert labels == {"config.nri/group": "x"}
            topology = cluster.topology()
            return dict(topology) if topology is not None else None

    nrt = asyncio.run(scenario())
    assert nrt is not None and nrt["topologyPolicies"] == ["topology-aware"]
    zones = nrt["zones"]
    assert isinstance(zones, list) and {z["type"] for z in zones} >= {"socket", "numa node"}


def test_a_failure_already_in_force_is_not_a_later_steps_refusal() -> None:
    workload = parse_workload(
        """
- applyConfig:
    config:
      apiVersion: config.nri/v1alpha1
      kind: BalloonsPolicy
      metadata: {name: default, namespace: kube-system}
      spec: {reservedResources: {cpu: 750m}, bogus: 1}
  expectError: "spec.bogus: unknown field"
- labelNode: {key: example.com/unrelated, value: x}
- createPod: {name: p, containers: [{name: c, resources: {requests: {cpu: 1}}}]}
- labelNode: {key: example.com/unrelated, value: y}
"""
    )
    container = build_simulator("balloons", machine="box-16")
    container.core.container.resource_manager().start()
    steps = asyncio.run(replay(container, workload))
    assert "spec.bogus: unknown field" in steps[0].errors
    assert [s.errors for s in steps[1:]] == [(), (), ()]  # the labels changed nothing
