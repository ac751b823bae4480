"""Interop with the Go NRI stub (containerd/nri pkg/stub v0.6.1): the real plugin library.

``nristub`` from tools/gomockrt subscribes to every event and, with ``-cpus``, sets
the cpuset of every new container. It is built from Debian packages on first use (about a minute,
cached); a failed build fails these tests.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import attrs
import pytest

from nrirp.domain.cpuset import CPUSet
from nrirp.simruntime import (
    CallOutcome,
    ContainerSpec,
    PluginEventKind,
    PluginKind,
    PluginState,
    PodSpec,
    Resources,
    SimRuntime,
)
from tests.support.aio import arun
from tests.support.gomockrt import build_gomockrt

from .peers import runtime

POD = PodSpec("web", containers=[ContainerSpec("app", Resources.of(requests={"cpu": "1"}))])


@pytest.fixture(scope="module")
def nristub() -> Path:
    return build_gomockrt() / "bin" / "nristub"


@attrs.define
class GoPlugin:
    process: asyncio.subprocess.Process
    lines: list[str]


@asynccontextmanager
async def go_plugin(binary: Path, socket: Path, *args: str) -> AsyncIterator[GoPlugin]:
    """Run nristub against ``socket``; its stderr lines are collected as they come."""
    lines: list[str] = []
    process = await asyncio.create_subprocess_exec(
        str(binary),
        "-socket",
        str(socket),
        *args,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )

    async def read() -> None:
        assert process.stderr is not None
        async for line in process.stderr:
            lines.append(line.decode().rstrip())

    reader = asyncio.create_task(read())
    try:
        yield GoPlugin(process, lines)
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()
        await reader


async def wait_line(lines: list[str], text: str, timeout: float = 10) -> str:
    try:
        async with asyncio.timeout(timeout):
            while True:
                for line in lines:
                    if text in line:
                        return line
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"no {text!r} from nristub in {timeout} s; it said: {lines}") from None


@pytest.mark.parametrize("version", ["v0.6.1", "v0.12.2"])
def test_go_stub_registers_synchronizes_and_pins_containers(
    nristub: Path, tmp_path: Path, version: str
) -> None:
    sock = tmp_path / "nri.sock"

    async def scenario() -> None:
        async with runtime(socket_path=sock, nri_version=version) as rt:
            existing, _ = await rt.run_pod(POD)
            async with go_plugin(nristub, sock, "-idx", "10", "-name", "go", "-cpus", "1") as go:
                err = go.lines
                info = await rt.wait_plugin("10-go")
                assert info.kind is PluginKind.EXTERNAL and info.events == 0x7FF
                configured = await wait_line(err, "configured by")
                expected = "v1.7.24" if version == "v0.6.1" else "v2.3.0"
                assert configured == f"nristub: configured by containerd {expected}"
                assert await wait_line(err, "synchronize") == (
                    "nristub: synchronize 1 pods 1 containers"
                )
                pod, (ctr,) = await rt.run_pod(PodSpec("db", containers=[ContainerSpec("main")]))
                assert ctr.resources.cpus == CPUSet.of(1)  # the Go plugin's adjustment
                assert rt.container(rt.containers(existing)[0]).resources.cpus is None
                await rt.delete_pod(pod)
                calls = [c for c in rt.journal.calls_to("10-go")]
                events = [c.event for c in calls if c.outcome is CallOutcome.OK and c.event]
                assert events == [
                    "RunPodSandbox",
                    "CreateContainer",
                    "PostCreateContainer",
                    "StartContainer",
                    "PostStartContainer",
                    "StopContainer",
                    "StopPodSandbox",
                    "RemoveContainer",
                    "RemovePodSandbox",
                ]
                fallbacks = [c.method for c in calls if c.outcome is CallOutcome.FALLBACK]
                # the v0.6 Go stub lacks the v0.12 RPCs: HEAD runtimes fall back for good
                assert fallbacks == ([] if version == "v0.6.1" else ["RunPodSandbox"])
                assert rt.plugin("10-go").state_change_fallback is (version != "v0.6.1")
            await rt.wait_plugin("10-go", PluginEventKind.CLOSED)

    arun(scenario, timeout=60)


def test_go_v0_6_stub_cannot_take_split_sync_from_a_newer_runtime(
    nristub: Path, tmp_path: Path
) -> None:
    """A v0.6 plugin does not know ``more``: it answers the first chunk as if it were all, and
    a v0.7+ runtime refuses it, as containerd would."""
    sock = tmp_path / "nri.sock"

    async def scenario() -> None:
        async with runtime(socket_path=sock, sync_size_limit=20_000) as rt:
            for n in range(8):
                await rt.run_pod(PodSpec(f"p{n}", containers=[ContainerSpec("c")]))
            async with go_plugin(nristub, sock, "-idx", "10", "-name", "go") as go:
                rejected = await rt.wait_plugin("10-go", PluginEventKind.REJECTED)
                assert rejected.state is PluginState.CLOSED
                assert rejected.close_reason == (
                    "failed to synchronize plugin: plugin does not handle split sync requests"
                )
                # the Go stub sees its connection closed and exits (nristub's own "connection
                # closed" line races with its main returning, so wait for the exit instead)
                assert await asyncio.wait_for(go.process.wait(), 10) == 0
                # it got the first chunk only, and took it for everything
                (synced,) = [line for line in go.lines if "synchronize" in line]
                pods = int(synced.split()[2])
                assert 0 < pods < 8, synced

    arun(scenario, timeout=60)


def test_go_stub_subscribing_to_create_only(nristub: Path, tmp_path: Path) -> None:
    sock = tmp_path / "nri.sock"

    async def scenario() -> None:
        async with (
            runtime(socket_path=sock, nri_version="v0.6.1") as rt,
            go_plugin(nristub, sock, "-idx", "42", "-events", "create", "-cpus", "0"),
        ):
            info = await rt.wait_plugin("42-stub")
            assert info.events == 0x8
            _, (ctr,) = await rt.run_pod(POD)
            assert ctr.resources.cpus == CPUSet.of(0)
            assert [c.method for c in rt.journal.calls_to("42-stub")][2:] == ["CreateContainer"]

    arun(scenario, timeout=60)


def test_go_stub_as_a_pre_launched_plugin(nristub: Path, tmp_path: Path) -> None:
    # containerd passes NRI_PLUGIN_NAME/IDX, which the Go stub refuses next to its own -name/-idx
    # defaults: the wrapper drops them, as the e2e probe plugin does
    wrapper = tmp_path / "05-gostub"
    wrapper.write_text(
        f"#!/bin/sh\nexec /usr/bin/env -u NRI_PLUGIN_NAME -u NRI_PLUGIN_IDX {nristub} -cpus 1\n"
    )
    wrapper.chmod(0o755)
    log = tmp_path / "plugin.log"

    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1") as rt:
            info = await rt.spawn_plugin(
                [str(wrapper)], "gostub", "05", "some: config", log_path=str(log)
            )
            assert info.name == "05-gostub"  # the file name, not what the plugin registered
            assert info.kind is PluginKind.PRELAUNCHED and info.state is PluginState.READY
            assert info.pid is not None
            _, (ctr,) = await rt.run_pod(POD)
            assert ctr.resources.cpus == CPUSet.of(1)
            assert all(c.method != "Synchronize" for c in rt.journal.calls)
        # closing the runtime kills the plugin process
        assert "nristub: configured by containerd v1.7.24" in log.read_text()
        with pytest.raises(ProcessLookupError):
            os.kill(info.pid, 0)

    arun(scenario, timeout=60)


def test_sim_runtime_alone_needs_no_plugins() -> None:
    async def scenario() -> None:
        async with SimRuntime() as rt:
            _, (ctr,) = await rt.run_pod(POD)
            assert ctr.resources.cpu_shares == 1024

    arun(scenario)
