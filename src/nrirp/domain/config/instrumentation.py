"""The ``instrumentation`` block: HTTP endpoint, metrics export, tracing and log export."""

from __future__ import annotations

import re
from collections.abc import Iterator

import attrs

from nrirp.domain.config.duration import Duration
from nrirp.domain.config.enums import LogExporter, MetricsExporter
from nrirp.domain.config.errors import Issue, quote
from nrirp.domain.config.keys import ref
from nrirp.domain.config.validation import at, check_range

DEFAULT_REPORT_PERIOD = Duration.parse("30s")
DEFAULT_ENABLED_METRICS = ("policy", "buildinfo")
_ENDPOINT = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]*):(?P<port>\d{1,5})")


@attrs.frozen(kw_only=True)
class MetricsConfig:
    """Metric groups to collect: ``enabled`` ones are exported, ``polled`` ones are collected
    periodically (every ``reportPeriod``) rather than on demand. Entries are names or globs."""

    enabled: tuple[str, ...] = attrs.field(default=DEFAULT_ENABLED_METRICS, metadata=ref("enabled"))
    polled: tuple[str, ...] = attrs.field(default=(), metadata=ref("polled"))


@attrs.frozen(kw_only=True)
class InstrumentationConfig:
    """``instrumentation``; an empty ``httpEndpoint`` disables the HTTP server."""

    http_endpoint: str = attrs.field(default="", metadata=ref("httpEndpoint"))
    prometheus_export: bool = attrs.field(default=False, metadata=ref("prometheusExport"))
    metrics_exporter: MetricsExporter | None = attrs.field(
        default=None, metadata=ref("metricsExporter")
    )
    report_period: Duration = attrs.field(
        default=DEFAULT_REPORT_PERIOD, metadata=ref("reportPeriod")
    )
    metrics: MetricsConfig = attrs.field(factory=MetricsConfig, metadata=ref("metrics"))
    sampling_rate_per_million: int = attrs.field(default=0, metadata=ref("samplingRatePerMillion"))
    tracing_collector: str = attrs.field(default="", metadata=ref("tracingCollector"))
    log_exporter: LogExporter | None = attrs.field(default=None, metadata=ref("logExporter"))
    log_export_period: Duration | None = attrs.field(default=None, metadata=ref("logExportPeriod"))

    def config_problems(self) -> Iterator[Issue]:
        if self.http_endpoint:
            match = _ENDPOINT.fullmatch(self.http_endpoint)
            if match is None or int(match["port"]) > 65535:
                yield at(
                    self,
                    "http_endpoint",
                    f"invalid value {quote(self.http_endpoint)}: expected '[host]:port'",
                )
        if self.report_period.nanoseconds <= 0:
            yield at(
                self, "report_period", f"invalid value '{self.report_period}': must be positive"
            )
        if self.log_export_period is not None and self.log_export_period.nanoseconds <= 0:
            yield at(
                self,
                "log_export_period",
                f"invalid value '{self.log_export_period}': must be positive",
            )
        yield from check_range(self, "sampling_rate_per_million", 0, 1_000_000)
