"""``nrirp run`` as a process against the simulated runtime over a real unix socket, restarted
again and again: the daemon dials as soon as the socket reappears, however long the runtime was
away and however many restarts came before (the backoff is never used when the socket goes away
and comes back).

Asserted on the mechanism the daemon logs (each loss waits for the socket to appear, each
appearance is dialled at once, no backoff), not on wall-clock latencies, which a loaded machine
stretches; the latencies are printed. (The test used to be flaky under load for another reason:
it parsed the daemon's JSON log while the daemon was writing its last line;
``tests.app.test_run.Daemon.records`` now leaves a half-written line out.)"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.simruntime import ContainerSpec, PodSpec, SimRuntime
from tests.app.test_run import Daemon
from tests.support.aio import arun

NAME = "90-resource-manager"
DOWNTIMES = (0.2, 1.0, 2.5, 4.0)  # the old backoff (0.5 s doubling) waited up to 8 s after these


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hw") / "sys"
    write_sysfs(resolve(load_machine("box-16"), "box-16"), root)
    return root


def registrations(daemon: Daemon) -> list[dict[str, Any]]:
    return [r for r in daemon.records() if "registered with containerd" in r["msg"]]


def test_daemon_registers_again_within_a_second_of_each_runtime_restart(
    tmp_path: Path, sysfs: Path
) -> None:
    async def main() -> list[float]:
        daemon = Daemon(tmp_path, sysfs, policy="template")
        path = daemon.socket
        latencies: list[float] = []
        try:
            runtime = await SimRuntime(socket_path=path).start()
            await runtime.wait_plugin(NAME, timeout=30)  # the first start: imports and all
            await runtime.run_pod(PodSpec("web", containers=[ContainerSpec("app")]))
            await runtime.close()  # removes the socket
            for count, downtime in enumerate(DOWNTIMES, start=2):
                await asyncio.sleep(downtime)
                runtime = await SimRuntime(socket_path=path).start()
                appeared = os.stat(path).st_ctime
                await runtime.wait_plugin(NAME, timeout=10)
                await daemon.wait_for("^synchronized with the runtime")
                while len(registrations(daemon)) < count:
                    await asyncio.sleep(0.01)
                latencies.append(registrations(daemon)[-1]["time"] - appeared)
                await runtime.close()
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()
        messages = [r["msg"] for r in daemon.records()]
        assert not [m for m in messages if "retrying in" in m or "reconnecting in" in m]
        lost = [m for m in messages if "connection to the runtime lost" in m]
        assert len(lost) >= len(DOWNTIMES)  # the last one may come after SIGTERM, or not
        assert all(m.endswith(f"reconnecting when the NRI socket {path} appears") for m in lost)
        # every registration after the first: a loss, the socket seen to appear, a dial at once
        steps = [
            "lost" if "connection to the runtime lost" in m
            else "appeared" if m == f"NRI socket {path}: socket appeared, dialling"
            else "registered"
            for m in messages
            if "connection to the runtime lost" in m
            or "socket appeared" in m
            or "registered with containerd" in m
        ]  # fmt: skip
        steps = steps[steps.index("registered") :]  # the first dial may have waited too
        assert steps[: 1 + 3 * len(DOWNTIMES)] == [
            "registered",
            *["lost", "appeared", "registered"] * len(DOWNTIMES),
        ], steps
        return latencies

    latencies = arun(main, timeout=120)
    print("re-registration after the socket reappeared (s):", [f"{x:.3f}" for x in latencies])
    assert len(latencies) == len(DOWNTIMES)
