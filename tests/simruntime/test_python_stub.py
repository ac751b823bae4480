"""Our own plugin stub and example plugins against the simulated runtime."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from nrirp.adapters.nri import api
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import Plugin, Stub, UpdateFromHandlerError
from nrirp.domain.cpuset import CPUSet
from nrirp.simruntime import (
    CallOutcome,
    ContainerSpec,
    PluginEventKind,
    PluginKind,
    PodSpec,
    SimRuntime,
)
from tests.support.aio import arun

from .peers import runtime

PLUGINS = Path(__file__).resolve().parents[2] / "examples" / "plugins"
POD = PodSpec("web", containers=[ContainerSpec("app"), ContainerSpec("side")])


class Pinner(Plugin):
    """Pins each new container to CPU 1 and, when ``side`` is created, re-pins ``app``."""

    def __init__(self, *, naive: bool = False) -> None:
        self.stub: Stub | None = None
        self.naive = naive
        self.synced: tuple[int, int] | None = None
        self.app: str | None = None
        self.errors: list[BaseException] = []
        self.scheduled: list[asyncio.Future[list[api_pb2.ContainerUpdate]]] = []
        self.events: list[str] = []

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> None:
        self.synced = (len(pods), len(containers))

    async def create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> api_pb2.ContainerAdjustment:
        assert self.stub is not None
        if container.name == "app":
            self.app = container.id
        elif self.app is not None:
            update = api.container_update(self.app, cpus="0")
            if self.naive:
                try:
                    await self.stub.update_containers([update])
                except UpdateFromHandlerError as exc:
                    self.errors.append(exc)
            else:
                self.scheduled.append(self.stub.schedule_update_containers([update]))
        return api.container_adjustment(cpus="1")

    async def start_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        self.events.append(f"start {container.name}")


async def start_stub(rt: SimRuntime, plugin: Pinner) -> tuple[Stub, asyncio.Task[None]]:
    stub = Stub(plugin, name="pinner", index="30", connection=await rt.open_plugin_socket())
    plugin.stub = stub
    task = asyncio.create_task(stub.run())
    await rt.wait_plugin("30-pinner")
    return stub, task


@pytest.mark.parametrize("version", ["v0.6.1", "v0.12.2"])
def test_stub_plugin_adjusts_and_updates_without_deadlock(version: str) -> None:
    async def scenario() -> None:
        split = version != "v0.6.1"  # v0.6 cannot split: it would fail above the limit
        async with runtime(nri_version=version, sync_size_limit=15_000 if split else None) as rt:
            for n in range(12):
                await rt.run_pod(PodSpec(f"old{n}", containers=[ContainerSpec("c")]))
            plugin = Pinner()
            stub, task = await start_stub(rt, plugin)
            assert plugin.synced == (12, 12)  # chunks merged by the stub
            syncs = [c for c in rt.journal.calls if c.method == "Synchronize" and c.code is None]
            assert len(syncs) > 1 if split else len(syncs) == 1
            loop = asyncio.get_running_loop()
            started = loop.time()
            _, (app, side) = await rt.run_pod(POD)
            assert loop.time() - started < 1.0  # no request timeout was hit
            assert side.resources.cpus == CPUSet.of(1)
            assert await plugin.scheduled[0] == []
            assert rt.container(app).resources.cpus == CPUSet.of(0)  # the scheduled update
            assert plugin.events == ["start app", "start side"]
            info = rt.plugin("30-pinner")
            assert info.kind is PluginKind.EXTERNAL and info.close_reason is None
            assert not [c for c in rt.journal.calls if c.outcome is CallOutcome.FATAL]
            stub.stop()
            await task
            await rt.wait_plugin("30-pinner", PluginEventKind.CLOSED)

    arun(scenario)


def test_stub_refuses_an_awaited_update_inside_a_handler() -> None:
    async def scenario() -> None:
        async with runtime(request_timeout=1.0) as rt:
            plugin = Pinner(naive=True)
            stub, task = await start_stub(rt, plugin)
            await rt.run_pod(POD)
            assert len(plugin.errors) == 1  # the stub caught the deadlock before it happened
            assert rt.plugin("30-pinner").close_reason is None
            stub.stop()
            await task

    arun(scenario)


def test_logger_example_as_an_external_plugin(tmp_path: Path) -> None:
    sock, log = tmp_path / "nri.sock", tmp_path / "logger.log"

    async def scenario() -> None:
        async with runtime(socket_path=sock) as rt:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                str(PLUGINS / "logger.py"),
                "--socket",
                str(sock),
                "--index",
                "11",
                "--log-file",
                str(log),
                stdout=subprocess.PIPE,
            )
            try:
                await rt.wait_plugin("11-logger", timeout=20)
                pod, _ = await rt.run_pod(POD)
                await rt.delete_pod(pod)

                def logged() -> str:
                    return log.read_text() if log.exists() else ""

                await rt.journal.wait_for(lambda: "RemovePodSandbox" in logged(), 10)
            finally:
                process.send_signal(signal.SIGTERM)
                stdout, _ = await process.communicate()
            text = log.read_text()
            for event in ("RunPodSandbox", "CreateContainer", "StopContainer", "RemovePodSandbox"):
                assert f"{event} pod=default/web" in text
            assert stdout == b""
            assert process.returncode == 0

    arun(scenario, timeout=60)


def test_pin_cpus_example_pre_launched_pins_and_re_pins(tmp_path: Path) -> None:
    log, control = tmp_path / "pin.log", tmp_path / "control.json"
    pod = PodSpec(
        "db",
        annotations={"cpus.pin-cpus.nrirp.io/container.main": "2-3"},
        containers=[ContainerSpec("main"), ContainerSpec("helper")],
    )

    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1") as rt:
            command = [
                sys.executable,
                str(PLUGINS / "pin_cpus.py"),
                "--log-file",
                str(log),
                "--control-file",
                str(control),
            ]
            info = await rt.spawn_plugin(command, "pin-cpus", "40")
            assert info.kind is PluginKind.PRELAUNCHED and info.pid is not None
            _, (main, helper) = await rt.run_pod(pod)
            assert main.resources.cpus == CPUSet.parse("2-3")
            assert helper.resources.cpus is None
            control.write_text(json.dumps({"default/db/helper": "1"}))
            os.kill(info.pid, signal.SIGUSR1)
            await rt.journal.wait_for(lambda: any(c.inbound for c in rt.journal.calls), 10)
            assert rt.container(helper).resources.cpus == CPUSet.of(1)
            async with asyncio.timeout(10):  # the plugin logs once it has the reply
                while "re-pinned 1 container(s), 0 failed" not in log.read_text():
                    await asyncio.sleep(0.01)

    arun(scenario, timeout=60)
