"""Plugin-initiated UpdateContainers: failed updates come back; handlers can never deadlock,
started in a task or eagerly (``Stub(eager=True)``, as the daemon's)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nrirp.adapters.nri import api
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import NotConnectedError, Plugin, Stub, UpdateFromHandlerError
from nrirp.adapters.nri.stub.scope import handlers_running
from nrirp.adapters.nri.transport import StatusCode
from tests.support.aio import arun

from .runtime_peer import RuntimePeer, container, pod, socketpair_runtime
from .test_protocol import connected, shut


class Creator(Plugin):
    """CreateContainer runs ``self.action(container)`` inside the handler."""

    def __init__(self) -> None:
        self.stub: Stub | None = None
        self.action: Any = None
        self.scheduled: list[asyncio.Future[list[api_pb2.ContainerUpdate]]] = []
        self.errors: list[BaseException] = []

    async def create_container(self, pod: Any, container: Any) -> Any:
        if self.action is not None:
            await self.action(container)
        return None


async def create(peer: RuntimePeer, name: str = "c") -> api_pb2.CreateContainerResponse:
    request = api_pb2.CreateContainerRequest(pod=pod(), container=container(name))
    return await peer.call("CreateContainer", request, api_pb2.CreateContainerResponse)


def test_update_containers_outside_handlers_returns_the_failed_ones() -> None:
    async def main() -> None:
        stub, peer, _ = await connected(
            Creator(), peer_options={"fail_updates": lambda u: u.container_id == "b"}
        )
        updates = [api.container_update("a", cpus="0"), api.container_update("b", cpus="1")]
        eviction = api_pb2.ContainerEviction(container_id="c", reason="too big")
        failed = await stub.update_containers(updates, [eviction])
        assert [u.container_id for u in failed] == ["b"]
        assert failed[0].linux.resources.cpu.cpus == "1"
        (request,) = peer.update_requests
        assert [u.container_id for u in request.update] == ["a", "b"]
        assert [(e.container_id, e.reason) for e in request.evict] == [("c", "too big")]
        await shut(stub, peer)

    arun(main)


@pytest.mark.parametrize("eager", [False, True])
def test_awaiting_update_containers_inside_a_handler_is_refused_at_once(eager: bool) -> None:
    async def main() -> None:
        plugin = Creator()
        stub, peer, _ = await connected(plugin, eager=eager)

        async def naive(ctr: Any) -> None:
            await stub.update_containers([api.container_update("other", cpus="3")])

        plugin.action = naive
        loop = asyncio.get_running_loop()
        began = loop.time()
        request = api_pb2.CreateContainerRequest(pod=pod(), container=container())
        error = await peer.expect_status("CreateContainer", request.SerializeToString())
        assert error.code == StatusCode.UNKNOWN
        assert "schedule_update_containers" in error.message and "deadlock" in error.message
        assert loop.time() - began < 1.0  # refused immediately, not after the 2 s timeout
        assert peer.update_requests == []
        await shut(stub, peer)

    arun(main)


@pytest.mark.parametrize("eager", [False, True])
def test_scheduled_update_from_a_handler_is_sent_after_the_reply_under_the_runtime_lock(
    eager: bool,
) -> None:
    async def main() -> None:
        plugin = Creator()
        stub, peer, _ = await connected(
            plugin, peer_options={"fail_updates": lambda u: u.container_id == "gone"}, eager=eager
        )

        async def schedule(ctr: Any) -> None:
            plugin.scheduled.append(
                stub.schedule_update_containers(
                    [api.container_update("sibling", cpus="4"), api.container_update("gone")]
                )
            )
            try:
                await plugin.scheduled[-1]  # awaiting it here would deadlock: refused
            except UpdateFromHandlerError as exc:
                plugin.errors.append(exc)

        plugin.action = schedule
        assert peer.hold_lock  # the runtime holds its lock while CreateContainer is in flight
        loop = asyncio.get_running_loop()
        began = loop.time()
        await create(peer)
        (future,) = plugin.scheduled
        failed = await asyncio.wait_for(future, 2)
        assert loop.time() - began < 1.0
        assert [u.container_id for u in failed] == ["gone"]
        assert peer.log[-3:] == ["call CreateContainer", "reply CreateContainer", "update"]
        assert len(plugin.errors) == 1 and "deadlock" in str(plugin.errors[0])
        await shut(stub, peer)

    arun(main)


@pytest.mark.parametrize("eager", [False, True])
def test_tasks_started_by_a_handler_inherit_the_guard_until_the_reply(eager: bool) -> None:
    async def main() -> None:
        plugin = Creator()
        stub, peer, _ = await connected(plugin, eager=eager)
        outcomes: list[str] = []
        children: list[asyncio.Task[None]] = []
        replied = asyncio.Event()

        async def early() -> None:
            try:
                await stub.update_containers([api.container_update("x")])
                outcomes.append("early sent")
            except UpdateFromHandlerError:
                outcomes.append("early refused")

        async def late() -> None:
            await replied.wait()
            await stub.update_containers([api.container_update("y")])
            outcomes.append("late sent")

        async def spawn(ctr: Any) -> None:
            children.append(asyncio.create_task(early()))
            children.append(asyncio.create_task(late()))
            await asyncio.sleep(0.01)  # let `early` run while the handler is still active

        plugin.action = spawn
        await create(peer)
        replied.set()
        await asyncio.gather(*children)
        assert outcomes == ["early refused", "late sent"]
        assert [r.update[0].container_id for r in peer.update_requests] == ["y"]
        await shut(stub, peer)

    arun(main)


def test_scheduled_update_outside_handlers_is_sent_at_once() -> None:
    async def main() -> None:
        stub, peer, _ = await connected(Creator())
        future = stub.schedule_update_containers([api.container_update("a", cpus="2")])
        assert await asyncio.wait_for(future, 2) == []
        assert peer.update_requests[0].update[0].linux.resources.cpu.cpus == "2"
        await shut(stub, peer)

    arun(main)


def test_updates_without_a_connection_fail_clearly() -> None:
    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(Creator(), name="p", index="01", connection=plugin_end, environ={})
        with pytest.raises(NotConnectedError, match="not connected"):
            await stub.update_containers([api.container_update("a")])
        future = stub.schedule_update_containers([api.container_update("a")])
        with pytest.raises(NotConnectedError):
            await future
        plugin_end.close()
        peer.close()
        await peer.session.wait_closed()

    arun(main)


def test_update_containers_while_another_event_holds_the_runtime_lock_waits_not_deadlocks() -> None:
    """An update sent from outside handlers while an event is in flight is served once the
    event's reply releases the runtime's lock, as containerd does."""

    async def main() -> None:
        plugin = Creator()
        stub, peer, _ = await connected(plugin)
        gate = asyncio.Event()
        entered = asyncio.Event()

        async def slow(ctr: Any) -> None:
            entered.set()
            await gate.wait()

        plugin.action = slow
        creation = asyncio.create_task(create(peer))
        await entered.wait()
        update = asyncio.create_task(stub.update_containers([api.container_update("z")]))
        await asyncio.sleep(0.05)
        assert not update.done() and peer.update_requests == []  # blocked on the runtime lock
        gate.set()
        await creation
        assert await asyncio.wait_for(update, 2) == []
        assert peer.log[-3:] == ["call CreateContainer", "reply CreateContainer", "update"]
        await shut(stub, peer)

    arun(main)


def test_handlers_running_is_true_only_while_a_handler_has_not_returned() -> None:
    """What the state file's writer steps aside for."""

    async def main() -> None:
        plugin = Creator()
        stub, peer, _ = await connected(plugin)
        gate = asyncio.Event()
        seen: list[bool] = []

        async def slow(ctr: Any) -> None:
            seen.append(handlers_running())
            await gate.wait()

        plugin.action = slow
        assert not handlers_running()
        creation = asyncio.create_task(create(peer))
        await asyncio.sleep(0.05)
        assert handlers_running()
        gate.set()
        await creation
        assert seen == [True] and not handlers_running()
        await shut(stub, peer)

    arun(main)
