"""Tests of the node-pin policy with the test kit (``docs/policy-authoring.md``, step 4).

Run them with ``pytest examples/policy_authoring``: the fixtures ``nrirp_engine`` and
``nrirp_kit`` come from nrirp's pytest plugin, installed with the package.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from nrirp.domain.config import ConfigError
from nrirp.testing import (
    EngineHarness,
    assert_disjoint,
    assert_on_one_node,
    besteffort,
    burstable,
    guaranteed,
    pod,
)

HERE = Path(__file__).parent
MODULE = [str(HERE / "node_pin.py")]

Build = Callable[..., EngineHarness]


def node_pin(
    nrirp_engine: Build, config: str | None = None, machine: str = "box-16"
) -> EngineHarness:
    return nrirp_engine("node-pin", machine=machine, config=config, policy_modules=MODULE)


def test_every_container_runs_on_one_node(nrirp_engine: Build) -> None:
    engine = node_pin(nrirp_engine)
    web = engine.run(pod("web", burstable("nginx", "500m", "256Mi"), besteffort("log")))
    db = engine.run(pod("db", guaranteed("pg", 2, "4Gi")))
    for container in (web["nginx"], web["log"], db["pg"]):
        assert_on_one_node(engine, container)  # CPUs and memory


def test_containers_spread_by_requested_cpu(nrirp_engine: Build) -> None:
    engine = node_pin(nrirp_engine)  # box-16: nodes 0-3, four CPUs each
    big = engine.run(pod("big", guaranteed("app", 3, "1Gi")))
    small = [engine.run(pod(f"s{i}", burstable("app", "100m"))) for i in range(4)]
    nodes = [assert_on_one_node(engine, p["app"]) for p in small]
    assert nodes == [1, 2, 3, 1]  # node 0 carries 3 CPUs; then the lightest, lowest first
    assert_disjoint(engine, big["app"], small[0]["app"])


def test_system_namespaces_go_to_the_system_node(nrirp_engine: Build) -> None:
    engine = node_pin(nrirp_engine, "systemNode: 3\nsystemNamespaces: [kube-system, monitoring]\n")
    dns = engine.run(pod("dns", burstable("coredns", "100m"), namespace="kube-system"))
    agent = engine.run(pod("agent", besteffort("exporter"), namespace="monitoring"))
    assert assert_on_one_node(engine, dns["coredns"]) == 3
    assert assert_on_one_node(engine, agent["exporter"]) == 3


def test_only_allowed_nodes_are_used(nrirp_engine: Build) -> None:
    engine = node_pin(nrirp_engine, "nodes: 2-3\n", machine="server-4s-144")
    placed = [engine.run(pod(f"p{i}", burstable("c", "1"))) for i in range(4)]
    assert [assert_on_one_node(engine, p["c"]) for p in placed] == [2, 3, 2, 3]


def test_a_bad_configuration_is_refused_with_its_path(nrirp_engine: Build) -> None:
    with pytest.raises(ConfigError, match=r"systemNod: unknown field"):
        node_pin(nrirp_engine, "systemNod: 1\n")
    engine = node_pin(nrirp_engine)
    outcome = engine.reconfigure("nodes: 5-6\n")  # box-16 has nodes 0-3
    assert not outcome.applied and "the nodes with CPUs are 0-3" in outcome.reason


def test_reconfiguring_moves_containers_off_removed_nodes(nrirp_engine: Build) -> None:
    engine = node_pin(nrirp_engine)
    placed = [engine.run(pod(f"p{i}", burstable("c", "500m"))) for i in range(4)]
    assert engine.reconfigure("nodes: 0-1\n").applied
    assert [assert_on_one_node(engine, p["c"]) for p in placed] == [0, 1, 0, 1]


def test_the_placement_survives_a_restart(nrirp_engine: Build) -> None:
    engine = node_pin(nrirp_engine)
    for i in range(3):
        engine.run(pod(f"p{i}", burstable("c", "500m")))
    before = engine.placement()
    assert engine.restart().placement() == before
