"""The example plugins end to end against the scripted runtime: in process, as external
processes, and pre-launched the way the runtime starts them (fd 3, three env variables)."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from examples.plugins.logger import EventLogger
from examples.plugins.pin_cpus import CpuPinner, PinError, pins_from_control

from nrirp.adapters.nri import api
from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import Session, StatusCode
from tests.adapters.nri.stub.runtime_peer import RuntimePeer, RuntimeServer, container, pod
from tests.adapters.nri.stub.test_protocol import connected, shut
from tests.support.aio import arun

PLUGINS = Path(__file__).resolve().parents[2] / "examples" / "plugins"

ANNOTATED = {
    "cpus.pin-cpus.nrirp.io/pod": "4-7",
    "cpus.pin-cpus.nrirp.io/container.app": "1,3",
    "mems.pin-cpus.nrirp.io/container.app": "0",
}


async def lifecycle(peer: RuntimePeer, the_pod: Any, the_container: Any) -> None:
    """One pod with one container, through every event the runtime sends."""
    both = {"pod": the_pod, "container": the_container}
    await peer.call("RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=the_pod), api_pb2.Empty)
    await peer.call(
        "CreateContainer", api_pb2.CreateContainerRequest(**both), api_pb2.CreateContainerResponse
    )
    for method in ["PostCreateContainer", "StartContainer", "PostStartContainer"]:
        request_type = getattr(api_pb2, f"{method}Request")
        await peer.call(method, request_type(**both), api_pb2.Empty)
    await peer.call(
        "UpdateContainer", api_pb2.UpdateContainerRequest(**both), api_pb2.UpdateContainerResponse
    )
    await peer.call(
        "PostUpdateContainer", api_pb2.PostUpdateContainerRequest(**both), api_pb2.Empty
    )
    await peer.call(
        "StopContainer", api_pb2.StopContainerRequest(**both), api_pb2.StopContainerResponse
    )
    await peer.call("RemoveContainer", api_pb2.RemoveContainerRequest(**both), api_pb2.Empty)
    await peer.call("StopPodSandbox", api_pb2.StopPodSandboxRequest(pod=the_pod), api_pb2.Empty)
    await peer.call("RemovePodSandbox", api_pb2.RemovePodSandboxRequest(pod=the_pod), api_pb2.Empty)


LIFECYCLE_LINES = [
    "RunPodSandbox pod=shop/web",
    "CreateContainer pod=shop/web container=app id=web-app-id",
    "PostCreateContainer pod=shop/web container=app id=web-app-id",
    "StartContainer pod=shop/web container=app id=web-app-id",
    "PostStartContainer pod=shop/web container=app id=web-app-id",
    "UpdateContainer pod=shop/web container=app id=web-app-id",
    "PostUpdateContainer pod=shop/web container=app id=web-app-id",
    "StopContainer pod=shop/web container=app id=web-app-id",
    "RemoveContainer pod=shop/web container=app id=web-app-id",
    "StopPodSandbox pod=shop/web",
    "RemovePodSandbox pod=shop/web",
]


# --------------------------------------------------------------------------- logger


def test_logger_subscribes_to_everything_and_logs_one_line_per_event(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def main() -> None:
        stub, peer, _ = await connected(EventLogger())
        assert stub.events == api.ALL_EVENTS
        caplog.clear()
        await lifecycle(peer, pod("web", "shop"), container("app", "web"))
        await peer.state_change(
            api_pb2.START_CONTAINER, pod("web", "shop"), container("app", "web")
        )
        validate = api_pb2.ValidateContainerAdjustmentRequest(
            pod=pod("web", "shop"), container=container("app", "web")
        )
        await peer.call(
            "ValidateContainerAdjustment", validate, api_pb2.ValidateContainerAdjustmentResponse
        )
        await peer.call(
            "UpdatePodSandbox",
            api_pb2.UpdatePodSandboxRequest(pod=pod("web", "shop")),
            api_pb2.UpdatePodSandboxResponse,
        )
        await shut(stub, peer)

    with caplog.at_level(logging.INFO, logger="nrirp.examples.logger"):
        arun(main)
    lines = [r.getMessage() for r in caplog.records if r.name == "nrirp.examples.logger"]
    assert lines == [
        *LIFECYCLE_LINES,
        "StartContainer pod=shop/web container=app id=web-app-id",
        "ValidateContainerAdjustment pod=shop/web container=app id=web-app-id",
        "UpdatePodSandbox pod=shop/web",
    ]


def test_logger_events_option_narrows_the_subscription() -> None:
    async def main() -> None:
        events = api.parse_event_mask("CreateContainer,stop_container")
        stub, peer, _ = await connected(EventLogger(events))
        assert stub.events == EventMask.CREATE_CONTAINER | EventMask.STOP_CONTAINER
        await shut(stub, peer)

    arun(main)


def python_module(module: str, *args: str) -> list[str]:
    return [sys.executable, str(PLUGINS / f"{module}.py"), *args]


async def wait_exit(process: subprocess.Popen[bytes], timeout: float = 10.0) -> int:
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, lambda: process.wait(timeout))


def test_logger_runs_as_an_external_plugin_process(tmp_path: Path) -> None:
    log_file = tmp_path / "events.log"

    async def main() -> None:
        server = await RuntimeServer(tmp_path / "nri.sock").start()
        process = subprocess.Popen(
            python_module(
                "logger",
                "--socket",
                str(tmp_path / "nri.sock"),
                "--name",
                "ext-logger",
                "--index",
                "11",
                "--log-file",
                str(log_file),
                "--no-reconnect",
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            peer = await server.next_peer(timeout=10)
            registration = await asyncio.wait_for(peer.registration, 10)
            assert (registration.plugin_name, registration.plugin_idx) == ("ext-logger", "11")
            reply = await peer.handshake(runtime_version="v1.7.24", nri_version="")
            assert reply.events == int(api.LEGACY_EVENTS)  # trimmed for NRI 0.6.1
            await lifecycle(peer, pod("web", "shop"), container("app", "web"))
            peer.close()  # the runtime goes away: without reconnect the plugin exits
            assert await wait_exit(process) == 0
        finally:
            if process.poll() is None:
                process.kill()
            await server.stop()
        stdout, stderr = process.communicate()
        assert stdout == b"" and stderr == b""

    arun(main, timeout=30)
    logged = log_file.read_text().splitlines()
    assert [line.split(": ", 1)[1] for line in logged if "examples.logger" in line][2:] == (
        LIFECYCLE_LINES
    )


EXEC_WITH_FD_3 = """
import os, sys
fd = int(sys.argv[1])
os.dup2(fd, 3)
os.close(fd)
os.execv(sys.argv[2], [sys.argv[2]])
"""
"""Exec a plugin file with the socket moved to fd 3 (what the runtime does after fork)."""


def test_logger_prelaunched_by_the_runtime_registers_over_fd_3_and_writes_no_stdout(
    tmp_path: Path,
) -> None:
    """Like containerd: an executable NN-name in the plugin dir, env of exactly the three NRI
    variables, the socketpair end as fd 3, and no PATH."""
    log_file = tmp_path / "logger.log"
    plugin_file = tmp_path / "07-prelogger"
    plugin_file.write_text(
        f"#!/bin/sh\nexec {sys.executable} {PLUGINS / 'logger.py'} --log-file {log_file}\n"
    )
    plugin_file.chmod(0o755)

    async def main() -> None:
        runtime_end, plugin_end = socket.socketpair()
        session = Session()
        peer = RuntimePeer(session)
        await session.attach(runtime_end)
        fd = plugin_end.fileno()
        process = subprocess.Popen(
            [sys.executable, "-c", EXEC_WITH_FD_3, str(fd), str(plugin_file)],
            env={"NRI_PLUGIN_NAME": "prelogger", "NRI_PLUGIN_IDX": "07", "NRI_PLUGIN_SOCKET": "3"},
            pass_fds=(fd,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        plugin_end.close()
        try:
            registration = await asyncio.wait_for(peer.registration, 10)
            assert (registration.plugin_name, registration.plugin_idx) == ("prelogger", "07")
            await peer.handshake(config="a: 1")
            await lifecycle(peer, pod("web", "shop"), container("app", "web"))
            peer.close()  # runtime stops: a pre-launched plugin exits, never reconnects
            assert await wait_exit(process) == 0
        finally:
            if process.poll() is None:
                process.kill()
        stdout, stderr = process.communicate()
        assert stdout == b""
        assert stderr == b""  # logging went to the log file

    arun(main, timeout=30)
    text = log_file.read_text()
    assert "Configure runtime=containerd version=v2.3.0 nri=v0.12.0 config=4 bytes" in text
    for line in LIFECYCLE_LINES:
        assert line in text


# --------------------------------------------------------------------------- pin_cpus


def test_pin_cpus_pins_at_creation_from_annotations() -> None:
    async def main() -> None:
        stub, peer, _ = await connected(CpuPinner())
        annotated = pod("web", "shop", annotations=ANNOTATED)

        async def create(name: str, the_pod: Any) -> api_pb2.CreateContainerResponse:
            request = api_pb2.CreateContainerRequest(pod=the_pod, container=container(name, "web"))
            return await peer.call("CreateContainer", request, api_pb2.CreateContainerResponse)

        app = (await create("app", annotated)).adjust.linux.resources.cpu
        assert (app.cpus, app.mems) == ("1,3", "0")
        sidecar = (await create("sidecar", annotated)).adjust.linux.resources.cpu
        assert (sidecar.cpus, sidecar.mems) == ("4-7", "")
        plain = await create("app", pod("web", "shop"))
        assert not plain.HasField("adjust")
        bad = pod("web", "shop", annotations={"cpus.pin-cpus.nrirp.io/pod": "3-1"})
        request = api_pb2.CreateContainerRequest(pod=bad, container=container("x", "web"))
        error = await peer.expect_status("CreateContainer", request.SerializeToString())
        assert error.code == StatusCode.UNKNOWN
        assert "annotation cpus.pin-cpus.nrirp.io/pod: invalid CPU list '3-1'" in error.message
        await shut(stub, peer)

    arun(main)


def test_pin_cpus_pins_existing_containers_at_sync_and_repins_from_the_control_file(
    tmp_path: Path,
) -> None:
    control = tmp_path / "pins.json"

    async def main() -> None:
        plugin = CpuPinner(control)
        stub, peer, _ = await connected(
            plugin, peer_options={"fail_updates": lambda u: u.container_id == "db-pg-id"}
        )
        plugin.stub = stub
        web = pod("web", "shop", annotations={"cpus.pin-cpus.nrirp.io/pod": "2"})
        db = pod("db", "shop")
        final, _ = await peer.synchronize(
            [web, db], [container("app", "web"), container("pg", "db"), container("app", "db")]
        )
        assert [
            (u.container_id, u.linux.resources.cpu.cpus, u.ignore_failure) for u in final.update
        ] == [("web-app-id", "2", True)]
        control.write_text(
            json.dumps({"shop/web/app": "5-6", "pg": {"cpus": "0", "mems": "0"}, "nobody": "1"})
        )
        failed = await plugin.apply_control_file()
        assert [u.container_id for u in failed] == ["db-pg-id"]
        (request,) = peer.update_requests
        got = {
            u.container_id: (u.linux.resources.cpu.cpus, u.linux.resources.cpu.mems)
            for u in request.update
        }
        assert got == {"web-app-id": ("5-6", ""), "db-pg-id": ("0", "0")}
        control.write_text(json.dumps({"app": "7"}))  # a bare name matches every "app"
        await plugin.apply_control_file()
        assert sorted(u.container_id for u in peer.update_requests[1].update) == [
            "db-app-id",
            "web-app-id",
        ]
        await shut(stub, peer)

    arun(main)


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ([], "expected a JSON object"),
        ({"a": 3}, "a: expected a CPU list string"),
        ({"a": "x"}, "a: invalid CPU list 'x'"),
        ({"a": ""}, "a: empty CPU list"),
        ({"a": {"cpu": "1"}}, r"a: unknown keys \['cpu'\]"),
        ({"a": {}}, "a: neither cpus nor mems"),
    ],
)
def test_pin_cpus_control_file_errors_name_the_entry(document: object, message: str) -> None:
    with pytest.raises(PinError, match=message):
        pins_from_control(document)


def test_pin_cpus_process_repins_a_running_container_on_sigusr1(tmp_path: Path) -> None:
    control = tmp_path / "pins.json"
    control.write_text(json.dumps({"web-app-id": {"cpus": "0-1", "mems": "0"}}))
    log_file = tmp_path / "pin.log"

    async def main() -> None:
        server = await RuntimeServer(tmp_path / "nri.sock").start()
        process = subprocess.Popen(
            python_module(
                "pin_cpus",
                "--socket",
                str(tmp_path / "nri.sock"),
                "--control-file",
                str(control),
                "--log-file",
                str(log_file),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            peer = await server.next_peer(timeout=10)
            registration = await asyncio.wait_for(peer.registration, 10)
            assert (registration.plugin_name, registration.plugin_idx) == ("pin-cpus", "40")
            await peer.handshake()
            await peer.synchronize([pod("web")], [container("app", "web")])
            process.send_signal(signal.SIGUSR1)
            await asyncio.wait_for(peer.update_arrived.wait(), 10)
            (request,) = peer.update_requests
            (update,) = request.update
            assert update.container_id == "web-app-id"
            assert (update.linux.resources.cpu.cpus, update.linux.resources.cpu.mems) == (
                "0-1",
                "0",
            )
            process.send_signal(signal.SIGTERM)
            assert await wait_exit(process) == 0
        finally:
            if process.poll() is None:
                process.kill()
            await server.stop()
        stdout, _ = process.communicate()
        assert stdout == b""

    arun(main, timeout=30)
    assert "re-pinned 1 container(s), 0 failed" in log_file.read_text()


def test_examples_exit_with_an_error_for_bad_identity(tmp_path: Path) -> None:
    done = subprocess.run(
        python_module("logger", "--index", "7", "--socket", str(tmp_path / "x.sock")),
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2 and done.stdout == b""
    assert b"plugin index '7' from the arguments must be exactly two digits" in done.stderr
