"""Synchronize: whole or split into ``more`` chunks, the reply protocol, one deadline for all."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import OversizedMessage
from nrirp.simruntime import (
    ContainerSpec,
    PluginEventKind,
    PluginState,
    PodSpec,
    SimRuntime,
)
from nrirp.simruntime.sync import SyncFailed, shrink
from tests.support.aio import arun

from .peers import ScriptedPlugin, runtime


async def populate(rt: SimRuntime, pods: int, per_pod: int) -> None:
    for p in range(pods):
        spec = PodSpec(f"pod{p}", containers=[ContainerSpec(f"c{c}") for c in range(per_pod)])
        await rt.run_pod(spec)


def rejection(rt: SimRuntime) -> str:
    return next(e.detail for e in rt.journal.events if e.kind is PluginEventKind.REJECTED)


def test_large_state_is_split_into_chunks_that_add_up() -> None:
    async def scenario() -> None:
        async with runtime(sync_size_limit=40_000) as rt:
            await populate(rt, 10, 6)
            plugin = ScriptedPlugin()
            await plugin.attach(rt)
            info = await rt.wait_plugin(plugin.full_name)
            assert info.state is PluginState.READY
            chunks = plugin.requests_of("Synchronize")
            assert len(chunks) > 2
            assert [c.more for c in chunks] == [True] * (len(chunks) - 1) + [False]
            assert all(c.ByteSize() <= 40_000 for c in chunks)
            pods = [p.id for c in chunks for p in c.pods]
            containers = [c.id for chunk in chunks for c in chunk.containers]
            assert pods == [p.id for p in rt.pods()]  # each once, in order
            assert containers == [c.id for c in rt.containers()]
            # only the oversized attempts failed, each refused before sending
            refused = [c for c in rt.journal.calls if c.method == "Synchronize" and c.code == 8]
            assert refused and all(c.duration < 1 for c in refused)
            await plugin.close()

    arun(scenario)


def test_old_releases_send_one_message_and_fail_when_it_is_too_big() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1", sync_size_limit=40_000) as rt:
            await populate(rt, 10, 6)
            plugin = ScriptedPlugin()
            await plugin.attach(rt)
            await rt.wait_plugin(plugin.full_name, PluginEventKind.REJECTED)
            assert "failed to synchronize plugin" in rejection(rt)
            assert "exceed maximum message size of 40000" in rejection(rt)
            assert plugin.requests_of("Synchronize") == []
            # NRI 0.6 leaves the connection open, just never uses it
            assert rt.plugin(plugin.full_name).state is PluginState.STALE
            assert not plugin.closed.is_set()
            await rt.run_pod(PodSpec("later", containers=[ContainerSpec("c")]))
            assert plugin.events_seen() == []
            await plugin.close()

    arun(scenario)


def test_old_releases_send_small_state_whole() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.6.1") as rt:
            await populate(rt, 3, 2)
            plugin = ScriptedPlugin()
            await plugin.attach(rt)
            await rt.wait_plugin(plugin.full_name)
            (sync,) = plugin.requests_of("Synchronize")
            assert (len(sync.pods), len(sync.containers), sync.more) == (3, 6, False)
            await plugin.close()

    arun(scenario)


@pytest.mark.parametrize("misbehaviour", ["no more", "updates"])
def test_a_plugin_breaking_the_more_protocol_is_refused_and_closed(misbehaviour: str) -> None:
    async def bad_sync(request: api_pb2.SynchronizeRequest) -> api_pb2.SynchronizeResponse:
        if misbehaviour == "no more":
            return api_pb2.SynchronizeResponse()  # a plugin unaware of chunks
        reply = api_pb2.SynchronizeResponse(more=request.more)
        reply.update.add(container_id=request.containers[0].id)
        return reply

    async def scenario() -> None:
        async with runtime(sync_size_limit=40_000) as rt:
            await populate(rt, 10, 6)
            plugin = ScriptedPlugin(handlers={"Synchronize": bad_sync})
            await plugin.attach(rt)
            await asyncio.wait_for(plugin.closed.wait(), 5)
            assert rejection(rt) == (
                "failed to synchronize plugin: plugin does not handle split sync requests"
            )
            assert len(plugin.requests_of("Synchronize")) == 1
            assert rt.active_plugins() == []

    arun(scenario)


def test_the_final_reply_carries_the_updates_which_are_applied() -> None:
    async def sync(request: api_pb2.SynchronizeRequest) -> api_pb2.SynchronizeResponse:
        reply = api_pb2.SynchronizeResponse(more=request.more)
        if not request.more:
            update = reply.update.add(container_id=request.containers[-1].id)
            update.linux.resources.cpu.cpus = "1"
            reply.update.add(container_id="gone").linux.resources.cpu.cpus = "1"
        return reply

    async def scenario() -> None:
        async with runtime(sync_size_limit=40_000) as rt:
            await populate(rt, 10, 6)
            plugin = ScriptedPlugin(handlers={"Synchronize": sync})
            await plugin.attach(rt)
            info = await rt.wait_plugin(plugin.full_name)
            assert info.state is PluginState.READY
            last = rt.containers()[-1]
            assert str(last.resources.cpus) == "1"
            assert all(c.resources.cpus is None for c in rt.containers()[:-1])
            synced = next(e for e in rt.journal.events if e.kind is PluginEventKind.SYNCHRONIZED)
            assert synced.detail == "10 pods, 60 containers, 1 updates failed"
            await plugin.close()

    arun(scenario)


def test_one_request_timeout_covers_the_whole_split_sync() -> None:
    async def slow_sync(request: api_pb2.SynchronizeRequest) -> api_pb2.SynchronizeResponse:
        await asyncio.sleep(0.08)  # each chunk is quick, all of them are not
        return api_pb2.SynchronizeResponse(more=request.more)

    async def scenario() -> None:
        async with runtime(sync_size_limit=20_000, request_timeout=0.3) as rt:
            await populate(rt, 10, 6)
            plugin = ScriptedPlugin(handlers={"Synchronize": slow_sync})
            await plugin.attach(rt)
            await asyncio.wait_for(plugin.closed.wait(), 5)
            assert "context deadline exceeded" in rejection(rt)
            assert 3 <= len(plugin.requests_of("Synchronize")) <= 5

    arun(scenario)


def test_nothing_to_synchronize_is_one_empty_message() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin()
            await plugin.attach(rt)
            await rt.wait_plugin(plugin.full_name)
            (sync,) = plugin.requests_of("Synchronize")
            assert (len(sync.pods), len(sync.containers), sync.more) == (0, 0, False)
            await plugin.close()

    arun(scenario)


@given(
    pods=st.integers(0, 5000),
    containers=st.integers(0, 5000),
    length=st.integers(1, 50_000_000),
    limit=st.integers(1, 4 << 20),
)
def test_shrink_follows_go(pods: int, containers: int, length: int, limit: int) -> None:
    error = OversizedMessage(length, limit)
    if pods + containers <= 8 or length <= limit:
        with pytest.raises(SyncFailed, match="failed to synchronize plugin with split messages"):
            shrink(pods, containers, error)
        return
    new_pods, new_containers = shrink(pods, containers, error)
    factor = min(0.9, limit / length)
    assert (new_pods, new_containers) == (int(pods * factor), int(containers * factor))
    assert new_pods + new_containers < pods + containers  # always progress
