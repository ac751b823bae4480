"""``nrirp run`` as a process against a scripted NRI runtime: startup errors and exit codes,
serving, decision log lines, persistence, reload on SIGHUP / file change, SIGTERM, restart,
reconnect."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import TtrpcError
from tests.adapters.nri.stub.runtime_peer import RuntimePeer, RuntimeServer
from tests.support.aio import arun

REPO = Path(__file__).resolve().parents[2]
PIN = "cpus.annotation-pin.nrirp.test"


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hw") / "sys"
    write_sysfs(resolve(load_machine("box-16"), "box-16"), root)
    return root


class Daemon:
    """``python -m nrirp run ...`` with JSON logs in a file."""

    def __init__(
        self,
        tmp: Path,
        sysfs: Path,
        *extra: str,
        policy: str = "annotation-pin",
        modules: str = "tests.e2e.daemon_policies",
    ):
        self.log_path = tmp / f"daemon-{len(list(tmp.glob('daemon-*.log')))}.log"
        self.socket = tmp / "nri.sock"
        self.state_dir = tmp / "state"
        argv = [
            sys.executable, "-m", "nrirp", "run",
            "--policy", policy,
            "--nri-socket", str(self.socket),
            "--state-dir", str(self.state_dir),
            "--sysfs-root", str(sysfs),
            "--cgroup-root", str(tmp / "no-cgroups"),
            "--log-format", "json",
            *extra,
        ]  # fmt: skip
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "NRIRP_POLICY_MODULES": modules,
        }
        for key in ("NRI_PLUGIN_SOCKET", "NRI_PLUGIN_NAME", "NRI_PLUGIN_IDX"):
            env.pop(key, None)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env
            )

    def records(self) -> list[dict[str, Any]]:
        """The complete JSON lines so far (the daemon may be writing the last one)."""
        text = self.log_path.read_text()
        lines = text.splitlines()
        if lines and not text.endswith("\n"):
            lines.pop()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def text(self) -> str:
        return self.log_path.read_text()

    async def wait_for(self, pattern: str, timeout: float = 15.0) -> dict[str, Any]:
        regex = re.compile(pattern)
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            for record in self.records():
                if regex.search(record["msg"]):
                    return record
            if self.proc.poll() is not None or asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"daemon did not log {pattern!r}; log:\n{self.text()}")
            await asyncio.sleep(0.02)

    async def wait_exit(self, timeout: float = 15.0) -> int:
        deadline = asyncio.get_running_loop().time() + timeout
        while self.proc.poll() is None:
            if asyncio.get_running_loop().time() > deadline:
                self.proc.kill()
                raise AssertionError(f"daemon did not exit; log:\n{self.text()}")
            await asyncio.sleep(0.02)
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def run_sync(daemon_args: list[str], tmp: Path, sysfs: Path, timeout: float = 30) -> Daemon:
    daemon = Daemon(tmp, sysfs, *daemon_args)
    daemon.proc.wait(timeout=timeout)
    return daemon


def pod(name: str = "web", **annotations: str) -> api_pb2.PodSandbox:
    msg = api_pb2.PodSandbox(id=f"sandbox-{name}", name=name, namespace="prod", uid=f"u-{name}")
    msg.linux.cgroup_parent = f"/kubepods/burstable/podu-{name}"
    msg.annotations.update(annotations)
    return msg


def ctr(name: str, pod_name: str = "web", state: int = 0) -> api_pb2.Container:
    msg = api_pb2.Container(
        id=f"{pod_name}-{name}",
        pod_sandbox_id=f"sandbox-{pod_name}",
        name=name,
        state=state,  # type: ignore[arg-type]
    )
    msg.linux.resources.cpu.shares.value = 256
    return msg


async def create(peer: RuntimePeer, p: Any, c: Any) -> api_pb2.CreateContainerResponse:
    request = api_pb2.CreateContainerRequest(pod=p, container=c)
    return await peer.call("CreateContainer", request, api_pb2.CreateContainerResponse)


def with_runtime(tmp: Path, body: Callable[[RuntimeServer], Awaitable[None]]) -> None:
    async def main() -> None:
        server = await RuntimeServer(tmp / "nri.sock").start()
        try:
            await body(server)
        finally:
            await server.stop()

    arun(main, timeout=90)


# ---------------------------------------------------------------- startup errors
def test_invalid_config_file_exits_2_listing_problems(tmp_path: Path, sysfs: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("availableResources:\n  cpu: cpuset:x-y\nbogus: 1\n")
    daemon = run_sync(["--config-file", str(config)], tmp_path, sysfs)
    assert daemon.proc.returncode == 2
    (error,) = [r for r in daemon.records() if r["level"] == "error"]
    assert error["msg"].startswith(f"configuration {config} is invalid: ")
    assert any("bogus" in problem for problem in error["errors"])
    assert any("availableResources.cpu" in problem for problem in error["errors"])


def test_unknown_policy_and_missing_file_exit_2(tmp_path: Path, sysfs: Path) -> None:
    daemon = run_sync([], tmp_path, sysfs) if False else None
    del daemon
    unknown = Daemon(tmp_path, sysfs, policy="no-such-policy")
    assert unknown.proc.wait(timeout=30) == 2
    assert (
        "unknown policy 'no-such-policy' (known: annotation-pin, balloons, none, template,"
        " topology-aware)" in (unknown.text())
    )
    missing = Daemon(tmp_path, sysfs, "--config-file", str(tmp_path / "nope.yaml"))
    assert missing.proc.wait(timeout=30) == 2
    assert f"config file {tmp_path}/nope.yaml does not exist" in missing.text()


def test_a_failing_policy_module_exits_2_in_one_line(tmp_path: Path, sysfs: Path) -> None:
    module = tmp_path / "boom.py"
    module.write_text("def register_policies(registry):\n    raise RuntimeError('boom')\n")
    daemon = Daemon(tmp_path, sysfs, policy="template", modules=str(module))
    assert daemon.proc.wait(timeout=30) == 2
    (error,) = [r for r in daemon.records() if r["level"] == "error"]
    assert error["msg"] == f"policy module {str(module)!r}: register_policies failed: boom"
    assert "Traceback" not in daemon.text()


def test_bad_sysfs_root_exits_3(tmp_path: Path) -> None:
    daemon = run_sync([], tmp_path, tmp_path / "no-sysfs")
    assert daemon.proc.returncode == 3
    assert "hardware discovery failed" in daemon.text()


def test_a_plugin_index_or_name_the_runtime_refuses_exits_2_in_one_line(
    tmp_path: Path, sysfs: Path
) -> None:
    for flags, reason in [
        (["--plugin-index", "1"], "plugin index '1' from the arguments must be exactly two digits"),
        (["--plugin-name", "a b"], "plugin name 'a b' from the arguments must be non-empty"),
    ]:
        daemon = run_sync(flags, tmp_path, sysfs)
        assert daemon.proc.returncode == 2
        (error,) = [r for r in daemon.records() if r["level"] == "error"]
        assert error["msg"].startswith(reason)
        assert "Traceback" not in daemon.text()


def test_group_writable_state_file_exits_4(tmp_path: Path, sysfs: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "cache").write_text("{}")
    os.chmod(state / "cache", 0o664)
    daemon = run_sync([], tmp_path, sysfs)
    assert daemon.proc.returncode == 4
    assert f"refusing state file {state}/cache: mode 0664" in daemon.text()
    assert (state / "cache").read_text() == "{}"  # left alone


# ---------------------------------------------------------------- serving
def test_serves_persists_reloads_and_restarts(tmp_path: Path, sysfs: Path) -> None:
    config = tmp_path / "template.yaml"
    config.write_text("{}\n")
    p = pod(**{f"{PIN}/container.app": "2-3"})

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, "--config-file", str(config), policy="annotation-pin")
        try:
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            await peer.call(
                "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
            )
            reply = await create(peer, p, ctr("app"))
            assert reply.adjust.linux.resources.cpu.cpus == "2-3"
            decision = await daemon.wait_for("^decision$")
            assert {k: decision[k] for k in ("container", "pod", "namespace", "cpus")} == {
                "container": "app",
                "pod": "web",
                "namespace": "prod",
                "cpus": "2-3",
            }
            assert decision["reason"] == "pinned by annotation"

            # a bad config on SIGHUP is refused with every problem; the old one stays
            config.write_text("availableResources: {cpu: 'cpuset:x'}\nnope: 1\n")
            daemon.proc.send_signal(signal.SIGHUP)
            refused = await daemon.wait_for(r"reload \(SIGHUP\): new configuration .* not applied")
            assert len(refused["errors"]) == 2
            # a good config written later is picked up by the file watcher
            config.write_text("availableResources:\n  cpu: cpuset:0-7\n")
            await daemon.wait_for(r"reload \(file change\): configuration .* applied")

            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
            await daemon.wait_for("state saved to")
        finally:
            daemon.kill()
        state = json.loads((tmp_path / "state" / "cache").read_text())
        assert [c["id"] for c in state["containers"]] == ["web-app"]
        assert state["containers"][0]["resources"]["cpus"] == "2-3"
        assert state["config"]["availableResources"]["cpu"] == "cpuset:0-7"

        # restart without --config-file: state and saved config come back, sync reconciles
        again = Daemon(tmp_path, sysfs, policy="annotation-pin")
        try:
            restored = await again.wait_for("restored state from")
            assert "1 pods, 1 containers" in restored["msg"]
            peer = await server.next_peer(timeout=20)
            await asyncio.wait_for(peer.registration, 10)
            await peer.configure(runtime_version="v1.7.24", nri_version="")
            running = api_pb2.CONTAINER_RUNNING
            newcomer = ctr("side", state=running)
            p.annotations[f"{PIN}/container.side"] = "5"
            await peer.synchronize([p], [newcomer])  # "app" is gone, "side" is new
            synced = await again.wait_for("^synchronized with the runtime")
            assert (synced["released"], synced["admitted"]) == ("web-app", "web-side")
            # the runtime went away: the daemon reconnects and synchronizes again
            peer.close()
            await again.wait_for("reconnecting in")
            third = await server.next_peer(timeout=20)
            await third.handshake(runtime_version="v1.7.24", nri_version="")
            assert again.proc.poll() is None
            again.proc.send_signal(signal.SIGINT)
            assert await again.wait_exit() == 0
        finally:
            again.kill()
        final = json.loads((tmp_path / "state" / "cache").read_text())
        assert [c["id"] for c in final["containers"]] == []  # the empty third sync: all gone

    with_runtime(tmp_path, body)


def test_an_ordinary_refusal_is_one_line_without_a_traceback(tmp_path: Path, sysfs: Path) -> None:
    refuse = "refuse.annotation-pin.nrirp.test"
    p = pod("big", **{f"{refuse}/container.app": "true"})

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, policy="annotation-pin")
        try:
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            await peer.call(
                "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
            )
            with pytest.raises(TtrpcError) as err:
                await create(peer, p, ctr("app", pod_name="big"))
            assert err.value.message == (
                "create-container container prod/big/app: container app refused by annotation"
            )
            await daemon.wait_for("refused: create-container")
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()
        about = [r for r in daemon.records() if "refused by annotation" in r["msg"]]
        # the pipeline's notice and the transport's line, each one line
        assert [(r["level"], r["msg"]) for r in about] == [
            ("error", "create-container container prod/big/app failed: "
             "container app refused by annotation"),
            ("info", "conn 1: nri.pkg.api.v1alpha1.Plugin/CreateContainer refused: "
             "create-container container prod/big/app: container app refused by annotation"),
        ]  # fmt: skip
        assert "Traceback" not in daemon.text() and not any("exception" in r for r in about)

    with_runtime(tmp_path, body)


def test_the_log_reader_leaves_out_a_line_being_written(tmp_path: Path) -> None:
    """The daemon's JSON log is read while the daemon writes it: a half-written last line is
    not parsed (it used to make process tests fail now and then under load)."""
    reader = object.__new__(Daemon)
    reader.log_path = tmp_path / "daemon.log"
    reader.log_path.write_text('{"msg": "one"}\nnot json\n{"msg": "tw')
    assert [r["msg"] for r in reader.records()] == ["one"]
    with open(reader.log_path, "a") as log:
        log.write('o"}\n')
    assert [r["msg"] for r in reader.records()] == ["one", "two"]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--http-endpoint", "foo"],
            "argument --http-endpoint: invalid HTTP endpoint 'foo': expected '[host]:port'",
        ),
        (["--config-poll-interval", "-1"], "expected 0 or more seconds, got '-1'"),
        (["--topology-update-interval", "-5"], "expected 0 or more seconds, got '-5'"),
        (["--config-poll-interval", "nan"], "expected 0 or more seconds, got 'nan'"),
    ],
)
def test_bad_flag_values_are_refused_at_the_command_line(
    capsys: pytest.CaptureFixture[str], flags: list[str], message: str
) -> None:
    from nrirp.app.cli import main

    with pytest.raises(SystemExit) as info:
        main(["run", "--policy", "template", *flags])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: nrirp run") and err.endswith(f"{message}\n")
