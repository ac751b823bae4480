"""The recorder's bookkeeping and its Prometheus exposition: every family, parsed back with
prometheus-client's own parser."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from nrirp.adapters.metrics import Histogram, MetricsRecorder, system_samples
from nrirp.adapters.metrics.prometheus import ExportSettings, PolicyView, PrometheusExporter
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, LinuxResources, Requirements
from nrirp.domain.policy import MetricSample
from nrirp.domain.topology import Machine
from tests.domain.support import small_machine


@given(st.lists(st.floats(min_value=0, max_value=10, allow_nan=False), max_size=50))
def test_histogram_buckets_are_prometheus_le_buckets(values: list[float]) -> None:
    bounds = (0.001, 0.01, 0.1, 1.0)
    h = Histogram(bounds)
    for v in values:
        h.observe(v)
    snap = h.snapshot()
    assert snap.count == len(values)
    assert math.isclose(snap.total, sum(values), abs_tol=1e-9)
    for bound, cumulative in snap.cumulative():
        assert cumulative == sum(1 for v in values if v <= bound)


def _scrape(exporter: PrometheusExporter) -> dict[str, list[tuple[dict[str, str], float]]]:
    body, content_type = exporter.render()
    assert content_type.startswith("text/plain")
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def _value(
    scrape: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str
) -> float:
    [value] = [v for got, v in scrape[name] if all(got.get(k) == x for k, x in labels.items())]
    return value


def test_every_family_of_the_recorder_is_exposed() -> None:
    recorder = MetricsRecorder()
    recorder.observe_operation("create-container", 0.0003, True)
    recorder.observe_operation("create-container", 0.02, False)
    recorder.observe_decisions("create-container", 3)
    recorder.observe_refusal("create-container", "cpu")
    recorder.runtime_connected()
    recorder.runtime_synchronized()
    recorder.runtime_disconnected()
    recorder.runtime_connected()
    recorder.config_loaded(1)
    recorder.config_reloaded("invalid", 1)
    recorder.config_reloaded("applied", 2)
    recorder.state_written(0.004, True)
    recorder.state_written(0.2, False)
    sample = MetricSample(
        "nri_policy_topologyaware_zone_cpu_capacity", 4000.0, (("zone", "socket #0"),)
    )
    exporter = PrometheusExporter(
        recorder,
        lambda: PolicyView([sample], 1.0),
        lambda: True,
        ExportSettings(policy="topology-aware", version="9.9"),
    )
    scrape = _scrape(exporter)
    op = {"operation": "create-container"}
    assert _value(scrape, "nrirp_operation_duration_seconds_count", **op) == 2
    assert _value(scrape, "nrirp_operation_duration_seconds_bucket", le="0.0005", **op) == 1
    assert _value(scrape, "nrirp_operation_duration_seconds_bucket", le="+Inf", **op) == 2
    assert _value(scrape, "nrirp_operations_total", result="ok", **op) == 1
    assert _value(scrape, "nrirp_operations_total", result="failed", **op) == 1
    assert _value(scrape, "nrirp_decisions_total", **op) == 3
    assert _value(scrape, "nrirp_refusals_total", reason="cpu", **op) == 1
    assert _value(scrape, "nrirp_runtime_connected") == 1
    assert _value(scrape, "nrirp_runtime_connections_total") == 2
    assert _value(scrape, "nrirp_runtime_reconnects_total") == 1
    assert _value(scrape, "nrirp_runtime_synchronizations_total") == 1
    assert _value(scrape, "nrirp_ready") == 1
    assert _value(scrape, "nrirp_config_reloads_total", result="applied") == 1
    assert _value(scrape, "nrirp_config_reloads_total", result="invalid") == 1
    assert _value(scrape, "nrirp_config_reloads_total", result="refused") == 0
    assert _value(scrape, "nrirp_config_generation") == 2
    assert _value(scrape, "nrirp_state_writes_total", result="ok") == 1
    assert _value(scrape, "nrirp_state_writes_total", result="failed") == 1
    assert _value(scrape, "nrirp_state_write_duration_seconds_count") == 2
    assert _value(scrape, "nri_policy_topologyaware_zone_cpu_capacity", zone="socket #0") == 4000
    assert _value(scrape, "nrirp_build_info", version="9.9", policy="topology-aware") == 1
    assert "python_info" in scrape and "process_cpu_seconds_total" in scrape
    assert "nrirp_policy_samples_age_seconds" in scrape


def test_metric_groups_follow_metrics_enabled() -> None:
    recorder = MetricsRecorder()
    sample = MetricSample("nri_policy_balloons_cores", 2.0, (("balloon", "default[0]"),))
    exporter = PrometheusExporter(
        recorder, lambda: PolicyView([sample], 1.0), lambda: False, ExportSettings(enabled=())
    )
    scrape = _scrape(exporter)
    assert not any(n.startswith("nri_policy") or n == "nrirp_build_info" for n in scrape)
    assert _value(scrape, "nrirp_ready") == 0  # the daemon's own: always
    exporter.settings = ExportSettings(enabled=("pol*",))
    scrape = _scrape(exporter)
    assert _value(scrape, "nri_policy_balloons_cores", balloon="default[0]") == 2
    assert "nrirp_build_info" not in scrape


def test_samples_with_different_label_sets_share_a_family() -> None:
    samples = [
        MetricSample("nri_x", 1.0, (("a", "1"),)),
        MetricSample("nri_x", 2.0, (("b", "2"),)),
    ]
    exporter = PrometheusExporter(
        MetricsRecorder(), lambda: PolicyView(samples, 1.0), lambda: True, ExportSettings()
    )
    scrape = _scrape(exporter)
    assert sorted(scrape["nri_x"], key=lambda s: s[1]) == [
        ({"a": "1", "b": ""}, 1.0),
        ({"a": "", "b": "2"}, 2.0),
    ]


def _ctr(name: str, cpus: str, mems: str, cpu: int, memory: int) -> Container:
    return Container(
        id=name,
        pod_id="p",
        name=name,
        resources=LinuxResources(cpus=CPUSet.parse(cpus), mems=CPUSet.parse(mems)),
        requirements=Requirements(cpu_request=cpu, memory_request=memory),
    )


def test_system_gauges_spread_requests_over_cpusets_and_nodes() -> None:
    machine: Machine = small_machine()
    containers = [
        _ctr("a", "0-1", "0", 1000, 4 << 30),
        _ctr("b", "0-1", "0", 500, 1 << 30),
        _ctr("c", "2", "0", 250, 0),
        Container(id="d", pod_id="p", name="d"),  # no cpuset: counted nowhere
    ]
    samples = {(s.name, s.labels): s.value for s in system_samples(machine, containers)}
    cpu0 = (("cpu_id", "0"),)
    assert samples["nri_policy_cpu_allocation", cpu0] == 750
    assert samples["nri_policy_cpu_container_count", cpu0] == 2
    assert samples["nri_policy_cpu_allocation", (("cpu_id", "2"),)] == 250
    assert samples["nri_policy_cpu_container_count", (("cpu_id", "5"),)] == 0
    node0 = (("node_id", "0"),)
    assert samples["nri_policy_mem_node_usage", node0] == 5 << 30
    assert samples["nri_policy_mem_node_container_count", node0] == 3
    assert samples["nri_policy_mem_node_capacity", node0] == machine.nodes[0].memory_bytes
    assert len([n for n, _ in samples if n == "nri_policy_cpu_allocation"]) == len(machine.online)


def test_the_content_type_names_the_format_served() -> None:
    """The body is ``generate_latest``'s, with no content negotiation: the text format
    0.0.4. ``CONTENT_TYPE_LATEST`` (prometheus-client 0.26) says ``version=1.0.0``, which
    prometheus-client's own server sends only when the scraper asked for it, and then with
    an ``escaping`` parameter; to a request that negotiates nothing it answers 0.0.4."""
    exporter = PrometheusExporter(MetricsRecorder(), PolicyView, lambda: True, ExportSettings())
    assert exporter.render()[1] == "text/plain; version=0.0.4; charset=utf-8"
