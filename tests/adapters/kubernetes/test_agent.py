"""The node agent over the in-process FakeCluster: which resource configures the node, status
written back (and cleared on the previous one), fallback, faults, NodeResourceTopology."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from nrirp.adapters.kubernetes import (
    FakeCluster,
    NodeAgent,
    Retry,
    topology_document,
)
from tests.adapters.kubernetes.agent_support import KIND, NODE, Recorder, cr, until, zones
from tests.support.aio import arun

FAST = Retry(initial=0.01, maximum=0.05)


async def settle(agent: NodeAgent, cluster: FakeCluster) -> None:
    for _ in range(3):  # quiet twice in a row: nothing left in flight
        await until(lambda: agent.quiet() and cluster.pending_events() == 0)
        await asyncio.sleep(0.01)


def make(cluster: FakeCluster, **kwargs: Any) -> tuple[NodeAgent, Recorder]:
    agent = NodeAgent(cluster, node=NODE, kind=KIND, retry=FAST, topology_interval=0, **kwargs)
    recorder = Recorder()
    agent.on_config(recorder)
    return agent, recorder


def test_most_specific_resource_wins_and_status_follows() -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default"))
        agent, recorder = make(cluster)
        await agent.start()
        await settle(agent, cluster)
        assert recorder.names == ["default"]
        status = cluster.node_status(KIND, "default", NODE)
        assert status is not None
        assert status["status"] == "Success" and status["generation"] == 1
        assert status["timestamp"].endswith("Z")
        assert "errors" not in status

        # a group label moves the node to group.<g> once it exists
        cluster.label_node(NODE, "config.nri/group", "gpu")
        await settle(agent, cluster)
        assert recorder.names == ["default"]
        cluster.apply_config(cr("group.gpu"))
        await settle(agent, cluster)
        assert recorder.names == ["default", "group.gpu"]
        assert cluster.node_status(KIND, "default", NODE) is None  # cleared on the previous
        assert cluster.node_status(KIND, "group.gpu", NODE)["status"] == "Success"  # type: ignore[index]

        # node.<node> beats the group
        cluster.apply_config(cr("node.worker-1"))
        await settle(agent, cluster)
        assert recorder.names[-1] == "node.worker-1"
        assert cluster.node_status(KIND, "group.gpu", NODE) is None
        await agent.stop()

    arun(scenario)


def test_deprecated_group_labels_in_order() -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE, {"resource-policy.nri.io/group": "old", "group.config.nri": "mid"})
        for name in ("default", "group.old", "group.mid"):
            cluster.apply_config(cr(name))
        agent, recorder = make(cluster)
        await agent.start()
        await settle(agent, cluster)
        assert recorder.names == ["group.mid"]
        await agent.stop()

    arun(scenario)


def test_failure_then_success_clears_errors_and_generation_follows_spec_only() -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default", {"bad": 1}))
        agent, recorder = make(cluster)
        await agent.start()
        await settle(agent, cluster)
        status = cluster.node_status(KIND, "default", NODE)
        assert status == {
            "status": "Failure",
            "generation": 1,
            "errors": ["spec.bad: unknown field"],
            "timestamp": status["timestamp"],  # type: ignore[index]
        }
        cluster.apply_config(cr("default", {"reservedResources": {"cpu": 1}}))
        await settle(agent, cluster)
        status = cluster.node_status(KIND, "default", NODE)
        assert status is not None and status["status"] == "Success"
        assert status["generation"] == 2 and "errors" not in status
        # our own status writes do not re-apply (generation unchanged)
        assert len(recorder.applied) == 2
        await agent.stop()

    arun(scenario)


def test_deleted_resource_falls_back_then_keeps_config(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default"))
        cluster.apply_config(cr("node.worker-1"))
        agent, recorder = make(cluster)
        await agent.start()
        await settle(agent, cluster)
        assert recorder.names == ["node.worker-1"]
        cluster.delete_config(KIND, "node.worker-1")
        await settle(agent, cluster)
        assert recorder.names == ["node.worker-1", "default"]
        assert cluster.node_status(KIND, "default", NODE)["status"] == "Success"  # type: ignore[index]
        cluster.delete_config(KIND, "default")
        await settle(agent, cluster)
        assert recorder.names == ["node.worker-1", "default"]  # nothing applies: kept
        assert agent.in_force is not None and agent.in_force.name == "default"
        await agent.stop()

    with caplog.at_level(logging.INFO, "nrirp.agent"):
        arun(scenario)
    assert "no BalloonsPolicy applies to node worker-1" in caplog.text
    assert "the configuration from BalloonsPolicy kube-system/default stays" in caplog.text


def test_api_down_at_start_then_up(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default"))
        cluster.go_down()
        agent, recorder = make(cluster)
        agent.in_force_description = "the saved configuration"
        await agent.start()
        await until(lambda: cluster.calls["list nodes"] >= 3)
        assert recorder.names == []
        cluster.come_back()
        await until(lambda: recorder.names == ["default"])
        await settle(agent, cluster)
        await agent.stop()

    with caplog.at_level(logging.INFO, "nrirp.agent"):
        arun(scenario)
    assert "cannot reach the API server (connection refused); the saved configuration stays" in (
        caplog.text
    )
    assert "the API server answers again" in caplog.text


def test_watch_expiry_relists_and_sees_changes_made_meanwhile() -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default"))
        agent, recorder = make(cluster)
        await agent.start()
        await settle(agent, cluster)
        cluster.expire_watches()
        cluster.apply_config(cr("node.worker-1"))
        await settle(agent, cluster)
        assert recorder.names == ["default", "node.worker-1"]
        assert agent.stats.relists >= 1
        await agent.stop()

    arun(scenario)


def test_restart_of_the_api_server_relists() -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default"))
        agent, recorder = make(cluster)
        await agent.start()
        await settle(agent, cluster)
        cluster.go_down()
        await asyncio.sleep(0.02)
        cluster.apply_config(cr("node.worker-1"))  # made while the agent could not see it
        cluster.come_back()
        await until(lambda: recorder.names[-1:] == ["node.worker-1"])
        await settle(agent, cluster)
        await agent.stop()

    arun(scenario)


def test_rbac_denied_names_verb_and_resource(caplog: pytest.LogCaptureFixture) -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        cluster.apply_config(cr("default"))
        cluster.forbid("patch", "balloonspolicies/status")
        agent, recorder = make(cluster)
        await agent.start()
        await until(lambda: cluster.calls["patch balloonspolicies/status"] >= 2)
        assert recorder.names == ["default"]  # applied; only the status write is denied
        assert cluster.node_status(KIND, "default", NODE) is None
        cluster.allow("patch", "balloonspolicies/status")
        await settle(agent, cluster)
        assert cluster.node_status(KIND, "default", NODE) is not None
        await agent.stop()

    with caplog.at_level(logging.INFO, "nrirp.agent"):
        arun(scenario)
    assert "RBAC denied: the agent may not patch balloonspolicies/status" in caplog.text


def test_topology_export_is_rate_limited_and_skips_unchanged() -> None:
    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        agent = NodeAgent(cluster, node=NODE, kind=None, retry=FAST, topology_interval=0.2)
        state = {"n": 1}
        agent.attach_topology("balloons", lambda: zones(state["n"]))
        await agent.start()
        await until(lambda: NODE in cluster.topologies)
        written = cluster.topologies[NODE]
        assert written["zones"][0]["resources"][0] == {
            "name": "cpu",
            "capacity": "4",
            "allocatable": "3500m",
            "available": "1500m",
        }
        assert written["topologyPolicies"] == ["balloons"]
        assert written["metadata"]["ownerReferences"][0]["kind"] == "Node"
        start = asyncio.get_running_loop().time()
        for i in range(200):  # a storm of changes
            state["n"] = 2 + i % 3
            agent.topology_changed()
            await asyncio.sleep(0.002)
        elapsed = asyncio.get_running_loop().time() - start
        await settle(agent, cluster)
        writes = cluster.calls["patch noderesourcetopologies"]
        assert writes <= 2 + elapsed / 0.2
        assert len(cluster.topologies[NODE]["zones"]) == state["n"]
        before = cluster.calls["patch noderesourcetopologies"]
        agent.topology_changed()  # nothing changed: read, not written
        await settle(agent, cluster)
        assert cluster.calls["patch noderesourcetopologies"] == before
        await agent.stop()

    arun(scenario)


def test_topology_document_shape() -> None:
    doc = topology_document("n1", "topology-aware", zones(1))
    assert doc["apiVersion"] == "topology.node.k8s.io/v1alpha2"
    assert doc["kind"] == "NodeResourceTopology"
    assert doc["metadata"] == {"name": "n1"}
    assert doc["attributes"] == [{"name": "TopologyPolicy", "value": "topology-aware"}]
    assert doc["zones"][0] == {
        "name": "zone 0",
        "type": "numa node",
        "resources": [
            {"name": "cpu", "capacity": "4", "allocatable": "3500m", "available": "1500m"},
            {"name": "memory", "capacity": "10", "allocatable": "10", "available": "4"},
        ],
        "attributes": [{"name": "shared cpuset", "value": "0-3"}],
    }


def test_an_unexpected_error_while_following_is_retried_not_the_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A malformed answer (say, a watch line that is not JSON: lightkube raises ValueError)
    must not end the agent's following for the daemon's lifetime."""

    async def scenario() -> None:
        cluster = FakeCluster()
        cluster.add_node(NODE)
        agent, recorder = make(cluster)
        real_watch = cluster.watch_configs
        failures = [ValueError("Expecting value: line 1 column 1 (char 0)")]

        def watch(kind: str, namespace: str, version: str) -> Any:
            if failures:
                raise failures.pop()
            return real_watch(kind, namespace, version)

        cluster.watch_configs = watch  # type: ignore[method-assign]
        await agent.start()
        await until(lambda: not failures)
        cluster.apply_config(cr("default"))
        await until(lambda: recorder.names == ["default"])
        await agent.stop()

    with caplog.at_level(logging.INFO, "nrirp.agent"):
        arun(scenario, timeout=30)
    assert "task failed" not in caplog.text
    assert f"{KIND} resources in kube-system: unexpected error" in caplog.text
