"""Handlers served eagerly (``Endpoint.serve(..., eager=True)``): started inside the callback
that decoded their request, a task only once they wait; otherwise as a task would run them."""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import pytest

from nrirp.adapters.nri.transport import CallContext, Session, StatusCode, TtrpcError
from tests.support.aio import arun

from .helpers import SERVICE, close_all, opens, session_pair

MARK: contextvars.ContextVar[str] = contextvars.ContextVar("mark", default="unset")


def test_a_handler_that_never_waits_runs_before_the_loop_turns_and_makes_no_task() -> None:
    async def scenario() -> None:
        seen: list[tuple[bool, str]] = []

        async def quick(payload: bytes, _ctx: CallContext) -> bytes:
            seen.append((asyncio.current_task() is None, MARK.get()))
            MARK.set("inside")  # in the handler's own context, as in a task
            return payload.upper()

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Quick": quick}, eager=True), opens(1)
        )
        spawned: list[asyncio.Task[None]] = []
        create_task = asyncio.get_running_loop().create_task

        def counting(coro, **kwargs):  # type: ignore[no-untyped-def]
            task = create_task(coro, **kwargs)
            spawned.append(task)
            return task

        asyncio.get_running_loop().create_task = counting  # type: ignore[method-assign]
        try:
            assert await client.endpoints[1].call(SERVICE, "Quick", b"abc") == b"ABC"
        finally:
            del asyncio.get_running_loop().create_task
        assert seen == [(True, "unset")]  # ran in the callback, not in a task
        assert MARK.get() == "unset"  # its context was its own
        assert not any(t.get_coro().__qualname__.startswith("Endpoint") for t in spawned)
        assert server.running_handlers == 0
        await close_all(server, client)

    arun(scenario)


def test_a_handler_that_waits_goes_on_in_a_task_with_its_context() -> None:
    async def scenario() -> None:
        release = asyncio.Event()
        marks: list[str] = []

        async def slow(payload: bytes, _ctx: CallContext) -> bytes:
            MARK.set("before")
            await release.wait()
            marks.append(MARK.get())
            await asyncio.sleep(0)  # and a bare yield
            return payload + b"!"

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Slow": slow}, eager=True), opens(1)
        )
        call = asyncio.ensure_future(client.endpoints[1].call(SERVICE, "Slow", b"x"))
        while server.running_handlers == 0:
            await asyncio.sleep(0.001)
        assert not call.done()  # waiting, tracked as a task
        release.set()
        assert await call == b"x!"
        assert marks == ["before"]
        assert server.running_handlers == 0
        await close_all(server, client)

    arun(scenario)


def test_errors_before_and_after_the_first_wait_are_statuses() -> None:
    async def scenario() -> None:
        async def early(_payload: bytes, _ctx: CallContext) -> bytes:
            raise TtrpcError(StatusCode.FAILED_PRECONDITION, "no")

        async def late(_payload: bytes, _ctx: CallContext) -> bytes:
            await asyncio.sleep(0.001)
            raise TtrpcError(StatusCode.NOT_FOUND, "gone")

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Early": early, "Late": late}, eager=True),
            opens(1),
        )
        for method, code in (
            ("Early", StatusCode.FAILED_PRECONDITION),
            ("Late", StatusCode.NOT_FOUND),
        ):
            with pytest.raises(TtrpcError) as info:
                await client.endpoints[1].call(SERVICE, method)
            assert info.value.code == code
        assert not server.closed
        await close_all(server, client)

    arun(scenario)


def test_closing_the_session_cancels_a_waiting_eager_handler() -> None:
    async def scenario() -> None:
        cancelled = asyncio.Event()

        async def forever(_payload: bytes, _ctx: CallContext) -> bytes:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return b""

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Forever": forever}, eager=True), opens(1)
        )
        call = asyncio.ensure_future(client.endpoints[1].call(SERVICE, "Forever"))
        while server.running_handlers == 0:
            await asyncio.sleep(0.001)
        server.close()
        await server.wait_closed()
        assert cancelled.is_set() and server.running_handlers == 0
        with pytest.raises(Exception):  # noqa: B017 - the call fails as the session went away
            await call
        await close_all(client)

    arun(scenario)


def test_the_in_flight_limit_counts_waiting_eager_handlers() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def hold(_payload: bytes, _ctx: CallContext) -> bytes:
            await release.wait()
            return b"done"

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Hold": hold}, eager=True),
            opens(1),
            max_inflight=1,
        )
        first = asyncio.ensure_future(client.endpoints[1].call(SERVICE, "Hold"))
        while server.running_handlers == 0:
            await asyncio.sleep(0.001)
        with pytest.raises(TtrpcError) as info:
            await client.endpoints[1].call(SERVICE, "Hold")
        assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
        release.set()
        assert await first == b"done"
        await close_all(server, client)

    arun(scenario)


def test_session_spawn_without_eager_still_makes_a_task() -> None:
    async def scenario() -> None:
        ran: list[bool] = []

        async def handler() -> None:
            ran.append(asyncio.current_task() is not None)

        session = Session()
        assert session.spawn(handler())
        assert ran == []  # not yet: on the loop's next turn
        await asyncio.sleep(0)
        assert ran == [True]
        assert session.spawn(handler(), eager=True)
        assert len(ran) == 2  # at once (here inside this test's task, which spawned it)

    arun(scenario)


def test_a_big_request_starts_in_a_task_all_the_same() -> None:
    """Over EAGER_MAX_BYTES (a Synchronize of hundreds of containers) the handler waits for
    the loop's next turn, so that the bytes read for it are let go before it runs."""
    from nrirp.adapters.nri.transport.ttrpc import EAGER_MAX_BYTES

    async def scenario() -> None:
        in_task: list[bool] = []

        async def measure(payload: bytes, _ctx: CallContext) -> bytes:
            in_task.append(asyncio.current_task() is not None)
            return str(len(payload)).encode()

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Measure": measure}, eager=True), opens(1)
        )
        endpoint = client.endpoints[1]
        assert await endpoint.call(SERVICE, "Measure", b"x" * 100) == b"100"
        big = EAGER_MAX_BYTES + 1
        assert await endpoint.call(SERVICE, "Measure", b"x" * big) == str(big).encode()
        assert in_task == [False, True]
        await close_all(server, client)

    arun(scenario)


def _waiting_handler(seen: list[str]) -> Any:
    async def handler(_payload: bytes, _ctx: CallContext) -> bytes:
        seen.append("started")
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            seen.append("CancelledError")
            raise
        except GeneratorExit:  # closed unstarted-task style: what must not happen
            seen.append("GeneratorExit")
            raise
        return b""

    return handler


def test_a_protocol_error_in_the_same_read_cancels_the_waiting_handler() -> None:
    """One read holds a request whose eager handler waits, then a bad frame: the session goes
    down before the handler's task took a step, and the handler is cancelled all the same
    (not dropped mid-body, which would leave its scope, and the handlers' count, open)."""
    import socket

    from nrirp.adapters.nri.transport.envelope import encode_request
    from nrirp.adapters.nri.transport.framing import MUX_HEADER, MessageType, frame_message

    async def scenario() -> None:
        seen: list[str] = []
        ours, theirs = socket.socketpair()
        session = Session()
        session.open(1).serve(SERVICE, {"Wait": _waiting_handler(seen)}, eager=True)
        await session.attach(ours)
        frames = frame_message(
            1, 1, int(MessageType.REQUEST), 0, encode_request(SERVICE, "Wait", b"x", 0)
        )
        theirs.sendall(bytes(frames) + MUX_HEADER.pack(1, 1 << 30))  # then a frame far too big
        await asyncio.wait_for(session.wait_closed(), 5)
        assert seen == ["started", "CancelledError"]
        assert session.running_handlers == 0
        theirs.close()

    arun(scenario)


def test_a_handler_that_closes_its_session_then_waits_is_cancelled() -> None:
    async def scenario() -> None:
        seen: list[str] = []
        session = Session()

        async def closes(_payload: bytes, _ctx: CallContext) -> None:
            session.close()
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                seen.append("CancelledError")
                raise

        spawned = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(  # a callback, as the decoder's: no current task
            lambda: spawned.set_result(session.spawn(closes(b"", None), eager=True))  # type: ignore[arg-type]
        )
        assert await spawned
        await asyncio.wait_for(session.wait_closed(), 5)
        assert seen == ["CancelledError"] and session.running_handlers == 0

    arun(scenario)


@pytest.mark.parametrize("eager", [True, False])
def test_after_reply_runs_once_each_reply_was_handed_to_the_connection(eager: bool) -> None:
    """``serve(..., after_reply=f)``: ``f`` runs after every reply of the service (errors
    too), once the reply's frames were handed over: work that need not delay the reply."""

    async def scenario() -> None:
        order: list[str] = []

        async def ok(payload: bytes, _ctx: CallContext) -> bytes:
            order.append("handler")
            return payload

        async def refused(_payload: bytes, _ctx: CallContext) -> bytes:
            order.append("handler")
            raise TtrpcError(StatusCode.NOT_FOUND, "gone")

        server, client = await session_pair(
            lambda s: s.open(1).serve(
                SERVICE,
                {"Ok": ok, "Refused": refused},
                eager=eager,
                after_reply=lambda: order.append("after"),
            ),
            opens(1),
        )
        link: Any = server.endpoints[1]._link
        send = link.send

        def sending(frames: Any) -> None:
            order.append("sent")
            send(frames)

        link.send = sending
        assert await client.endpoints[1].call(SERVICE, "Ok", b"a") == b"a"
        with pytest.raises(TtrpcError):
            await client.endpoints[1].call(SERVICE, "Refused", b"")
        await asyncio.sleep(0.01)
        assert order == ["handler", "sent", "after"] * 2
        await close_all(server, client)

    arun(scenario)
