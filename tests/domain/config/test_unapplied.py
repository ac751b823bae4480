"""Every set field that has no effect where it is loaded is named, with why; defaults and
fields that act are not."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from nrirp.domain.config import load_policy_config
from nrirp.domain.config.unapplied import DAEMON, Environment, unapplied_fields

RESERVED = {"reservedResources": {"cpu": "750m"}}
SIMULATOR = Environment(name="nrirp simulate")
AGENT_DAEMON = attrs.evolve(DAEMON, kubernetes_agent=True)


def paths(policy: str, spec: dict[str, Any], env: Environment = DAEMON) -> list[str]:
    config = load_policy_config(policy, {**RESERVED, **spec})
    return [f.path for f in unapplied_fields(config, env)]


@pytest.mark.parametrize("policy", ["topology-aware", "balloons"])
def test_the_defaults_warn_of_nothing(policy: str) -> None:
    assert paths(policy, {}) == []
    assert paths(policy, {}, SIMULATOR) == []
    assert paths("template", {}) == []


def test_host_control_warns_only_of_what_is_not_applied_here() -> None:
    spec = {
        "cpuClasses": [{"name": "fast", "minFreq": 3000000}],
        "controllableInterrupts": ["17"],
        "control": {
            "cpu": {"classes": {"slow": {"maxFreq": 1000000}}},
            "rdt": {"partitions": {"p": {"classes": {"gold": {}}}}},
            "blockio": {"classes": {"bulk": [{"Weight": 100}]}},
        },
    }
    config = load_policy_config("topology-aware", {**RESERVED, **spec})
    found = {f.path: f for f in unapplied_fields(config, DAEMON)}
    # CPU classes and interrupts are applied by the host enforcer (which says what a host
    # lacks); RDT only once enabled; block I/O device parameters are the runtime's
    assert list(found) == ["control.rdt.partitions", "control.blockio.classes"]
    assert str(found["control.rdt.partitions"]) == (
        "control.rdt.partitions: gold: control.rdt is not enabled: no resctrl group is made "
        "(class names still reach the runtime through NRI)"
    )
    enabled = load_policy_config(
        "topology-aware",
        {**RESERVED, "control": {"rdt": {"enable": True, "partitions": {"p": {}}}}},
    )
    assert unapplied_fields(enabled, DAEMON) == []


def test_instrumentation_fields_nothing_implements_are_named() -> None:
    spec = {
        "instrumentation": {
            "httpEndpoint": ":8891",
            "prometheusExport": True,
            "metricsExporter": "otlp-grpc",
            "tracingCollector": "http://jaeger:14268",
            "samplingRatePerMillion": 1000,
            "logExporter": "otlp-http",
            "logExportPeriod": "10s",
            "metrics": {"enabled": ["policy", "l3*"], "polled": ["buildinfo"]},
        }
    }
    assert paths("balloons", spec) == [
        "instrumentation.metrics.enabled",  # l3*: the reference's RDT group, none here
        "instrumentation.metricsExporter",
        "instrumentation.tracingCollector",
        "instrumentation.samplingRatePerMillion",
        "instrumentation.logExporter",
        "instrumentation.logExportPeriod",
    ]


def test_prometheus_export_without_an_endpoint_serves_nothing_and_says_so() -> None:
    config = load_policy_config(
        "balloons", {**RESERVED, "instrumentation": {"prometheusExport": True}}
    )
    [field] = unapplied_fields(config, DAEMON)
    assert field.path == "instrumentation.prometheusExport"
    assert "httpEndpoint is empty" in field.why
    # nrirp run --http-endpoint serves one all the same: the export acts there
    assert unapplied_fields(config, attrs.evolve(DAEMON, default_http_endpoint=True)) == []


def test_outside_the_daemon_the_server_and_log_settings_are_not_applied() -> None:
    spec = {
        "instrumentation": {
            "httpEndpoint": ":8891",
            "prometheusExport": True,
            "reportPeriod": "5s",
        },
        "log": {"debug": ["policy"], "source": True, "klog": {"v": 4, "skip_headers": True}},
        "agent": {"podResourceAPI": True},
    }
    assert paths("topology-aware", spec, SIMULATOR) == [
        "log.debug",
        "log.source",
        "log.klog",
        "instrumentation.httpEndpoint",
        "instrumentation.prometheusExport",
        "instrumentation.reportPeriod",
        "agent.podResourceAPI",
    ]
    # the daemon applies the server and log settings and asks the kubelet for pod
    # resources with or without the agent; klog is the Go reference's
    assert paths("topology-aware", spec) == ["log.klog"]
    assert paths("topology-aware", spec, AGENT_DAEMON) == ["log.klog"]


@pytest.mark.parametrize("value", [True, False])
def test_node_resource_topology_given_without_the_agent_is_named(value: bool) -> None:
    spec = {"agent": {"nodeResourceTopology": value}}
    config = load_policy_config("balloons", {**RESERVED, **spec})
    assert config.agent.exports_topology is value
    [field] = unapplied_fields(config, DAEMON)
    assert (field.path, field.value) == ("agent.nodeResourceTopology", str(value).lower())
    assert "runs no Kubernetes agent" in field.why
    assert paths("balloons", spec, SIMULATOR) == ["agent.nodeResourceTopology"]
    assert paths("balloons", spec, AGENT_DAEMON) == []


def test_node_resource_topology_not_given_exports_and_warns_of_nothing() -> None:
    config = load_policy_config("balloons", {**RESERVED, "agent": {"podResourceAPI": False}})
    assert config.agent.node_resource_topology is None and config.agent.exports_topology
    assert unapplied_fields(config, DAEMON) == []
