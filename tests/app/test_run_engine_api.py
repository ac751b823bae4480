"""``nrirp run --engine-api`` / ``--nri-v01``: the composition builds the engine API's front and
nothing of NRI (no plugin, stub or plugin service), and readiness means the policy started with
a valid configuration and the engine API is served (``/readyz``, ``nrirp status``)."""

from __future__ import annotations

import asyncio
import json
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.app.daemon import DaemonContainer
from nrirp.app.daemon.engine_api import EngineApiService, use_engine_api
from nrirp.app.daemon.nri_front import NriFront
from tests.app.test_run import Daemon, sysfs
from tests.app.test_run_observability import aget, status, until
from tests.support.aio import arun

__all__ = ["sysfs"]  # the module-scoped fixture


def never(part: str) -> Any:
    def build(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError(f"the engine-API daemon built the NRI {part}")

    return providers.Callable(build)


@pytest.mark.parametrize("nri_v01", [False, True], ids=["engine-api", "nri-v01"])
def test_the_engine_api_modes_build_nothing_of_nri(
    tmp_path: Path, sysfs: Path, nri_v01: bool
) -> None:
    container = DaemonContainer()
    container.config.from_dict(
        {
            "policy": "template",
            "sysfs_root": str(sysfs),
            "state_dir": str(tmp_path / "state"),
            "cgroup_root": str(tmp_path / "cgroups"),
            "host_controls": [],
        }
    )
    for part in ("plugin", "stub", "service", "connection"):
        getattr(container, part).override(never(part))
    use_engine_api(container, str(tmp_path / "engine.sock"), nri_v01=nri_v01)
    front = container.front()
    assert isinstance(front, EngineApiService)
    assert front.name == ("engine API (NRI v0.1)" if nri_v01 else "engine API")
    manager = container.core.resource_manager()
    manager.start(None)
    health = container.observability().health
    assert health.serving is front.state
    assert not health.readiness().ok
    assert "engine API: not serving yet" in health.readiness().reasons
    container.config_state().loaded("defaults")
    front.start()
    enforcers = [t for t in threading.enumerate() if t.name == "nri-v01-enforcer"]
    assert len(enforcers) == (1 if nri_v01 else 0)
    try:
        ready = health.readiness()
        assert ready.ok, ready
        assert ready.reasons == (f"{front.state.serving()}",)
        report = front.state.report()
        assert report["kind"] == ("nri-v01" if nri_v01 else "engine-api")
        assert report["connected"] and str(tmp_path / "engine.sock") in report["runtime"]
    finally:
        front.server.stop(grace=0)
    for enforcer in enforcers:  # the server stopped: the enforcer ends (it spun at 100% CPU)
        enforcer.join(timeout=5)
        assert not enforcer.is_alive()
    front.state.ended()  # type: ignore[attr-defined]
    assert health.readiness().reasons[-1] == "engine API: stopped"


def test_the_nri_mode_builds_the_nri_front(tmp_path: Path, sysfs: Path) -> None:
    container = DaemonContainer()
    container.config.from_dict({"policy": "template", "sysfs_root": str(sysfs)})
    container.adapters.state_store.override(providers.Object(InMemoryStateStore()))
    front = container.front()
    assert isinstance(front, NriFront)
    assert front.name == "90-resource-manager" and front.state is container.connection()
    assert front.service is container.service() and front.stub is container.stub()


def test_an_engine_api_daemon_is_ready_once_the_api_is_served(tmp_path: Path, sysfs: Path) -> None:
    socket_path = tmp_path / "engine.sock"

    async def main() -> None:
        daemon = Daemon(
            tmp_path,
            sysfs,
            "--engine-api",
            "--engine-socket",
            str(socket_path),
            "--http-endpoint",
            "127.0.0.1:0",
            "--disable-agent",
            policy="template",
        )
        try:
            await daemon.wait_for("^serving the engine API on")
            port = (await daemon.wait_for("^serving /healthz"))["port"]
            text = await until(port, "/readyz", 200)
            assert f"engine API on {socket_path}: serving" in text
            report = json.loads((await aget(port, "/status"))[1])
            assert report["ready"] is True and report["plugin"] == "engine API"
            assert report["runtime"]["kind"] == "engine-api"
            shown = await asyncio.to_thread(status, daemon.state_dir)
            assert shown.returncode == 0, shown.stdout
            assert f"engine API on {socket_path}: serving" in shown.stdout
            daemon.proc.send_signal(signal.SIGTERM)
            assert await daemon.wait_exit() == 0
        finally:
            daemon.kill()
        assert "resource-manager" not in daemon.text()  # no NRI plugin was made or named

    arun(main, timeout=90)
