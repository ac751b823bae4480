"""The node agent through the real lightkube client over HTTP to an API server: the
wire-level fake (always) or a real kube-apiserver (KUBEBUILDER_ASSETS). Faults (410 Gone, a
restart, RBAC denial, the API server down at start, a missing CRD) on the fake."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.kubernetes import NodeAgent, Retry
from nrirp.adapters.kubernetes.lightkube_cluster import LightkubeCluster, client_config
from tests.adapters.kubernetes.agent_support import KIND, NODE, Recorder, cr, until, zones
from tests.support.aio import arun
from tests.support.kube_apiserver import CONFIG_KINDS, FakeApiServer, config_type

FAST = Retry(initial=0.05, maximum=0.2)


def agent_for(server: Any, tmp_path: Path, **kwargs: Any) -> tuple[NodeAgent, Recorder]:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    cluster = LightkubeCluster(client_config(str(kubeconfig)), timeout=5)
    agent = NodeAgent(cluster, node=NODE, kind=KIND, retry=FAST, topology_interval=0.05, **kwargs)
    recorder = Recorder()
    agent.on_config(recorder)
    return agent, recorder


def node_status(server: Any, name: str) -> dict[str, Any] | None:
    obj = server.config(KIND, name) or {}
    entry = ((obj.get("status") or {}).get("nodes") or {}).get(NODE)
    return entry if isinstance(entry, dict) else None


def test_configuration_status_and_topology_over_the_wire(apiserver: Any, tmp_path: Path) -> None:
    apiserver.add_node(NODE)
    apiserver.apply_config(cr("default"))

    async def scenario() -> None:
        agent, recorder = agent_for(apiserver, tmp_path)
        agent.attach_topology("balloons", lambda: zones(2))
        await agent.start()
        await until(lambda: (node_status(apiserver, "default") or {}).get("status") == "Success")
        assert node_status(apiserver, "default")["generation"] == 1  # type: ignore[index]
        await until(lambda: apiserver.topology(NODE) is not None)
        nrt = apiserver.topology(NODE)
        assert [z["name"] for z in nrt["zones"]] == ["zone 0", "zone 1"]
        assert nrt["zones"][1]["parent"] == "root"
        assert nrt["topologyPolicies"] == ["balloons"]

        # a node.<node> resource created later takes over; the old entry goes
        apiserver.apply_config(cr("node.worker-1", {"bad": True}))
        await until(lambda: node_status(apiserver, "node.worker-1") is not None)
        failed = node_status(apiserver, "node.worker-1")
        assert failed is not None and failed["status"] == "Failure"
        assert failed["errors"] == ["spec.bad: unknown field"]
        await until(lambda: node_status(apiserver, "default") is None)
        # fixed: Success with the new generation and no errors left
        apiserver.apply_config(cr("node.worker-1", {"reservedResources": {"cpu": 1}}))
        await until(
            lambda: (node_status(apiserver, "node.worker-1") or {}).get("status") == "Success"
        )
        fixed = node_status(apiserver, "node.worker-1")
        assert fixed is not None and fixed["generation"] == 2 and "errors" not in fixed
        assert recorder.names == ["default", "node.worker-1", "node.worker-1"]

        # the group label: group.<g> is less specific than node.<node>, so nothing changes
        apiserver.apply_config(cr("group.gpu"))
        apiserver.label_node(NODE, "config.nri/group", "gpu")
        apiserver.delete_config(KIND, "node.worker-1")
        await until(lambda: recorder.names[-1:] == ["group.gpu"])
        await until(lambda: (node_status(apiserver, "group.gpu") or {}).get("status") == "Success")
        await agent.stop()

    arun(scenario, timeout=60)


def test_watch_expiry_relists(fake_apiserver: FakeApiServer, tmp_path: Path) -> None:
    server = fake_apiserver
    server.add_node(NODE)
    server.apply_config(cr("default"))

    async def scenario() -> None:
        agent, recorder = agent_for(server, tmp_path)
        await agent.start()
        await until(lambda: recorder.names == ["default"])
        await asyncio.sleep(0.2)  # the watches are open
        server.compact()
        server.apply_config(cr("node.worker-1"))
        await until(lambda: recorder.names[-1:] == ["node.worker-1"])
        await until(lambda: agent.stats.relists >= 1)
        await agent.stop()

    arun(scenario, timeout=60)


def test_api_server_restart_and_down_at_start(
    fake_apiserver: FakeApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = fake_apiserver
    server.add_node(NODE)
    server.apply_config(cr("default"))
    server.stop()  # down when the agent starts

    async def scenario() -> None:
        agent, recorder = agent_for(server, tmp_path)
        agent.in_force_description = "the built-in defaults"
        await agent.start()
        await asyncio.sleep(0.5)
        assert recorder.names == []
        server.start()
        await until(lambda: recorder.names == ["default"])
        await until(lambda: node_status(server, "default") is not None)
        server.stop()  # a restart, with a change made meanwhile
        server.apply_config(cr("node.worker-1"))
        server.start()
        await until(lambda: recorder.names[-1:] == ["node.worker-1"])
        await until(lambda: node_status(server, "node.worker-1") is not None)
        assert node_status(server, "default") is None
        await agent.stop()

    with caplog.at_level(logging.INFO, "nrirp.agent"):
        arun(scenario, timeout=60)
    assert "cannot reach the API server (ConnectError" in caplog.text
    assert "the built-in defaults stays" in caplog.text


def test_rbac_denied_is_named_and_requests_go_on(
    fake_apiserver: FakeApiServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = fake_apiserver
    server.add_node(NODE)
    server.apply_config(cr("default"))
    server.forbid("watch", "balloonspolicies")
    server.forbid("patch", "noderesourcetopologies")

    async def scenario() -> None:
        agent, recorder = agent_for(server, tmp_path)
        agent.attach_topology("balloons", lambda: zones(1))
        await agent.start()
        await until(lambda: recorder.names == ["default"])  # listed, then the watch is denied
        await until(lambda: server.count("PATCH", "noderesourcetopologies") >= 2)
        assert server.topology(NODE) is None
        server.allow("patch", "noderesourcetopologies")
        await until(lambda: server.topology(NODE) is not None)
        await agent.stop()

    with caplog.at_level(logging.INFO, "nrirp.agent"):
        arun(scenario, timeout=60)
    assert "RBAC denied: the agent may not watch balloonspolicies" in caplog.text
    assert "RBAC denied: the agent may not patch noderesourcetopologies" in caplog.text


def test_missing_topology_crd_is_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    server = FakeApiServer(install_crds=False)
    server.install(config_type(CONFIG_KINDS[1]))
    server.start()
    server.add_node(NODE)

    async def scenario() -> None:
        agent, _ = agent_for(server, tmp_path)
        agent.attach_topology("balloons", lambda: zones(1))
        await agent.start()
        await until(lambda: server.count("PATCH", "noderesourcetopologies") >= 1)
        await asyncio.sleep(0.1)
        await agent.stop()

    try:
        with caplog.at_level(logging.INFO, "nrirp.agent"):
            arun(scenario, timeout=60)
    finally:
        server.stop()
    assert "is the NodeResourceTopology CRD installed?" in caplog.text


def test_missing_config_crd_is_said_not_taken_for_an_unreachable_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    server = FakeApiServer(install_crds=False).start()  # nodes only: no config.nri CRDs
    server.add_node(NODE)

    async def scenario() -> None:
        agent, _ = agent_for(server, tmp_path)
        await agent.start()
        await until(lambda: server.count("GET", "balloonspolicies") >= 1)
        await asyncio.sleep(0.1)
        await agent.stop()

    try:
        with caplog.at_level(logging.INFO, "nrirp.agent"):
            arun(scenario, timeout=60)
    finally:
        server.stop()
    assert (
        f"node agent: {KIND} resources in kube-system: 404 NotFound: the server could not find "
        f"the requested resource (is the {KIND} CRD installed? kubectl apply -k deploy/crds); "
        "the configuration in force stays"
    ) in caplog.text
    assert "cannot reach the API server" not in caplog.text
