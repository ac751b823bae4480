"""Container updates: UpdateContainers from plugins, updates in event replies, the lock."""

from __future__ import annotations

import asyncio

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.cpuset import CPUSet
from nrirp.simruntime import (
    AdjustmentConflict,
    CallOutcome,
    ContainerSpec,
    ContainerState,
    InvalidAdjustment,
    PluginEventKind,
    PodSpec,
    Resources,
)
from tests.support.aio import arun

from .peers import ScriptedPlugin, ready, runtime

POD = PodSpec(
    "web",
    containers=[
        ContainerSpec("a", Resources.of(requests={"cpu": "1"}, limits={"cpu": "2"})),
        ContainerSpec("b"),
    ],
)


def cpus_update(container_id: str, cpus: str, *, ignore: bool = False) -> api_pb2.ContainerUpdate:
    update = api_pb2.ContainerUpdate(container_id=container_id, ignore_failure=ignore)
    update.linux.resources.cpu.cpus = cpus
    return update


def test_update_containers_applies_known_and_returns_unknown_as_failed() -> None:
    async def scenario() -> None:
        async with runtime(host_cpus=CPUSet.parse("0-7")) as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            _, (a, b) = await rt.run_pod(POD)
            memory = api_pb2.ContainerUpdate(container_id=b.id)
            memory.linux.resources.memory.limit.value = 256 << 20
            failed = await plugin.update_containers(
                [
                    cpus_update(a.id, "4-5"),
                    memory,
                    cpus_update("no-such-container", "1"),
                    cpus_update("also-missing", "1", ignore=True),
                ]
            )
            assert [f.container_id for f in failed] == ["no-such-container", "also-missing"]
            assert rt.container(a).resources.cpus == CPUSet.parse("4-5")
            assert rt.container(b).resources.memory_limit == 256 << 20
            (call,) = [c for c in rt.journal.calls if c.inbound]
            assert call.method == "UpdateContainers" and call.plugin == plugin.full_name
            await plugin.close()

    arun(scenario)


def test_updates_the_node_cannot_apply_fail_unless_ignored() -> None:
    async def scenario() -> None:
        async with runtime(host_cpus=CPUSet.parse("0-3")) as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            _, (a, b) = await rt.run_pod(POD)
            await rt.stop_container(b)
            failed = await plugin.update_containers(
                [
                    cpus_update(a.id, "6"),  # not on this node
                    cpus_update(a.id, "x-y"),  # not a cpuset
                    cpus_update(b.id, "1"),  # stopped
                    cpus_update(a.id, "7", ignore=True),
                ]
            )
            assert [f.linux.resources.cpu.cpus for f in failed] == ["6", "x-y", "1"]
            assert rt.container(a).resources.cpus is None  # unchanged
            await plugin.close()

    arun(scenario)


def test_updates_only_carry_what_cri_carries() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin()
            await ready(rt, plugin)
            _, (a, _b) = await rt.run_pod(POD)
            before = rt.container(a).resources
            update = cpus_update(a.id, "1")
            resources = update.linux.resources
            resources.cpu.quota.value = 0  # zero: unchanged
            resources.memory.reservation.value = 1 << 20  # not in CRI updates
            resources.blockio_class.value = "slow"
            assert await plugin.update_containers([update]) == []
            after = rt.container(a).resources
            assert str(after.cpus) == "1"
            assert after.cpu_quota == before.cpu_quota == 200_000
            assert after.memory_reservation is None and after.blockio_class is None
            await plugin.close()

    arun(scenario)


def test_updates_in_create_replies_reach_other_containers() -> None:
    async def squeeze(request: api_pb2.CreateContainerRequest) -> api_pb2.CreateContainerResponse:
        reply = api_pb2.CreateContainerResponse()
        if request.container.name == "b":
            reply.update.append(cpus_update(first_id[0], "3"))
            reply.update.append(cpus_update("vanished", "3"))
        return reply

    first_id: list[str] = []

    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(handlers={"CreateContainer": squeeze})
            await ready(rt, plugin)
            pod = await rt.run_pod_sandbox(POD)
            a = await rt.create_container(pod, "a")
            first_id.append(a.id)
            b = await rt.create_container(pod, "b")
            assert str(rt.container(a).resources.cpus) == "3"
            op = next(o for o in rt.journal.operations if o.target == b.id)
            assert op.failed_updates == ("vanished",)
            await plugin.close()

    arun(scenario)


def test_kubelet_update_goes_through_plugins_which_may_change_it() -> None:
    async def adjust(request: api_pb2.UpdateContainerRequest) -> api_pb2.UpdateContainerResponse:
        reply = api_pb2.UpdateContainerResponse()
        reply.update.append(cpus_update(request.container.id, "1"))
        return reply

    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin(handlers={"UpdateContainer": adjust})
            await ready(rt, plugin)
            _, (a, _b) = await rt.run_pod(POD)
            resized = Resources.of(requests={"cpu": "1500m"}, limits={"cpu": "3"})
            after = await rt.update_container(a, resized)
            assert after.resources.cpu_shares == 1536
            assert after.resources.cpu_quota == 300_000
            assert str(after.resources.cpus) == "1"  # the plugin's change
            assert after.spec.resources == resized
            (request,) = plugin.requests_of("UpdateContainer")
            assert request.linux_resources.cpu.shares.value == 1536
            assert plugin.events_seen()[-1] == "PostUpdateContainer"
            await plugin.close()

    arun(scenario)


def test_conflicting_updates_fail_the_kubelet_update_and_change_nothing() -> None:
    def setter(cpus: str):  # type: ignore[no-untyped-def]
        async def handle(
            request: api_pb2.UpdateContainerRequest,
        ) -> api_pb2.UpdateContainerResponse:
            reply = api_pb2.UpdateContainerResponse()
            reply.update.append(cpus_update(request.container.id, cpus))
            return reply

        return handle

    async def scenario() -> None:
        async with runtime() as rt:
            one = ScriptedPlugin("one", "10", handlers={"UpdateContainer": setter("1")})
            two = ScriptedPlugin("two", "20", handlers={"UpdateContainer": setter("2")})
            await ready(rt, one, two)
            _, (a, _b) = await rt.run_pod(POD)
            with pytest.raises(AdjustmentConflict, match='"20-two" and "10-one"'):
                await rt.update_container(a, Resources.of(requests={"cpu": "1"}))
            assert rt.container(a).resources == a.resources
            for plugin in (one, two):
                await plugin.close()

    arun(scenario)


def test_update_containers_from_inside_a_handler_deadlocks_until_the_timeout() -> None:
    """The runtime holds its lock while it waits for CreateContainer; the plugin's
    UpdateContainers waits for that lock: the plugin is dropped after the request timeout, the
    container is created without it, and the update is applied once the lock is free."""

    async def scenario() -> None:
        async with runtime(request_timeout=0.3) as rt:
            plugin: ScriptedPlugin

            async def naive(
                request: api_pb2.CreateContainerRequest,
            ) -> api_pb2.CreateContainerResponse:
                if request.container.name == "b":
                    await plugin.update_containers([cpus_update(first[0], "1")])
                reply = api_pb2.CreateContainerResponse()
                reply.adjust.linux.resources.cpu.cpus = "0"
                return reply

            plugin = ScriptedPlugin(handlers={"CreateContainer": naive})
            first: list[str] = []
            await ready(rt, plugin)
            pod = await rt.run_pod_sandbox(POD)
            a = await rt.create_container(pod, "a")
            first.append(a.id)
            loop = asyncio.get_running_loop()
            started = loop.time()
            b = await rt.create_container(pod, "b")
            assert loop.time() - started >= 0.3
            assert b.resources.cpus is None  # created without the dropped plugin
            assert b.state is ContainerState.CREATED
            await rt.wait_plugin(plugin.full_name, PluginEventKind.CLOSED)
            fatal = [c for c in rt.journal.calls if c.outcome is CallOutcome.FATAL]
            assert [c.method for c in fatal] == ["CreateContainer"]
            # like Go's handler goroutine, the update still lands after the lock is released
            await rt.journal.wait_for(lambda: any(c.inbound for c in rt.journal.calls), 5)
            assert str(rt.container(a).resources.cpus) == "1"

    arun(scenario)


def test_update_containers_after_the_reply_does_not_block() -> None:
    async def scenario() -> None:
        async with runtime(request_timeout=0.5) as rt:
            tasks: list[asyncio.Task[list[api_pb2.ContainerUpdate]]] = []
            plugin: ScriptedPlugin

            async def polite(request: api_pb2.CreateContainerRequest) -> None:
                if request.container.name == "b":
                    update = cpus_update(first[0], "1")
                    tasks.append(asyncio.create_task(plugin.update_containers([update])))

            plugin = ScriptedPlugin(handlers={"CreateContainer": polite})
            first: list[str] = []
            await ready(rt, plugin)
            pod = await rt.run_pod_sandbox(POD)
            first.append((await rt.create_container(pod, "a")).id)
            loop = asyncio.get_running_loop()
            started = loop.time()
            await rt.create_container(pod, "b")
            assert await tasks[0] == []
            assert loop.time() - started < 0.3
            assert str(rt.container(first[0]).resources.cpus) == "1"
            assert rt.plugin(plugin.full_name).close_reason is None
            await plugin.close()

    arun(scenario)


def test_a_cpuset_outside_the_node_fails_creation_like_runc() -> None:
    async def pin(_request: object) -> api_pb2.CreateContainerResponse:
        reply = api_pb2.CreateContainerResponse()
        reply.adjust.linux.resources.cpu.cpus = "12-15"
        return reply

    async def scenario() -> None:
        async with runtime(host_cpus=CPUSet.parse("0-7")) as rt:
            plugin = ScriptedPlugin(handlers={"CreateContainer": pin})
            await ready(rt, plugin)
            pod = await rt.run_pod_sandbox(POD)
            with pytest.raises(InvalidAdjustment, match="not a subset of the node's cpus '0-7'"):
                await rt.create_container(pod, "a")
            assert rt.containers() == []
            assert plugin.events_seen()[-2:] == ["StopContainer", "RemoveContainer"]
            await plugin.close()

    arun(scenario)
