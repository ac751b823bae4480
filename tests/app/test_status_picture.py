"""``nrirp status --svg``: the picture of a running daemon, drawn from the placement its
status report carries (the daemon's machine, pools and containers), as a process against a
scripted NRI runtime."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from nrirp.adapters.nri.gen import api_pb2
from nrirp.app.commands.status import EXIT_UNREACHABLE
from nrirp.app.placement import placement_from_document
from nrirp.domain.cpuset import CPUSet
from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.pictures.support import read
from tests.app.test_run import REPO, Daemon, create, ctr, pod, sysfs, with_runtime

__all__ = ["sysfs"]  # the fixture


def status(state_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    argv = [sys.executable, "-m", "nrirp", "status", "--state-dir", str(state_dir), *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False)


def test_the_picture_of_a_running_daemon(tmp_path: Path, sysfs: Path) -> None:
    picture_file = tmp_path / "node.svg"
    p = pod()

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, policy="topology-aware")
        try:
            peer = await server.next_peer(timeout=20)
            await asyncio.wait_for(peer.registration, 10)
            await peer.configure(runtime_version="v1.7.24")
            await peer.synchronize()
            await peer.call(
                "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
            )
            app = ctr("app")
            app.linux.resources.cpu.shares.value = 2048
            app.linux.resources.cpu.quota.value = 200000
            app.linux.resources.cpu.period.value = 100000
            app.linux.resources.memory.limit.value = 1 << 30
            cpus = CPUSet.parse((await create(peer, p, app)).adjust.linux.resources.cpu.cpus)
            log = await create(peer, p, ctr("log"))
            log_cpus = CPUSet.parse(log.adjust.linux.resources.cpu.cpus)
            moved = [u for u in log.update if u.container_id == app.id]  # app may move too
            if moved:
                cpus = CPUSet.parse(moved[-1].linux.resources.cpu.cpus)

            shown = await asyncio.to_thread(status, daemon.state_dir, "--svg", str(picture_file))
            assert shown.returncode == 0, shown.stderr
            assert "policy:     topology-aware" in shown.stdout  # the text report as before
            picture = read(picture_file.read_text())
            assert sorted(picture.drawn()) == list(range(16))  # the daemon's box-16
            assert cpus and picture.cpus_of("prod/web/app") == cpus
            assert log_cpus and picture.cpus_of("prod/web/log") == log_cpus
            report = json.loads(
                (await asyncio.to_thread(status, daemon.state_dir, "--json")).stdout
            )
            placement = placement_from_document(report["placement"])
            assert placement.container("prod/web/app").cpus == cpus
            assert placement.container("prod/web/app").memory == 1 << 30
            assert placement.container("prod/web/app").group  # the pool holding it
        finally:
            daemon.kill()

    with_runtime(tmp_path, body)


def test_no_picture_without_a_daemon(tmp_path: Path) -> None:
    shown = status(tmp_path, "--svg", str(tmp_path / "x.svg"))
    assert shown.returncode == EXIT_UNREACHABLE and "no answer" in shown.stderr
    assert not (tmp_path / "x.svg").exists()
