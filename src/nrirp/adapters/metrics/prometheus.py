"""Prometheus exposition of what the :class:`MetricsRecorder` recorded, the policy's samples and
the reference's system gauges, with prometheus-client.

This module imports ``prometheus_client``: import it only when metrics are exported (the daemon
does so when ``instrumentation.prometheusExport`` is set), so that starting without export
costs nothing. Everything here runs on the exporter's thread, at scrape time.

Families:

* the policy's samples (``nri_policy_topologyaware_zone_*``, ``nri_policy_balloons_cores``,
  ...) and ``nri_policy_cpu_*`` / ``nri_policy_mem_node_*``: group ``policy``;
* ``nrirp_build_info`` and ``python_info``: group ``buildinfo``;
* the daemon's own, always: ``nrirp_operation_duration_seconds`` (histogram per operation),
  ``nrirp_operations_total`` (operation, result), ``nrirp_decisions_total`` (operation),
  ``nrirp_refusals_total`` (operation, reason), ``nrirp_runtime_connected``,
  ``nrirp_runtime_connections_total``, ``nrirp_runtime_reconnects_total``,
  ``nrirp_runtime_synchronizations_total``, ``nrirp_ready``, ``nrirp_config_reloads_total``
  (result), ``nrirp_config_generation``, ``nrirp_state_writes_total`` (result),
  ``nrirp_state_write_duration_seconds``, ``nrirp_policy_samples_age_seconds``, and the
  process collector's ``process_*``.
"""

from __future__ import annotations

import fnmatch
import math
import platform
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

import attrs
from prometheus_client import generate_latest
from prometheus_client.core import (
    CollectorRegistry,
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from nrirp.adapters.metrics.histogram import HistogramSnapshot
from nrirp.adapters.metrics.recorder import MetricsRecorder, RecorderSnapshot
from nrirp.domain.policy import MetricSample

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
"""What ``generate_latest`` writes. Not ``CONTENT_TYPE_LATEST``: in prometheus-client 0.26 (the
image's) that says ``version=1.0.0``, which its own server sends only to a scraper that asked
for it (with an ``escaping`` parameter). A literal, whatever constants a supported release
(>= 0.20) has."""


@attrs.frozen(kw_only=True)
class ExportSettings:
    """What to export: ``enabled`` metric groups (glob patterns, as
    ``instrumentation.metrics.enabled``), and the build's identity."""

    enabled: tuple[str, ...] = ("policy", "buildinfo")
    policy: str = ""
    version: str = ""

    def exports(self, group: str) -> bool:
        return any(fnmatch.fnmatchcase(group, pattern) for pattern in self.enabled)


@attrs.frozen
class PolicyView:
    """The policy's samples and the system gauges, as last taken from the pipeline."""

    samples: Sequence[MetricSample] = ()
    taken_at: float = 0.0  # time.monotonic(); 0: never


class PrometheusExporter:
    """A prometheus-client collector over a recorder and a source of :class:`PolicyView`
    (``policy_view``: called at every scrape; it may return a cached view)."""

    def __init__(
        self,
        recorder: MetricsRecorder,
        policy_view: Callable[[], PolicyView],
        ready: Callable[[], bool],
        settings: ExportSettings,
    ) -> None:
        self._recorder = recorder
        self._policy_view = policy_view
        self._ready = ready
        self.settings = settings
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(self)
        ProcessCollector(registry=self.registry)
        self._platform = PlatformCollector(registry=None)

    def render(self) -> tuple[bytes, str]:
        """The text exposition and its content type (the text format 0.0.4, whatever the
        scraper accepts)."""
        return generate_latest(self.registry), CONTENT_TYPE

    # ------------------------------------------------------------------ the collector
    def collect(self) -> Iterator[Metric]:
        settings = self.settings
        if settings.exports("policy"):
            view = self._policy_view()
            yield from _sample_families(view.samples)
            age = time.monotonic() - view.taken_at if view.taken_at else math.nan
            yield _gauge(
                "nrirp_policy_samples_age_seconds",
                "Seconds since the policy's samples were taken from the pipeline",
                age,
            )
        if settings.exports("buildinfo"):
            info = GaugeMetricFamily(
                "nrirp_build_info",
                "nrirp's version, the Python running it and the policy (always 1)",
                labels=["version", "python_version", "policy"],
            )
            info.add_metric([settings.version, platform.python_version(), settings.policy], 1)
            yield info
            yield from self._platform.collect()
        yield from _own_families(self._recorder.snapshot(), self._ready())


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def _counter(name: str, documentation: str, value: float) -> CounterMetricFamily:
    return CounterMetricFamily(name, documentation, value=value)


def _histogram(
    name: str, documentation: str, label: str, values: Iterable[tuple[str, HistogramSnapshot]]
) -> HistogramMetricFamily:
    family = HistogramMetricFamily(name, documentation, labels=[label] if label else None)
    for key, snapshot in values:
        buckets = [(_le(bound), float(count)) for bound, count in snapshot.cumulative()]
        family.add_metric([key] if label else [], buckets, snapshot.total)
    return family


def _le(bound: float) -> str:
    return "+Inf" if math.isinf(bound) else repr(bound)


def _own_families(snap: RecorderSnapshot, ready: bool) -> Iterator[Metric]:
    yield _histogram(
        "nrirp_operation_duration_seconds",
        "Time the pipeline took for an operation (NRI request or event), by operation",
        "operation",
        sorted(snap.operations.items()),
    )
    outcomes = CounterMetricFamily(
        "nrirp_operations",
        "Pipeline operations by operation and result (ok, failed)",
        labels=["operation", "result"],
    )
    for (operation, ok), count in sorted(snap.outcomes.items()):
        outcomes.add_metric([operation, "ok" if ok else "failed"], count)
    yield outcomes
    decisions = CounterMetricFamily(
        "nrirp_decisions",
        "Containers whose resources were decided, by operation",
        labels=["operation"],
    )
    for operation, count in sorted(snap.decisions.items()):
        decisions.add_metric([operation], count)
    yield decisions
    refusals = CounterMetricFamily(
        "nrirp_refusals",
        "Refused operations by operation and reason class (cpu, memory, policy, internal, ...)",
        labels=["operation", "reason"],
    )
    for (operation, reason), count in sorted(snap.refusals.items()):
        refusals.add_metric([operation, reason], count)
    yield refusals
    yield _gauge(
        "nrirp_runtime_connected",
        "1 while a connection to the runtime is registered",
        1 if snap.runtime_connected else 0,
    )
    yield _counter(
        "nrirp_runtime_connections",
        "Connections registered with the runtime",
        snap.runtime_connections,
    )
    yield _counter(
        "nrirp_runtime_reconnects",
        "Connections registered after the first",
        max(snap.runtime_connections - 1, 0),
    )
    yield _counter(
        "nrirp_runtime_synchronizations",
        "Synchronizations with the runtime",
        snap.runtime_synchronizations,
    )
    yield _gauge("nrirp_ready", "1 while the daemon is ready (as /readyz)", 1 if ready else 0)
    reloads = CounterMetricFamily(
        "nrirp_config_reloads",
        "Configuration reloads by result (applied, invalid, refused, failed)",
        labels=["result"],
    )
    for result, count in sorted(snap.reloads.items()):
        reloads.add_metric([result], count)
    yield reloads
    yield _gauge(
        "nrirp_config_generation",
        "Generation of the configuration in force (1 at start, +1 per applied reload)",
        snap.config_generation,
    )
    writes = CounterMetricFamily(
        "nrirp_state_writes", "State file writes by result (ok, failed)", labels=["result"]
    )
    for ok, count in sorted(snap.state_writes.items(), reverse=True):
        writes.add_metric(["ok" if ok else "failed"], count)
    yield writes
    yield _histogram(
        "nrirp_state_write_duration_seconds",
        "Time to write the state file (encode, write, fsync, rename)",
        "",
        [("", snap.state_write_seconds)],
    )


def _sample_families(samples: Sequence[MetricSample]) -> Iterator[Metric]:
    """One gauge family per sample name; label names are the union over its samples (a
    sample without one of them gets an empty value)."""
    by_name: dict[str, list[MetricSample]] = {}
    for sample in samples:
        by_name.setdefault(sample.name, []).append(sample)
    for name, group in by_name.items():
        labels: dict[str, None] = {}
        for sample in group:
            labels.update(dict.fromkeys(key for key, _ in sample.labels))
        names = list(labels)
        documentation = next((s.help for s in group if s.help), name.replace("_", " "))
        family = GaugeMetricFamily(name, documentation, labels=names)
        for sample in group:
            values = dict(sample.labels)
            family.add_metric([values.get(key, "") for key in names], sample.value)
        yield family
