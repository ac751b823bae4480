"""``nrirp run``'s endpoints as a process against a scripted NRI runtime: /healthz, /readyz
(ready only once registered and synchronized, not while the connection is down), /metrics
(every family of the daemon, the policy's and the system gauges), /status and the status
socket with ``nrirp status``, the configuration's warnings and reloads."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import types
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from nrirp.adapters.nri.gen import api_pb2
from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.test_run import REPO, Daemon, create, ctr, pod, sysfs, with_runtime

__all__ = ["sysfs"]  # the fixture

CONFIG = """
reservedResources: {cpu: 1000m}
instrumentation:
  httpEndpoint: 127.0.0.1:0
  prometheusExport: true
  tracingCollector: http://collector:4318
"""


def get(port: int, path: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


async def aget(port: int, path: str) -> tuple[int, str]:
    return await asyncio.to_thread(get, port, path)


async def until(port: int, path: str, status: int, timeout: float = 10.0) -> str:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        got, body = await aget(port, path)
        if got == status:
            return body
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{path}: {got} {body!r}, expected {status}")
        await asyncio.sleep(0.05)


def scrape(body: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(body):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return out


def value(
    metrics: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str
) -> float:
    [found] = [v for got, v in metrics[name] if all(got.get(k) == x for k, x in labels.items())]
    return found


def status(state_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "nrirp", "status", "--state-dir", str(state_dir), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False)


def test_health_metrics_and_status_of_a_running_daemon(tmp_path: Path, sysfs: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    p = pod()

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(
            tmp_path, sysfs, "--config-file", str(config), "--config-poll-interval", "0",
            policy="topology-aware",
        )  # fmt: skip
        try:
            serving = await daemon.wait_for("^serving /healthz")
            port = serving["port"]
            warning = await daemon.wait_for("tracingCollector")
            assert warning["level"] == "warning" and warning["field"] == (
                "instrumentation.tracingCollector"
            )
            # alive at once; not ready before the runtime has registered and synchronized it
            assert await aget(port, "/healthz") == (200, "ok\n")
            peer = await server.next_peer(timeout=20)
            await asyncio.wait_for(peer.registration, 10)
            got, text = await aget(port, "/readyz")
            assert got == 503 and "runtime: not connected" in text
            await peer.configure(runtime_version="v1.7.24")
            text = await until(port, "/readyz", 503)
            assert "not synchronized" in text or "not connected" in text
            await peer.synchronize()
            assert (await until(port, "/readyz", 200)).startswith("ok\n")

            await peer.call(
                "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
            )
            app = ctr("app")
            app.linux.resources.cpu.shares.value = 2048
            app.linux.resources.cpu.quota.value = 200000
            app.linux.resources.cpu.period.value = 100000
            app.linux.resources.memory.limit.value = 1 << 30
            reply = await create(peer, p, app)
            cpus = reply.adjust.linux.resources.cpu.cpus
            assert cpus

            got, text = await aget(port, "/metrics")
            assert got == 200
            metrics = scrape(text)
            op = {"operation": "create-container"}
            assert value(metrics, "nrirp_operation_duration_seconds_count", **op) == 1
            assert value(metrics, "nrirp_operations_total", result="ok", **op) == 1
            assert value(metrics, "nrirp_decisions_total", **op) >= 1
            assert value(metrics, "nrirp_runtime_connected") == 1
            assert value(metrics, "nrirp_runtime_synchronizations_total") == 1
            assert value(metrics, "nrirp_ready") == 1
            assert value(metrics, "nrirp_config_generation") == 1
            assert value(metrics, "nrirp_build_info", policy="topology-aware") == 1
            assert value(metrics, "nrirp_state_writes_total", result="ok") >= 1
            zone = [
                labels["zone"]
                for labels, _ in metrics["nri_policy_topologyaware_zone_cpu_capacity"]
            ]
            assert zone  # a sample per pool
            assert sum(v for _, v in metrics["nri_policy_topologyaware_zone_container_count"]) >= 1
            assert sum(v for _, v in metrics["nri_policy_cpu_container_count"]) >= 2
            for name in (
                "nri_policy_mem_node_capacity",
                "nri_policy_mem_node_usage",
                "nri_policy_mem_node_container_count",
                "nri_policy_cpu_allocation",
                "process_resident_memory_bytes",
                "python_info",
            ):
                assert name in metrics, name

            # the status socket (0600) and the HTTP /status give the same report
            socket_path = daemon.state_dir / "status.sock"
            assert socket_path.stat().st_mode & 0o777 == 0o600
            shown = await asyncio.to_thread(status, daemon.state_dir)
            assert shown.returncode == 0, shown.stderr
            assert "policy:     topology-aware" in shown.stdout
            assert f"config:     file {config}, generation 1" in shown.stdout
            assert "ready:      yes" in shown.stdout
            row = next(line for line in shown.stdout.splitlines() if " app " in line)
            assert "prod" in row and "web" in row and cpus in row
            report = json.loads(
                (await asyncio.to_thread(status, daemon.state_dir, "--json")).stdout
            )
            [entry] = report["containers"]
            assert (entry["name"], entry["cpus"]) == ("app", cpus)
            assert entry["reason"] and entry["operation"] == "create-container"
            assert report["groups_kind"] == "pools" and report["groups"][0]["cpus"]
            got, text = await aget(port, "/status")
            assert got == 200 and json.loads(text)["containers"][0]["id"] == entry["id"]

            # a bad reload keeps generation 1 and is counted; a good one without export
            # takes /metrics away and makes generation 2
            config.write_text(CONFIG + "bogus: 1\n")
            daemon.proc.send_signal(signal.SIGHUP)
            await daemon.wait_for(r"reload \(SIGHUP\): new configuration .* not applied")
            metrics = scrape((await aget(port, "/metrics"))[1])
            assert value(metrics, "nrirp_config_reloads_total", result="invalid") == 1
            config.write_text(CONFIG.replace("prometheusExport: true", "prometheusExport: false"))
            daemon.proc.send_signal(signal.SIGHUP)
            await daemon.wait_for(r"reload \(SIGHUP\): configuration .* applied")
            assert (await aget(port, "/metrics"))[0] == 404
            report = json.loads(
                (await asyncio.to_thread(status, daemon.state_dir, "--json")).stdout
            )
            assert report["config"]["generation"] == 2
            assert report["config"]["last_reload"]["result"] == "applied"

            # the connection drops: not ready; the daemon redials and is ready once synchronized
            peer.close()
            text = await until(port, "/readyz", 503)
            assert "runtime: not connected" in text
            shown = await asyncio.to_thread(status, daemon.state_dir)
            assert shown.returncode == 3 and "ready:      no" in shown.stdout
            again = await server.next_peer(timeout=20)
            await again.handshake(runtime_version="v1.7.24")
            await until(port, "/readyz", 200)
            report = json.loads(
                (await asyncio.to_thread(status, daemon.state_dir, "--json")).stdout
            )
            assert report["runtime"]["connections"] == 2

            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
            assert not socket_path.exists()
        finally:
            daemon.kill()

    with_runtime(tmp_path, body)


def test_status_without_a_daemon_says_so(tmp_path: Path) -> None:
    shown = status(tmp_path)
    assert shown.returncode == 1
    assert f"no answer from {tmp_path}/status.sock" in shown.stderr


def test_prometheus_client_and_http_server_are_imported_only_when_used() -> None:
    """Start-up does not grow: ``prometheus_client`` only with prometheusExport, ``http.server``
    only with an endpoint."""
    code = """
import sys, types
from nrirp.adapters.metrics import MetricsRecorder
from nrirp.app.daemon.health import RuntimeConnection
from nrirp.app.daemon.observability import Observability
from nrirp.app.daemon.status import ConfigState
from nrirp.domain.config import load_policy_config
import nrirp.app.commands.run, nrirp.app.daemon

def loaded():
    return ["prometheus_client" in sys.modules, "http.server" in sys.modules]

manager = types.SimpleNamespace(policy=types.SimpleNamespace(name="template"), started=True)
obs = Observability(manager=manager, recorder=MetricsRecorder(), serving=RuntimeConnection(),
                    decisions=None, config_state=ConfigState(), plugin_name="x", state_dir="/")
steps = [loaded()]
for block in ({}, {"httpEndpoint": "127.0.0.1:0"},
              {"httpEndpoint": "127.0.0.1:0", "prometheusExport": True}):
    obs.apply(load_policy_config("template", {"instrumentation": block}))
    steps.append(loaded())
obs.apply(None)
print(steps)
"""
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    ).stdout  # fmt: skip
    assert json.loads(out.replace("False", "false").replace("True", "true")) == [
        [False, False],  # imported: the daemon's modules
        [False, False],  # no endpoint
        [False, True],  # an endpoint: the server
        [True, True],  # export: prometheus_client
    ]


def test_the_http_endpoint_flag_serves_health_without_a_configuration(
    tmp_path: Path, sysfs: Path
) -> None:
    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, "--http-endpoint", "127.0.0.1:0", policy="template")
        try:
            port = (await daemon.wait_for("^serving /healthz"))["port"]
            assert (await aget(port, "/healthz"))[0] == 200
            assert (await aget(port, "/metrics"))[0] == 404  # the configuration exports none
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24")
            await until(port, "/readyz", 200)
            report = json.loads((await aget(port, "/status"))[1])
            assert report["config"] == {
                "source": "defaults",
                "source_generation": None,
                "generation": 1,
                "last_reload": None,
                "reloading": None,
            }
        finally:
            daemon.kill()

    with_runtime(tmp_path, body)


def test_an_endpoint_that_cannot_be_served_keeps_the_server_where_it_was(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reload to a ``httpEndpoint`` whose port is taken stopped the server and served none:
    the probes on the old port failed and the kubelet restarted the daemon."""
    from nrirp.adapters.metrics import MetricsRecorder
    from nrirp.app.daemon.health import RuntimeConnection
    from nrirp.app.daemon.observability import Observability
    from nrirp.app.daemon.status import ConfigState
    from nrirp.domain.config import load_policy_config

    def config(endpoint: str) -> Any:
        return load_policy_config("template", {"instrumentation": {"httpEndpoint": endpoint}})

    def observability(default: str) -> Observability:
        manager = types.SimpleNamespace(policy=types.SimpleNamespace(name="template"))
        obs = Observability(
            manager=manager, recorder=MetricsRecorder(), serving=RuntimeConnection(),
            decisions=None, config_state=ConfigState(), plugin_name="x", state_dir="/",
        )  # fmt: skip
        obs.default_endpoint = default
        return obs

    with socket.create_server(("127.0.0.1", 0)) as busy, socket.socket() as probe:
        taken = f"127.0.0.1:{busy.getsockname()[1]}"
        probe.bind(("127.0.0.1", 0))
        free = f"127.0.0.1:{probe.getsockname()[1]}"
        probe.close()
        obs = observability("")
        try:
            obs.apply(config(free))
            assert obs.server is not None and obs.server.endpoint == free
            caplog.clear()
            caplog.set_level(logging.INFO, "nrirp.daemon")
            obs.apply(config(taken))  # stays where it was
            assert obs.server is not None and obs.server.endpoint == free
            assert get(obs.server.port, "/nope")[0] == 404  # it serves
            messages = [r.getMessage() for r in caplog.records]
            assert any(m.startswith(f"HTTP endpoint {taken} not served: ") for m in messages)
            assert any(m.endswith(f"instead of {taken}") for m in messages)
        finally:
            obs.apply(None)
            assert obs.server is None
        obs = observability("127.0.0.1:0")  # --http-endpoint: the probes' port
        try:
            obs.apply(config(taken))
            assert obs.server is not None and obs.server.endpoint == "127.0.0.1:0"
        finally:
            obs.default_endpoint = ""
            obs.apply(None)
