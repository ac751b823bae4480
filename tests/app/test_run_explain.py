"""``nrirp explain`` against ``nrirp run`` (a process driven by a scripted NRI runtime): the
status socket and ``/explain`` on the HTTP endpoint, a placed and a refused container, an
unknown one, and the status socket still answering clients that send no request line."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import TtrpcError
from nrirp.app.commands.explain import EXIT_OK, EXIT_UNKNOWN, EXIT_UNREACHABLE
from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.test_run import REPO, Daemon, create, sysfs, with_runtime
from tests.app.test_run_observability import aget

__all__ = ["sysfs"]  # the fixture

CONFIG = """
reservedResources: {cpu: 1000m}
instrumentation: {httpEndpoint: 127.0.0.1:0}
"""


def explain(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "nrirp", "explain", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


def guaranteed_pod(name: str) -> api_pb2.PodSandbox:
    msg = api_pb2.PodSandbox(id=f"sandbox-{name}", name=name, namespace="prod", uid=f"u-{name}")
    msg.linux.cgroup_parent = f"/kubepods/podu-{name}"
    return msg


def guaranteed_ctr(pod: str, cpus: int) -> api_pb2.Container:
    msg = api_pb2.Container(id=f"{pod}-c", pod_sandbox_id=f"sandbox-{pod}", name="c")
    resources = msg.linux.resources
    resources.cpu.shares.value = 1024 * cpus
    resources.cpu.quota.value = 100000 * cpus
    resources.cpu.period.value = 100000
    resources.memory.limit.value = 256 << 20
    return msg


def raw_socket(path: Path, request: bytes | None) -> dict[str, Any]:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        if request is not None:
            sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    answer: dict[str, Any] = json.loads(b"".join(chunks))
    return answer


def test_explain_a_running_daemons_decisions(tmp_path: Path, sysfs: Path) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, "--config-file", str(config), policy="topology-aware")
        try:
            port = (await daemon.wait_for("^serving /healthz"))["port"]
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24")
            for name in ("db", "big"):
                await peer.call(
                    "RunPodSandbox",
                    api_pb2.RunPodSandboxRequest(pod=guaranteed_pod(name)),
                    api_pb2.RunPodSandboxResponse,
                )
            reply = await create(peer, guaranteed_pod("db"), guaranteed_ctr("db", 2))
            cpus = reply.adjust.linux.resources.cpu.cpus
            with pytest.raises(TtrpcError, match="no pool has 40 exclusive CPUs"):
                await create(peer, guaranteed_pod("big"), guaranteed_ctr("big", 40))
            state = str(daemon.state_dir)

            # the status socket: the table and the document
            shown = await asyncio.to_thread(explain, "--state-dir", state, "prod/db/c")
            assert shown.returncode == EXIT_OK, shown.stderr
            assert f"verdict:    placed: exclusive cpus {cpus} in " in shown.stdout
            assert f"now:        exclusive cpus {cpus} in " in shown.stdout
            assert "\npool: " in shown.stdout and "CANDIDATE" in shown.stdout
            found = await asyncio.to_thread(explain, "--state-dir", state, "db-c", "--json")
            document = json.loads(found.stdout)
            identity = (document["namespace"], document["pod"], document["container"])
            assert (identity, document["verdict"]) == (("prod", "db", "c"), "placed")
            pool = next(s for s in document["stages"] if s["name"] == "pool")
            assert pool["winner"] and f" in {pool['winner']}, memory " in document["placement"]
            assert document["summary"].startswith(document["placement"])

            # the refused one, over HTTP: what was short, and when it was refused
            refused = await asyncio.to_thread(
                explain, "--http", f"127.0.0.1:{port}", "prod/big/c", "--json"
            )
            assert refused.returncode == EXIT_OK, refused.stderr
            document = json.loads(refused.stdout)
            assert document["verdict"] == "refused"
            assert document["shortage"].startswith("no pool has 40 exclusive CPUs")
            assert document["refusal"].startswith("create-container: no pool has 40")
            assert document["refused_at"] > 0

            # unknown containers; a bad request
            unknown = await asyncio.to_thread(explain, "--state-dir", state, "prod/none/c")
            assert unknown.returncode == EXIT_UNKNOWN
            assert "no container 'prod/none/c'" in unknown.stderr
            got, text = await aget(port, "/explain")
            assert got == 400 and "give the container" in json.loads(text)["error"]
            got, text = await aget(port, "/explain?container=prod%2Fnone%2Fc")
            assert got == 404 and "no container" in json.loads(text)["error"]

            # the socket: a client that sends nothing gets the status report; explaining
            # changed nothing
            before = raw_socket(daemon.state_dir / "status.sock", b"/status\n")
            legacy = await asyncio.to_thread(raw_socket, daemon.state_dir / "status.sock", None)
            assert legacy["containers"] == before["containers"]
            assert [c["cpus"] for c in before["containers"]] == [cpus]
            answer = raw_socket(daemon.state_dir / "status.sock", b"/bogus\n")
            assert "unknown request" in answer["error"]
        finally:
            daemon.kill()

    with_runtime(tmp_path, body)


def test_explain_without_a_daemon_says_so(tmp_path: Path) -> None:
    shown = explain("--state-dir", str(tmp_path), "x")
    assert shown.returncode == EXIT_UNREACHABLE
    assert f"no answer from {tmp_path}/status.sock" in shown.stderr
