"""``nrirp run`` as a process with config files that are not what they seem (issue 9 item 2):
a FIFO or a device as the config file is refused at start (exit 2) and at reload (old config
kept) without being read, SIGTERM still stops the daemon, and a large valid config is parsed
off the event loop: requests are answered while it is being read."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from nrirp.adapters.nri.gen import api_pb2
from tests.adapters.nri.stub.runtime_peer import RuntimeServer
from tests.app.test_run import Daemon, create, ctr, pod, run_sync, sysfs, with_runtime

__all__ = ["sysfs"]  # the module-scoped fixture, shared with test_run


def fifo(path: Path) -> None:
    os.mkfifo(path)


def dev_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


@pytest.mark.parametrize(
    ("make", "kind"), [(fifo, "a FIFO"), (dev_zero, "a character device")], ids=["fifo", "zero"]
)
def test_a_special_file_as_config_exits_2_at_start(
    tmp_path: Path, sysfs: Path, make: object, kind: str
) -> None:
    config = tmp_path / "config.yaml"
    make(config)  # type: ignore[operator]
    daemon = run_sync(["--config-file", str(config)], tmp_path, sysfs)  # used to hang / OOM
    assert daemon.proc.returncode == 2
    (error,) = [r for r in daemon.records() if r["level"] == "error"]
    assert error["msg"] == (
        f"config file {config} is {kind}, not a regular file (refused without reading it)"
    )


def applied(daemon: Daemon) -> list[dict[str, object]]:
    return [r for r in daemon.records() if " applied; " in str(r["msg"])]


def big_config(entries: int) -> str:
    names = ", ".join(f"team-{n:06d}" for n in range(entries))
    return f"reservedResources: {{cpu: 750m}}\nreservedPoolNamespaces: [{names}]\n"


def test_reload_refuses_special_files_serves_meanwhile_and_stops_on_sigterm(
    tmp_path: Path, sysfs: Path
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("reservedResources: {cpu: 750m}\n")
    large = big_config(75_000)
    assert 800_000 < len(large) < (1 << 20)

    async def body(server: RuntimeServer) -> None:
        daemon = Daemon(tmp_path, sysfs, "--config-file", str(config), policy="topology-aware")
        try:
            peer = await server.next_peer(timeout=20)
            await peer.handshake(runtime_version="v1.7.24", nri_version="")
            await daemon.wait_for("registered with containerd")
            for make, kind in ((fifo, "a FIFO"), (dev_zero, "a character device")):
                config.unlink()
                make(config)
                daemon.proc.send_signal(signal.SIGHUP)
                line = await daemon.wait_for(f"not applied.*is {kind}")
                assert line["msg"].startswith("reload (SIGHUP): new configuration")
            big = tmp_path / "big.yaml"
            big.write_text(large)
            config.unlink()
            big.rename(config)
            daemon.proc.send_signal(signal.SIGHUP)
            await daemon.wait_for(r"reload \(SIGHUP\): configuration .* applied")
            # the namespaces apply: a pod of one of them runs on the reserved CPUs
            p = pod("infra")
            p.namespace = "team-074999"
            await peer.call(
                "RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=p), api_pb2.RunPodSandboxResponse
            )
            await create(peer, p, ctr("app", pod_name="infra"))
            decision = await daemon.wait_for("^decision$")
            assert "reserved" in decision["reason"]
            # while the large file is read again, the loop answers requests: the reply comes
            # before the reload's outcome (parsing it takes far longer than a create)
            config.write_text(large.replace("team-000000", "team-x00000"))
            daemon.proc.send_signal(signal.SIGHUP)
            reply = await create(peer, pod(), ctr("web-1"))
            assert reply.adjust.linux.resources.cpu.cpus
            assert len(applied(daemon)) == 1  # the second reload is still being parsed
            while len(applied(daemon)) < 2:
                await daemon.wait_for("^decision$")  # fails if the daemon exits meanwhile
                await asyncio.sleep(0.05)
            # a FIFO while the daemon waits for SIGTERM: it stops at once
            config.unlink()
            fifo(config)
            daemon.proc.send_signal(signal.SIGHUP)
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
            await daemon.wait_for("state saved to")
        finally:
            daemon.kill()
        assert "Traceback" not in daemon.text()

    with_runtime(tmp_path, body)
