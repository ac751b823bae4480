"""The CRDs in deploy/crds: fresh from the config types, accepting the reference's example
resources and rejecting what the config loader rejects (strict field validation)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from nrirp.domain.config import ConfigError, load_policy_config
from tests.domain.config.documents import BALLOONS_SPEC, TOPOLOGY_AWARE_SPEC
from tests.support.openapi import validate

REPO = Path(__file__).resolve().parents[1]
CRDS = REPO / "deploy" / "crds"
POLICIES = {
    "TopologyAwarePolicy": "topology-aware",
    "BalloonsPolicy": "balloons",
    "TemplatePolicy": "template",
}

# the reference's Helm chart defaults (config: blocks of its values.yaml) and sample CRs
HELM_TOPOLOGY_AWARE = """
reservedResources: {cpu: 750m}
pinCPU: true
pinMemory: true
preferIsolatedCPUs: true
preferSharedCPUs: false
colocatePods: false
colocateNamespaces: false
log: {source: true, klog: {skip_headers: true}}
instrumentation: {reportPeriod: 60s, samplingRatePerMillion: 0}
"""
HELM_BALLOONS = """
reservedResources: {cpu: 750m}
pinCPU: true
pinMemory: true
allocatorTopologyBalancing: true
agent: {nodeResourceTopology: true}
balloonTypes:
  - name: default
    minCPUs: 1
    maxCPUs: 0
log: {source: true, klog: {skip_headers: true}}
instrumentation: {reportPeriod: 60s, samplingRatePerMillion: 0}
"""
HELM_TEMPLATE = """
reservedResources: {cpu: 750m}
log: {source: true, klog: {skip_headers: true}}
instrumentation: {reportPeriod: 60s, samplingRatePerMillion: 0}
"""

EXAMPLES = [
    ("TopologyAwarePolicy", TOPOLOGY_AWARE_SPEC),
    ("TopologyAwarePolicy", HELM_TOPOLOGY_AWARE),
    ("BalloonsPolicy", BALLOONS_SPEC),
    ("BalloonsPolicy", HELM_BALLOONS),
    ("TemplatePolicy", HELM_TEMPLATE),
]


def crd_schema(kind: str) -> dict[str, Any]:
    for path in CRDS.glob("config.nri_*.yaml"):
        doc = yaml.safe_load(path.read_text())
        if doc["spec"]["names"]["kind"] == kind:
            version = doc["spec"]["versions"][0]
            assert version["subresources"] == {"status": {}}
            schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]
            return schema
    raise AssertionError(f"no CRD for {kind}")


def resource(kind: str, spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "config.nri/v1alpha1",
        "kind": kind,
        "metadata": {"name": "default", "namespace": "kube-system"},
        "spec": spec,
        "status": {"nodes": {"n1": {"status": "Success", "generation": 3, "errors": []}}},
    }


def test_generated_crds_are_fresh() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tools" / "gen_crds.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    kustomization = yaml.safe_load((CRDS / "kustomization.yaml").read_text())
    assert sorted(kustomization["resources"]) == sorted(p.name for p in CRDS.glob("config.nri_*"))


@pytest.mark.parametrize(("kind", "spec"), EXAMPLES)
def test_reference_examples_are_accepted_by_both(kind: str, spec: str) -> None:
    data = yaml.safe_load(spec)
    assert validate(crd_schema(kind), resource(kind, data)) == []
    load_policy_config(POLICIES[kind], resource(kind, data))


BAD = [
    ("TopologyAwarePolicy", {"pinCPU": "yes"}, "spec.pinCPU"),
    ("TopologyAwarePolicy", {"reservedResources": {"cpu": "cpuset:zero"}}, "reservedResources.cpu"),
    ("TopologyAwarePolicy", {"reservedResources": {"cpu": "lots"}}, "reservedResources.cpu"),
    ("TopologyAwarePolicy", {"unlimitedBurstable": "rack"}, "spec.unlimitedBurstable"),
    ("TopologyAwarePolicy", {"bogus": 1}, "spec.bogus"),
    ("TopologyAwarePolicy", {"instrumentation": {"reportPeriod": "soon"}}, "reportPeriod"),
    ("TopologyAwarePolicy", {"agent": {"podResourceAPI": 1}}, "agent.podResourceAPI"),
    ("TopologyAwarePolicy", {"agent": {"nrt": True}}, "agent.nrt"),
    ("TopologyAwarePolicy", {"availableResources": {"memory": "12 apples"}}, "memory"),
    ("BalloonsPolicy", {"balloonTypes": {"name": "x"}}, "spec.balloonTypes"),
    ("BalloonsPolicy", {"balloonTypes": [{"name": "x", "minCPUs": "two"}]}, "minCPUs"),
    ("BalloonsPolicy", {"balloonTypes": [{"minCPUs": 1}]}, "name"),
    ("BalloonsPolicy", {"balloonTypes": [{"name": "x", "shareIdleCPUsInSame": "rack"}]}, "share"),
    ("BalloonsPolicy", {"idleCPUClass": ["a"]}, "spec.idleCPUClass"),
    ("TemplatePolicy", {"reservedResources": {"cpu": True}}, "reservedResources.cpu"),
]


@pytest.mark.parametrize(("kind", "extra", "where"), BAD)
def test_what_the_loader_refuses_the_schema_refuses(kind: str, extra: Any, where: str) -> None:
    spec = {"reservedResources": {"cpu": "750m"}, **extra}
    doc = resource(kind, spec)
    with pytest.raises(ConfigError):
        load_policy_config(POLICIES[kind], doc)
    errors = validate(crd_schema(kind), doc)
    assert errors, f"the CRD accepts {extra}"
    assert any(where in e for e in errors), errors


def test_status_schema() -> None:
    schema = crd_schema("BalloonsPolicy")
    good = resource("BalloonsPolicy", {"reservedResources": {"cpu": 1}})
    good["status"] = {
        "nodes": {
            "n1": {
                "status": "Failure",
                "generation": 2,
                "errors": ["spec.x: unknown field"],
                "timestamp": "2026-01-02T03:04:05Z",
            }
        }
    }
    assert validate(schema, good) == []
    good["status"]["nodes"]["n1"]["status"] = "Maybe"
    assert validate(schema, good)


def test_rbac_manifest_grants_what_the_agent_does() -> None:
    """Every request the agent makes (verb, resource) is granted by deploy/rbac-agent.yaml."""
    docs = list(yaml.safe_load_all((REPO / "deploy" / "rbac-agent.yaml").read_text()))
    granted = {
        (verb, resource)
        for role in docs
        if role["kind"] in ("Role", "ClusterRole")
        for rule in role["rules"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    needed = {("list", "nodes"), ("watch", "nodes"), ("patch", "noderesourcetopologies")}
    for plural in ("topologyawarepolicies", "balloonspolicies", "templatepolicies"):
        needed |= {("list", plural), ("watch", plural), ("patch", f"{plural}/status")}
    assert needed <= granted
