"""What ``nrirp run`` imports on its way to registration (issue 9 item 9): not the simulator or
the simulated runtime, not the fake hardware, not the embedding API, only the policy it runs,
and nothing of what it is not configured to use: no node agent (nor its fake cluster) without
a node name and API access, no HTTP server, route answers, Prometheus export or explanations
without an endpoint or a request, no recorder without --record, no HTTP client. Structural, not
timed: the time is measured by bench/bench_startup.py."""

from __future__ import annotations

import re
import signal
from pathlib import Path

import pytest

from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.test_run import Daemon, sysfs, with_runtime

__all__ = ["sysfs"]  # the module-scoped fixture, shared with test_run

NOT_FOR_REGISTRATION = (
    "nrirp.simruntime",
    "nrirp.app.simulator",
    "nrirp.app.embed",
    "nrirp.adapters.fakehw",
    "nrirp.domain.policies.topology_aware",
    "nrirp.domain.policies.balloons",
    "nrirp.adapters.recording",  # nrirp run --record only
    "msgspec",
    "lightkube",
    "prometheus_client",
    "grpc",
    # the node agent only when it runs (a node name and API access, no --disable-agent)
    "nrirp.adapters.kubernetes.agent",
    "nrirp.adapters.kubernetes.fake",
    "nrirp.adapters.kubernetes.nrt",
    "nrirp.adapters.kubernetes.cluster",
    # HTTP, metrics export and explanations only with an endpoint (or a request)
    "nrirp.adapters.http",
    "http.server",
    "nrirp.adapters.metrics.prometheus",
    "nrirp.app.explain",
    "nrirp.app.placement",  # the status report's placement: at the first report
    "nrirp.adapters.recording",  # only with --record
    "urllib.request",  # nrirp status's and explain's HTTP client
)


def imported(text: str) -> set[str]:
    return set(re.findall(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)$", text, flags=re.M))


def test_the_daemon_imports_only_what_registration_needs(
    tmp_path: Path, sysfs: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPROFILEIMPORTTIME", "1")  # one line per module, on stderr

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, policy="template")
        try:
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            modules = imported(daemon.text())
            assert "nrirp.domain.policies.template" in modules  # the lines are there
            unexpected = sorted(
                m
                for m in modules
                if any(m == n or m.startswith(n + ".") for n in NOT_FOR_REGISTRATION)
            )
            assert unexpected == []
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()

    with_runtime(tmp_path, body)
