"""Pre-launched plugins: containerd's exact process setup, and failures that kill the plugin."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from nrirp.simruntime import (
    InvalidRequest,
    PluginEventKind,
    PluginKind,
    PluginStartError,
    PluginState,
    PodSpec,
)
from tests.support.aio import arun

from .peers import runtime

PROBE = """\
import asyncio, json, os, stat, sys
out = sys.argv[1]
info = {
    "env": dict(os.environ),
    "fd3_is_socket": stat.S_ISSOCK(os.fstat(3).st_mode),
    "stdout_is_devnull": os.path.realpath("/proc/self/fd/1") == "/dev/null",
    "argv": sys.argv[1:],
}
with open(out, "w") as f:
    json.dump(info, f)
if "--silent" in sys.argv:
    import time
    time.sleep(60)
if "--serve" in sys.argv:
    from nrirp.adapters.nri.stub import Plugin, Stub

    class Quiet(Plugin):
        async def run_pod_sandbox(self, pod):
            pass

    asyncio.run(Stub(Quiet(), name="ignored", index="99").run())
"""


@pytest.fixture
def probe(tmp_path: Path) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(PROBE)
    return path


def read_report(path: Path) -> dict[str, object]:
    report: dict[str, object] = json.loads(path.read_text())
    return report


def test_the_plugin_gets_exactly_what_containerd_gives(probe: Path, tmp_path: Path) -> None:
    report = tmp_path / "report.json"

    async def scenario() -> None:
        async with runtime() as rt:
            command = [sys.executable, "-I", str(probe), str(report), "--serve"]
            info = await rt.spawn_plugin(command, "probe", "07", "cfg")
            # the registered identity ("99-ignored") does not count for pre-launched plugins
            assert info.name == "07-probe" and info.state is PluginState.READY
            assert info.kind is PluginKind.PRELAUNCHED
            (configure,) = [c.request for c in rt.journal.calls if c.method == "Configure"]
            assert configure.config == "cfg"
            await rt.run_pod_sandbox(PodSpec("p"))
            assert [c.event for c in rt.journal.calls_to("07-probe")][-1] == "RunPodSandbox"
            assert info.pid is not None
            pid = info.pid
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)  # closing the runtime killed and reaped it

    arun(scenario)
    found = read_report(report)
    env = found["env"]
    assert isinstance(env, dict)
    env.pop("LC_CTYPE", None)  # Python's own locale coercion adds this in the child
    assert env == {"NRI_PLUGIN_NAME": "probe", "NRI_PLUGIN_IDX": "07", "NRI_PLUGIN_SOCKET": "3"}
    assert found["fd3_is_socket"] is True
    assert found["stdout_is_devnull"] is True
    assert found["argv"] == [str(report), "--serve"]


def test_a_plugin_that_does_not_register_in_time_is_killed(probe: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with runtime(registration_timeout=0.5) as rt:
            command = [sys.executable, "-I", str(probe), str(tmp_path / "r.json"), "--silent"]
            with pytest.raises(PluginStartError, match="plugin registration timed out"):
                await rt.spawn_plugin(command, "silent", "08")
            (plugin,) = rt.plugins()
            assert plugin.close_reason == "plugin registration timed out"
            assert [e.kind for e in rt.journal.events] == [
                PluginEventKind.CONNECTED,
                PluginEventKind.REJECTED,
                PluginEventKind.CLOSED,
            ]
            assert plugin.pid is not None
            with pytest.raises(ProcessLookupError):
                os.kill(plugin.pid, 0)  # killed and reaped at once

    arun(scenario)


def test_a_plugin_that_exits_at_once_is_refused(probe: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            command = [sys.executable, "-I", str(probe), str(tmp_path / "r.json")]
            with pytest.raises(PluginStartError, match="connection closed"):
                await rt.spawn_plugin(command, "quitter", "08")
            assert rt.active_plugins() == []
            await rt.run_pod_sandbox(PodSpec("p"))  # the runtime carries on

    arun(scenario)


@pytest.mark.parametrize(
    ("command", "name", "index", "error"),
    [
        (["/nonexistent/plugin"], "x", "10", PluginStartError),
        ([], "x", "10", PluginStartError),
        (["/bin/true"], "x", "1", InvalidRequest),
        (["/bin/true"], "", "10", InvalidRequest),
    ],
)
def test_bad_spawn_requests_are_refused_before_starting_anything(
    command: list[str], name: str, index: str, error: type[Exception]
) -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            with pytest.raises(error):
                await rt.spawn_plugin(command, name, index)
            assert rt.plugins() == []

    arun(scenario)
