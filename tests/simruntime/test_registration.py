"""Plugins joining: registration checks and timeout, Configure per NRI release, event masks."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import TtrpcError
from nrirp.simruntime import (
    ContainerSpec,
    PluginEventKind,
    PluginKind,
    PluginState,
    PodSpec,
    SimRuntime,
)
from tests.support.aio import arun

from .peers import ScriptedPlugin, mask, ready, runtime


def _rejection(rt: SimRuntime) -> str:
    rejected = [e for e in rt.journal.events if e.kind is PluginEventKind.REJECTED]
    assert len(rejected) == 1, rt.journal.events
    return rejected[0].detail


@pytest.mark.parametrize(
    ("name", "index", "version", "reply", "reason"),
    [
        ("", "10", "v0.6.1", "invalid (empty) plugin name", "registered empty name"),
        (
            "ok",
            "1",
            "v0.6.1",
            'invalid plugin index: invalid plugin index "1", must be 2 digits',
            'plugin "ok" registered invalid index',
        ),
        (
            "ok",
            "a1",
            "v0.12.2",
            'invalid plugin index: invalid plugin index "a1" (not [0-9][0-9])',
            "registered invalid index",
        ),
        (
            "bad name",
            "10",
            "v0.12.2",
            'invalid plugin name "bad name", must match [A-Za-z0-9_.+-]+',
            'plugin "bad name" registered invalid plugin name',
        ),
    ],
)
def test_invalid_registration_is_refused_and_the_connection_closed(
    name: str, index: str, version: str, reply: str, reason: str
) -> None:
    async def scenario() -> None:
        async with runtime(nri_version=version) as rt:
            plugin = ScriptedPlugin(name, index)
            await plugin.attach(rt, register=False)
            with pytest.raises(TtrpcError) as refused:
                await plugin.register()
            assert refused.value.message == reply
            await asyncio.wait_for(plugin.closed.wait(), 5)
            assert reason in _rejection(rt)
            assert plugin.seen() == []  # never configured
            assert rt.active_plugins() == []
            assert rt.plugins()[0].state is PluginState.CLOSED

    arun(scenario)


def test_name_syntax_is_only_checked_from_v0_12() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1") as rt:
            plugin = ScriptedPlugin("odd name!", "10")
            await ready(rt, plugin)
            assert [p.name for p in rt.active_plugins()] == ["10-odd name!"]
            await plugin.close()

    arun(scenario)


def test_registration_timeout_drops_a_silent_plugin_and_unblocks_the_next() -> None:
    async def scenario() -> None:
        async with runtime(registration_timeout=0.3) as rt:
            silent = ScriptedPlugin("silent", "10")
            await silent.attach(rt, register=False)
            late = ScriptedPlugin("late", "20")
            await late.attach(rt, register=False)
            # Go starts accepted plugins one at a time: the second one waits for the first
            registering = asyncio.create_task(late.register())
            await asyncio.wait_for(silent.closed.wait(), 5)
            await registering
            await rt.wait_plugin("20-late")
            assert "plugin registration timed out" in _rejection(rt)
            assert [p.name for p in rt.active_plugins()] == ["20-late"]
            # the mechanism, read from the runtime's own journal (one clock): the silent
            # plugin was dropped by its timer, armed after it connected, and the late one
            # registered only once the silent one's turn had ended
            events = rt.journal.events
            connected = next(e for e in events if e.kind is PluginEventKind.CONNECTED)
            rejected = next(e for e in events if e.kind is PluginEventKind.REJECTED)
            registered = next(e for e in events if e.kind is PluginEventKind.REGISTERED)
            assert connected.seq < rejected.seq < registered.seq
            assert registered.plugin == "20-late"
            assert rejected.at - connected.at >= 0.3
            await late.close()

    arun(scenario)


@pytest.mark.parametrize(
    ("version", "timeouts", "nri_version", "runtime_version"),
    [
        ("v0.6.1", (0, 0), "", "v1.7.24"),
        ("v0.8.0", (5000, 2000), "", "v2.1.0"),
        ("v0.12.2", (5000, 2000), "v0.12.2", "v2.3.0"),
    ],
)
def test_configure_carries_what_the_release_sends(
    version: str, timeouts: tuple[int, int], nri_version: str, runtime_version: str
) -> None:
    async def scenario() -> None:
        async with runtime(nri_version=version) as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            (request,) = plugin.requests_of("Configure")
            assert request.runtime_name == "containerd"
            assert request.runtime_version == runtime_version
            assert (request.registration_timeout, request.request_timeout) == timeouts
            assert request.NRI_version == nri_version
            assert request.config == ""  # external plugins get no config
            await plugin.close()

    arun(scenario)


def test_runtime_name_version_and_timeouts_are_configurable() -> None:
    async def scenario() -> None:
        options = {"runtime_name": "cri-o", "runtime_version": "1.31.0", "request_timeout": 0.75}
        async with runtime(**options) as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            (request,) = plugin.requests_of("Configure")
            assert (request.runtime_name, request.runtime_version) == ("cri-o", "1.31.0")
            assert request.request_timeout == 750
            await plugin.close()

    arun(scenario)


@pytest.mark.parametrize(
    ("version", "events", "outcome"),
    [
        ("v0.6.1", 0, 0x7FF),
        ("v0.6.1", 0x7FF, 0x7FF),
        ("v0.6.1", 0x8 | 0x800, "invalid plugin events: 0x800"),  # UpdatePodSandbox: NRI 0.10
        ("v0.8.0", 0x2000, "invalid plugin events: 0x2000"),
        ("v0.10.0", 0x3FFF, 0x3FFF),
        ("v0.12.2", 0, 0x3FFF),
        ("v0.12.2", 0x4001, "invalid plugin events: 0x4000"),
        ("v0.12.2", -1, "invalid plugin events: 0xffffc000"),
    ],
)
def test_event_masks_outside_the_valid_events_are_refused(
    version: str, events: int, outcome: int | str
) -> None:
    async def scenario() -> None:
        async with runtime(nri_version=version) as rt:
            plugin = ScriptedPlugin(events=events)
            await plugin.attach(rt)
            if isinstance(outcome, str):
                await asyncio.wait_for(plugin.closed.wait(), 5)
                assert _rejection(rt) == outcome
                assert plugin.seen("Synchronize") == []
            else:
                info = await rt.wait_plugin(plugin.full_name)
                assert info.events == outcome
                await plugin.close()

    arun(scenario)


def test_configure_error_refuses_the_plugin() -> None:
    async def refuse(_request: api_pb2.ConfigureRequest) -> None:
        raise TtrpcError(2, "no thanks")

    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(handlers={"Configure": refuse})
            await plugin.attach(rt)
            await asyncio.wait_for(plugin.closed.wait(), 5)
            assert _rejection(rt) == "failed to configure plugin: no thanks"

    arun(scenario)


def test_external_plugin_on_the_socket_path_is_synchronized(tmp_path: Path) -> None:
    socket_path = tmp_path / "run" / "nri.sock"

    async def scenario() -> None:
        async with runtime(socket_path=socket_path) as rt:
            assert (socket_path.parent.stat().st_mode & 0o777) == 0o700
            pod = await rt.run_pod_sandbox(PodSpec("web", containers=[ContainerSpec("app")]))
            await rt.create_container(pod, "app")
            plugin = ScriptedPlugin("watcher", "07")
            await plugin.connect(str(socket_path))
            info = await rt.wait_plugin("07-watcher")
            assert info.kind is PluginKind.EXTERNAL
            assert info.pid is not None and info.pid > 0  # SO_PEERCRED: this very process
            (sync,) = plugin.requests_of("Synchronize")
            assert [p.name for p in sync.pods] == ["web"]
            assert [c.name for c in sync.containers] == ["app"]
            assert not sync.more
            await plugin.close()
            await rt.wait_plugin("07-watcher", PluginEventKind.CLOSED)
            assert rt.active_plugins() == []
        assert not socket_path.exists()

    arun(scenario)


def test_registered_nri_version_is_recorded_and_a_second_registration_is_harmless() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(nri_version="v0.12.2")
            await ready(rt, plugin)
            await plugin.register()
            assert rt.plugin(plugin.full_name).nri_version == "v0.12.2"
            assert plugin.seen("Configure") == ["Configure"]
            await plugin.close()

    arun(scenario)


def test_plugins_are_called_in_index_order_as_strings() -> None:
    subscribe = mask(api_pb2.RUN_POD_SANDBOX)

    async def scenario() -> None:
        async with runtime() as rt:
            order: list[str] = []

            def recorder(tag: str):  # type: ignore[no-untyped-def]
                async def handle(_request: object) -> None:
                    order.append(tag)

                return handle

            plugins = [
                ScriptedPlugin(
                    tag, index, events=subscribe, handlers={"RunPodSandbox": recorder(tag)}
                )
                for tag, index in (("c", "90"), ("a", "05"), ("b", "10"), ("a2", "05"))
            ]
            await ready(rt, *plugins)
            assert [p.name for p in rt.active_plugins()] == ["05-a", "05-a2", "10-b", "90-c"]
            await rt.run_pod_sandbox(PodSpec("p"))
            assert order == ["a", "a2", "b", "c"]
            for plugin in plugins:
                await plugin.close()

    arun(scenario)


def test_wait_plugins_returns_once_enough_plugins_receive_events() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            plugins = [ScriptedPlugin("b", "20"), ScriptedPlugin("a", "10")]
            for plugin in plugins:
                await plugin.attach(rt)
            infos = await rt.wait_plugins(2)
            assert [p.name for p in infos] == ["10-a", "20-b"]
            assert all(p.state is PluginState.READY for p in infos)
            with pytest.raises(TimeoutError):
                await rt.wait_plugins(3, timeout=0.05)
            for plugin in plugins:
                await plugin.close()

    arun(scenario)


def test_a_restart_drops_plugins_removes_the_socket_and_keeps_the_containers(
    tmp_path: Path,
) -> None:
    socket_path = tmp_path / "nri.sock"

    async def scenario() -> None:
        async with runtime(socket_path=socket_path) as rt:
            await rt.run_pod(PodSpec("web", containers=[ContainerSpec("app")]))
            before = ScriptedPlugin("watcher", "07")
            await before.connect(str(socket_path))
            await rt.wait_plugin("07-watcher")
            restarting = asyncio.create_task(rt.restart(downtime=0.2))
            await rt.wait_plugin("07-watcher", PluginEventKind.CLOSED)
            await asyncio.sleep(0.1)
            assert not socket_path.exists()  # down: the socket is gone
            await restarting
            assert socket_path.exists() and rt.plugins() == []
            after = ScriptedPlugin("watcher", "07")
            await after.connect(str(socket_path))
            synced = PluginEventKind.SYNCHRONIZED
            await rt.journal.wait_for(lambda: sum(e.kind is synced for e in rt.journal.events) == 2)
            (sync,) = after.requests_of("Synchronize")
            assert [c.name for c in sync.containers] == ["app"]  # kept running
            await before.close()
            await after.close()

    arun(scenario)
