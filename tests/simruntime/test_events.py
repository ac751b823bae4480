"""Event delivery: subscriptions, StateChange vs dedicated RPCs, timeouts, plugin errors."""

from __future__ import annotations

import asyncio

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import TtrpcError
from nrirp.simruntime import (
    AdjustmentConflict,
    CallOutcome,
    ContainerSpec,
    ContainerState,
    PluginEventKind,
    PluginFailed,
    PodSpec,
    Resources,
    SimRuntime,
)
from tests.support.aio import arun

from .peers import ScriptedPlugin, mask, ready, runtime

POD = PodSpec("web", containers=[ContainerSpec("app", Resources.of(requests={"cpu": "500m"}))])

LIFECYCLE = [
    "RUN_POD_SANDBOX",
    "CreateContainer",
    "POST_CREATE_CONTAINER",
    "START_CONTAINER",
    "POST_START_CONTAINER",
    "UpdateContainer",
    "POST_UPDATE_CONTAINER",
    "StopContainer",
    "STOP_POD_SANDBOX",
    "REMOVE_CONTAINER",
    "REMOVE_POD_SANDBOX",
]


async def _lifecycle(rt: SimRuntime) -> None:
    pod, (ctr,) = await rt.run_pod(POD)
    await rt.update_container(ctr, Resources.of(requests={"cpu": "1"}))
    await rt.delete_pod(pod)


def test_v0_6_delivers_every_non_adjusting_event_as_state_change() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1") as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            await _lifecycle(rt)
            assert plugin.events_seen() == LIFECYCLE
            assert set(plugin.seen()) == {
                "Configure",
                "Synchronize",
                "StateChange",
                "CreateContainer",
                "UpdateContainer",
                "StopContainer",
            }
            await plugin.close()

    arun(scenario)


def test_v0_12_uses_dedicated_rpcs() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.12.2") as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            await _lifecycle(rt)
            assert "StateChange" not in plugin.seen()
            assert plugin.seen()[2:] == [
                "RunPodSandbox",
                "CreateContainer",
                "ValidateContainerAdjustment",  # mask 0 = every valid event, 14 included
                "PostCreateContainer",
                "StartContainer",
                "PostStartContainer",
                "UpdateContainer",
                "PostUpdateContainer",
                "StopContainer",
                "StopPodSandbox",
                "RemoveContainer",
                "RemovePodSandbox",
            ]
            assert not rt.plugin(plugin.full_name).state_change_fallback
            await plugin.close()

    arun(scenario)


def test_v0_12_falls_back_to_state_change_for_good_after_unimplemented() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.12.2") as rt:
            # serves what a v0.6 Go stub serves, and subscribes like one
            old_style = {
                name: _empty
                for name in ("StateChange", "CreateContainer", "UpdateContainer", "StopContainer")
            }
            plugin = ScriptedPlugin(events=0x7FF, defaults=False, handlers=old_style)
            await ready(rt, plugin)
            await _lifecycle(rt)
            assert plugin.events_seen() == LIFECYCLE
            info = rt.plugin(plugin.full_name)
            assert info.state_change_fallback
            fallbacks = [c for c in rt.journal.calls if c.outcome is CallOutcome.FALLBACK]
            assert [(c.method, c.code) for c in fallbacks] == [("RunPodSandbox", 12)]
            assert fallbacks[0].error == "method RunPodSandbox"
            await plugin.close()

    arun(scenario)


async def _empty(_request: object) -> None:
    return None


def test_only_subscribed_events_are_delivered() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(events=mask(api_pb2.CREATE_CONTAINER, api_pb2.REMOVE_CONTAINER))
            await ready(rt, plugin)
            await _lifecycle(rt)
            assert plugin.events_seen() == ["CreateContainer", "RemoveContainer"]
            await plugin.close()

    arun(scenario)


def test_request_timeout_drops_the_plugin_and_the_container_is_created_without_it() -> None:
    async def stall(_request: object) -> None:
        await asyncio.sleep(30)

    async def pin(_request: object) -> api_pb2.CreateContainerResponse:
        reply = api_pb2.CreateContainerResponse()
        reply.adjust.linux.resources.cpu.cpus = "1"
        return reply

    async def scenario() -> None:
        async with runtime(request_timeout=0.2) as rt:
            slow = ScriptedPlugin("slow", "10", handlers={"CreateContainer": stall})
            pinner = ScriptedPlugin("pinner", "20", handlers={"CreateContainer": pin})
            await ready(rt, slow, pinner)
            pod = await rt.run_pod_sandbox(POD)
            loop = asyncio.get_running_loop()
            started = loop.time()
            ctr = await rt.create_container(pod, "app")
            assert 0.2 <= loop.time() - started < 2
            assert ctr.state is ContainerState.CREATED
            assert str(ctr.resources.cpus) == "1"  # the next plugin still ran
            await asyncio.wait_for(slow.closed.wait(), 5)
            assert [p.name for p in rt.active_plugins()] == ["20-pinner"]
            timed_out = [
                c for c in rt.journal.calls_to("10-slow") if c.outcome is CallOutcome.FATAL
            ]
            assert [(c.method, c.code) for c in timed_out] == [("CreateContainer", 4)]
            closed = [e for e in rt.journal.events if e.kind is PluginEventKind.CLOSED]
            assert closed[0].plugin == "10-slow"
            assert "CreateContainer" in closed[0].detail
            # later events skip the dropped plugin
            await rt.start_container(ctr)
            assert slow.seen("StartContainer") == []
            assert pinner.seen("StartContainer") == ["StartContainer"]
            await pinner.close()

    arun(scenario)


def test_plugin_error_fails_create_and_nothing_is_created() -> None:
    async def refuse(_request: object) -> None:
        raise TtrpcError(2, "no CPUs left")

    async def scenario() -> None:
        async with runtime() as rt:
            picky = ScriptedPlugin("picky", "10", handlers={"CreateContainer": refuse})
            after = ScriptedPlugin("after", "20", handlers={"CreateContainer": _empty})
            await ready(rt, picky, after)
            pod = await rt.run_pod_sandbox(POD)
            with pytest.raises(PluginFailed) as failed:
                await rt.create_container(pod, "app")
            assert failed.value.plugin == "10-picky"
            assert "no CPUs left" in str(failed.value)
            assert rt.containers() == []
            assert rt.pod(pod).container_ids == ()
            assert after.seen("CreateContainer") == []  # delivery stopped at the error
            # containerd's undo: plugins hear StopContainer and RemoveContainer for it
            assert picky.events_seen()[-2:] == ["StopContainer", "RemoveContainer"]
            (op,) = [o for o in rt.journal.operations if o.operation == "CreateContainer"]
            assert op.error is not None and "no CPUs left" in op.error
            # the plugin stays: its own errors are not fatal
            assert [p.name for p in rt.active_plugins()] == ["10-picky", "20-after"]
            await picky.close()
            await after.close()

    arun(scenario)


@pytest.mark.parametrize("event", ["RunPodSandbox", "StartContainer"])
def test_errors_of_pre_events_fail_the_operation(event: str) -> None:
    async def refuse(_request: object) -> None:
        raise TtrpcError(2, f"refusing {event}")

    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(handlers={event: refuse})
            await ready(rt, plugin)
            if event == "RunPodSandbox":
                with pytest.raises(PluginFailed, match=f"refusing {event}"):
                    await rt.run_pod_sandbox(POD)
                assert rt.pods() == []
            else:
                pod = await rt.run_pod_sandbox(POD)
                ctr = await rt.create_container(pod, "app")
                with pytest.raises(PluginFailed, match=f"refusing {event}"):
                    await rt.start_container(ctr)
                assert rt.container(ctr).state is ContainerState.CREATED
            await plugin.close()

    arun(scenario)


@pytest.mark.parametrize(
    "event", ["PostCreateContainer", "StopContainer", "RemoveContainer", "StopPodSandbox"]
)
def test_errors_of_notifications_are_only_recorded(event: str) -> None:
    async def refuse(_request: object) -> None:
        raise TtrpcError(2, f"grumble about {event}")

    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(handlers={event: refuse})
            await ready(rt, plugin)
            pod, _ = await rt.run_pod(POD)
            await rt.delete_pod(pod)
            assert rt.pods() == [] and rt.containers() == []
            errors = [c for c in rt.journal.calls if c.outcome is CallOutcome.ERROR]
            assert [(c.method, c.error) for c in errors] == [(event, f"grumble about {event}")]
            await plugin.close()

    arun(scenario)


def test_a_plugin_that_disconnects_is_skipped_at_the_next_event() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            gone = ScriptedPlugin("gone", "10")
            stays = ScriptedPlugin("stays", "20")
            await ready(rt, gone, stays)
            await gone.close()
            await rt.wait_plugin("10-gone", PluginEventKind.CLOSED)
            await rt.run_pod(POD)
            assert gone.events_seen() == []
            assert stays.events_seen()[:2] == ["RunPodSandbox", "CreateContainer"]
            await stays.close()

    arun(scenario)


def test_two_plugins_setting_the_cpuset_fail_the_container() -> None:
    def pin(cpus: str):  # type: ignore[no-untyped-def]
        async def handle(_request: object) -> api_pb2.CreateContainerResponse:
            reply = api_pb2.CreateContainerResponse()
            reply.adjust.linux.resources.cpu.cpus = cpus
            return reply

        return handle

    async def scenario() -> None:
        async with runtime() as rt:
            first = ScriptedPlugin("first", "10", handlers={"CreateContainer": pin("0")})
            second = ScriptedPlugin("second", "20", handlers={"CreateContainer": pin("1")})
            await ready(rt, first, second)
            pod = await rt.run_pod_sandbox(POD)
            with pytest.raises(AdjustmentConflict) as conflict:
                await rt.create_container(pod, "app")
            assert str(conflict.value) == (
                'plugins "20-second" and "10-first" both tried to set CPU pinning'
            )
            assert rt.containers() == []
            # both plugins stay: a conflict is nobody's fatal error
            assert [p.name for p in rt.active_plugins()] == ["10-first", "20-second"]
            for plugin in (first, second):
                assert plugin.events_seen()[-3:] == [
                    "CreateContainer",
                    "StopContainer",
                    "RemoveContainer",
                ]
                await plugin.close()

    arun(scenario)
