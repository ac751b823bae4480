"""What a configuration asks for that the environment running it does not do.

Every field is parsed and validated, but not every field acts everywhere: RDT partitions of a
``control.rdt`` that is not enabled, the device parameters of block I/O classes (the runtime
applies a class with its own configuration); tracing, OTLP metrics and log export are not
implemented; the HTTP server and the Kubernetes agent exist only in some environments.
:func:`unapplied_fields` lists each such field that is set (differs from its default), with
the reason, so that the caller can warn at load: no field is silently ignored. What of the
CPU classes, interrupt rules and RDT a host cannot apply (missing or read-only interfaces) is
said by the resource manager's host enforcer once it has looked at the host.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from typing import Any

import attrs

from nrirp.domain.config.agent import AgentConfig
from nrirp.domain.config.enums import MetricsExporter
from nrirp.domain.config.instrumentation import DEFAULT_REPORT_PERIOD, MetricsConfig
from nrirp.domain.config.log import KlogConfig

METRIC_GROUPS = ("policy", "buildinfo")
"""The metric groups ``instrumentation.metrics.enabled`` and ``polled`` select from (the
reference's); the daemon's own ``nrirp_*`` metrics are always exported."""


@attrs.frozen(kw_only=True)
class Environment:
    """What the environment loading a configuration acts on.

    ``http_server``: ``instrumentation.httpEndpoint``, ``prometheusExport``, ``metrics``,
    ``reportPeriod`` (the daemon). ``log_settings``: ``log.debug`` and ``log.source``.
    ``kubernetes_agent``: ``agent.nodeResourceTopology`` (the node agent exports it).
    ``pod_resources``: ``agent.podResourceAPI`` (the daemon's topology hints ask the kubelet,
    with or without the agent). ``default_http_endpoint``: an endpoint is served when the
    configuration names none (``nrirp run --http-endpoint``), so its metrics export acts."""

    name: str
    http_server: bool = False
    log_settings: bool = False
    kubernetes_agent: bool = False
    pod_resources: bool = False
    default_http_endpoint: bool = False


DAEMON = Environment(name="nrirp run", http_server=True, log_settings=True, pod_resources=True)
"""The daemon without the Kubernetes agent."""


@attrs.frozen
class UnappliedField:
    """A set field that has no effect here: its document ``path``, its ``value`` as text and
    ``why``."""

    path: str
    value: str
    why: str

    def __str__(self) -> str:
        return f"{self.path}: {self.value}: {self.why}"


def unapplied_fields(config: Any, environment: Environment) -> list[UnappliedField]:
    """Every field of ``config`` (a :class:`~nrirp.domain.config.PolicyConfig`) that is set
    and has no effect in ``environment``, in document order."""
    return list(_unapplied(config, environment))


def _unapplied(config: Any, env: Environment) -> Iterator[UnappliedField]:
    yield from _control(config.control)
    yield from _log(config.log, env)
    yield from _instrumentation(config.instrumentation, env)
    yield from _agent(config.agent, env)


def _control(control: Any) -> Iterator[UnappliedField]:
    rdt = control.rdt
    if not rdt.enable and rdt.partitions:
        yield UnappliedField(
            "control.rdt.partitions",
            ", ".join(rdt.class_names()) or "no classes",
            "control.rdt is not enabled: no resctrl group is made (class names still reach "
            "the runtime through NRI)",
        )
    if control.blockio.classes:
        yield UnappliedField(
            "control.blockio.classes",
            ", ".join(control.blockio.classes),
            "the class name reaches the runtime through NRI, as in the reference; the runtime "
            "applies it with its own block I/O configuration (containerd: blockio_config_file), "
            "not with these device parameters",
        )


def _log(log: Any, env: Environment) -> Iterator[UnappliedField]:
    if not env.log_settings:
        why = f"log settings are not applied by {env.name} (its caller configures logging)"
        if log.debug:
            yield UnappliedField("log.debug", ", ".join(log.debug), why)
        if log.source:
            yield UnappliedField("log.source", "true", why)
    if log.klog != KlogConfig():
        set_options = [
            f.name for f in attrs.fields(KlogConfig) if getattr(log.klog, f.name) is not None
        ]
        yield UnappliedField(
            "log.klog",
            ", ".join(set_options),
            "klog options configure the Go reference's logging; nrirp logs through Python "
            "logging (--log-level, --log-format, log.debug)",
        )


def _instrumentation(inst: Any, env: Environment) -> Iterator[UnappliedField]:
    exporter = inst.metrics_exporter
    if not env.http_server:
        why = f"{env.name} serves no HTTP endpoint: only the daemon (nrirp run) does"
        if inst.http_endpoint:
            yield UnappliedField("instrumentation.httpEndpoint", inst.http_endpoint, why)
        if inst.prometheus_export:
            yield UnappliedField("instrumentation.prometheusExport", "true", why)
        if exporter is MetricsExporter.PROMETHEUS:
            yield UnappliedField("instrumentation.metricsExporter", exporter.value, why)
        if inst.report_period != DEFAULT_REPORT_PERIOD:
            yield UnappliedField("instrumentation.reportPeriod", str(inst.report_period), why)
        if inst.metrics != MetricsConfig():
            yield UnappliedField("instrumentation.metrics", _groups(inst.metrics), why)
    else:
        exports = inst.prometheus_export or exporter is MetricsExporter.PROMETHEUS
        if exports and not inst.http_endpoint and not env.default_http_endpoint:
            yield UnappliedField(
                "instrumentation.prometheusExport",
                "true",
                "no metrics are served: httpEndpoint is empty (set it, e.g. ':8891')",
            )
        for key in ("enabled", "polled"):
            for pattern in getattr(inst.metrics, key):
                if not any(fnmatch.fnmatchcase(g, pattern) for g in METRIC_GROUPS):
                    yield UnappliedField(
                        f"instrumentation.metrics.{key}",
                        pattern,
                        f"matches no metric group (groups: {', '.join(METRIC_GROUPS)})",
                    )
    if exporter in (MetricsExporter.OTLP_HTTP, MetricsExporter.OTLP_GRPC):
        yield UnappliedField(
            "instrumentation.metricsExporter",
            exporter.value,
            "OTLP metric export is not implemented; metrics are served for Prometheus "
            "(prometheusExport on httpEndpoint)",
        )
    if inst.tracing_collector:
        yield UnappliedField(
            "instrumentation.tracingCollector",
            inst.tracing_collector,
            "tracing is not implemented: no spans are recorded or exported",
        )
    if inst.sampling_rate_per_million:
        yield UnappliedField(
            "instrumentation.samplingRatePerMillion",
            str(inst.sampling_rate_per_million),
            "tracing is not implemented: no spans are recorded or exported",
        )
    if inst.log_exporter is not None:
        yield UnappliedField(
            "instrumentation.logExporter",
            inst.log_exporter.value,
            "OpenTelemetry log export is not implemented: logs go to stderr",
        )
    if inst.log_export_period is not None:
        yield UnappliedField(
            "instrumentation.logExportPeriod",
            str(inst.log_export_period),
            "OpenTelemetry log export is not implemented: logs go to stderr",
        )


def _groups(metrics: MetricsConfig) -> str:
    return f"enabled [{', '.join(metrics.enabled)}], polled [{', '.join(metrics.polled)}]"


def _agent(agent: Any, env: Environment) -> Iterator[UnappliedField]:
    if not env.kubernetes_agent and agent.node_resource_topology is not None:
        yield UnappliedField(
            "agent.nodeResourceTopology",
            str(agent.node_resource_topology).lower(),
            f"{env.name} runs no Kubernetes agent: no NodeResourceTopology is exported "
            "(the agent runs with a node name and API access, without --disable-agent)",
        )
    if not env.pod_resources and agent.pod_resource_api != AgentConfig().pod_resource_api:
        yield UnappliedField(
            "agent.podResourceAPI",
            str(agent.pod_resource_api).lower(),
            f"{env.name} does not ask the kubelet's pod-resources API for topology hints",
        )
