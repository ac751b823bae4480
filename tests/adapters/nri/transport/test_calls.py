"""Calls through two real sessions (and a raw peer): round trips, concurrency, status codes."""

from __future__ import annotations

import asyncio
import logging

import pytest

from nrirp.adapters.nri.gen import ttrpc_pb2
from nrirp.adapters.nri.transport import (
    MAX_MESSAGE_SIZE,
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
    CallContext,
    Endpoint,
    OversizedMessage,
    RequestRefused,
    Session,
    StatusCode,
    TtrpcError,
)
from tests.support.aio import arun

from .helpers import (
    SERVICE,
    RawPeer,
    close_all,
    echo,
    opens,
    raw_frame,
    raw_message,
    raw_peer_session,
    request_frames,
    session_pair,
)

PLUGIN = "nri.pkg.api.v1alpha1.Plugin"
RUNTIME = "nri.pkg.api.v1alpha1.Runtime"


def test_both_roles_round_trip_on_both_connections() -> None:
    async def scenario() -> None:
        async def configure(payload: bytes, _ctx: CallContext) -> bytes:
            return b"configured:" + payload

        async def register(payload: bytes, _ctx: CallContext) -> bytes:
            return b"registered:" + payload

        def plugin_side(session: Session) -> None:
            session.open(PLUGIN_SERVICE_CONN).serve(PLUGIN, {"Configure": configure})
            session.open(RUNTIME_SERVICE_CONN)

        def runtime_side(session: Session) -> None:
            session.open(PLUGIN_SERVICE_CONN)
            session.open(RUNTIME_SERVICE_CONN).serve(RUNTIME, {"RegisterPlugin": register})

        plugin, runtime = await session_pair(plugin_side, runtime_side)
        to_runtime = plugin.endpoints[RUNTIME_SERVICE_CONN]
        to_plugin = runtime.endpoints[PLUGIN_SERVICE_CONN]
        big = bytes(range(256)) * 4000  # 1 MB: split frames both ways
        results = await asyncio.gather(
            to_runtime.call(RUNTIME, "RegisterPlugin", b"p1", timeout=5),
            to_plugin.call(PLUGIN, "Configure", b"", timeout=5),
            to_plugin.call(PLUGIN, "Configure", big, timeout=5),
            to_runtime.call(RUNTIME, "RegisterPlugin", big),
        )
        assert results == [
            b"registered:p1",
            b"configured:",
            b"configured:" + big,
            b"registered:" + big,
        ]
        await close_all(plugin, runtime)

    arun(scenario)


def test_concurrent_calls_get_their_own_replies_when_answered_out_of_order() -> None:
    async def scenario() -> None:
        gates: dict[bytes, asyncio.Event] = {}
        arrived: list[bytes] = []

        async def gated(payload: bytes, _ctx: CallContext) -> bytes:
            arrived.append(payload)
            await gates.setdefault(payload, asyncio.Event()).wait()
            return payload * 2

        def serve(session: Session) -> None:
            session.open(1).serve(SERVICE, {"Gated": gated})

        server, client = await session_pair(serve, opens(1))
        endpoint = client.endpoints[1]
        keys = [str(i).encode() for i in range(50)]
        calls = [asyncio.ensure_future(endpoint.call(SERVICE, "Gated", k)) for k in keys]
        while len(arrived) < len(keys):  # all handlers run concurrently
            await asyncio.sleep(0.001)
        for key in reversed(keys):
            gates[key].set()
        assert await asyncio.gather(*calls) == [k * 2 for k in keys]
        assert endpoint.pending_calls == 0
        await close_all(server, client)

    arun(scenario)


def test_a_refusal_is_answered_with_its_reason_and_logged_as_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        async def refuse(_payload: bytes, _ctx: CallContext) -> bytes:
            raise RequestRefused("pod does not fit")

        async def refuse_precondition(_payload: bytes, _ctx: CallContext) -> bytes:
            raise RequestRefused("not yet", StatusCode.FAILED_PRECONDITION)

        def serve(session: Session) -> None:
            session.open(1).serve(SERVICE, {"Refuse": refuse, "Later": refuse_precondition})

        server, client = await session_pair(serve, opens(1))
        for method, code, message in (
            ("Refuse", StatusCode.UNKNOWN, "pod does not fit"),
            ("Later", StatusCode.FAILED_PRECONDITION, "not yet"),
        ):
            with pytest.raises(TtrpcError) as info:
                await client.endpoints[1].call(SERVICE, method, b"x")
            assert (info.value.code, info.value.message) == (code, message)
        await close_all(server, client)

    with caplog.at_level(logging.DEBUG, logger="nrirp.nri.transport"):
        arun(scenario)
    lines = [r for r in caplog.records if "refused" in r.getMessage()]
    assert [r.getMessage() for r in lines] == [
        f"conn 1: {SERVICE}/Refuse refused: pod does not fit",
        f"conn 1: {SERVICE}/Later refused: not yet",
    ]
    assert all(r.levelno == logging.INFO and r.exc_info is None for r in lines)
    assert "Traceback" not in caplog.text


def test_status_codes_for_unknown_service_and_method_and_handler_errors() -> None:
    async def scenario() -> None:
        async def not_found(_payload: bytes, _ctx: CallContext) -> bytes:
            raise TtrpcError(StatusCode.NOT_FOUND, "no such container")

        async def invalid(_payload: bytes, _ctx: CallContext) -> bytes:
            raise TtrpcError(StatusCode.INVALID_ARGUMENT, "cannot parse CreateContainerRequest")

        async def crash(_payload: bytes, _ctx: CallContext) -> bytes:
            raise ValueError("policy exploded")

        async def slow(_payload: bytes, _ctx: CallContext) -> bytes:
            raise TimeoutError("took too long")

        async def not_bytes(_payload: bytes, _ctx: CallContext) -> bytes:
            return None  # type: ignore[return-value]

        def serve(session: Session) -> None:
            session.open(1).serve(
                SERVICE,
                {
                    "NotFound": not_found,
                    "Invalid": invalid,
                    "Crash": crash,
                    "Slow": slow,
                    "NotBytes": not_bytes,
                    "Echo": echo,
                },
            )

        server, client = await session_pair(serve, opens(1))
        endpoint = client.endpoints[1]

        async def status_of(service: str, method: str) -> tuple[int, str]:
            with pytest.raises(TtrpcError) as info:
                await endpoint.call(service, method, b"x")
            return info.value.code, info.value.message

        assert await status_of("other.Service", "X") == (
            StatusCode.UNIMPLEMENTED,
            "service other.Service",
        )
        assert await status_of(SERVICE, "Nope") == (StatusCode.UNIMPLEMENTED, "method Nope")
        assert await status_of(SERVICE, "NotFound") == (
            StatusCode.NOT_FOUND,
            "no such container",
        )
        assert await status_of(SERVICE, "Invalid") == (
            StatusCode.INVALID_ARGUMENT,
            "cannot parse CreateContainerRequest",
        )
        assert await status_of(SERVICE, "Crash") == (StatusCode.UNKNOWN, "policy exploded")
        assert await status_of(SERVICE, "Slow") == (StatusCode.DEADLINE_EXCEEDED, "took too long")
        code, message = await status_of(SERVICE, "NotBytes")
        assert code == StatusCode.UNKNOWN and "not bytes" in message
        assert await endpoint.call(SERVICE, "Echo", b"alive") == b"alive"
        await close_all(server, client)

    arun(scenario)


def test_deadline_is_sent_enforced_locally_and_late_replies_are_dropped() -> None:
    async def scenario() -> None:
        seen: list[CallContext] = []
        release = asyncio.Event()

        async def slow(payload: bytes, ctx: CallContext) -> bytes:
            seen.append(ctx)
            await release.wait()
            return payload

        def serve(session: Session) -> None:
            session.open(1).serve(SERVICE, {"Slow": slow, "Echo": echo})

        server, client = await session_pair(serve, opens(1))
        endpoint = client.endpoints[1]
        loop = asyncio.get_running_loop()
        start = loop.time()
        with pytest.raises(TtrpcError) as info:
            await endpoint.call(SERVICE, "Slow", b"late", timeout=0.2, metadata=[("k", "v")])
        elapsed = loop.time() - start
        assert info.value.code == StatusCode.DEADLINE_EXCEEDED
        assert 0.19 <= elapsed < 1.0
        (ctx,) = seen
        assert ctx.deadline is not None and abs(ctx.deadline - (start + 0.2)) < 0.05
        assert ctx.metadata == (("k", "v"),)
        assert (ctx.service, ctx.method, ctx.stream_id) == (SERVICE, "Slow", 1)
        release.set()  # the late reply arrives for a forgotten stream and is dropped
        assert await endpoint.call(SERVICE, "Echo", b"next", timeout=2) == b"next"
        assert endpoint.pending_calls == 0
        untimed = await endpoint.call(SERVICE, "Echo", b"")
        assert untimed == b""
        await close_all(server, client)

    arun(scenario)


def test_no_deadline_means_timeout_nano_zero() -> None:
    async def scenario() -> None:
        contexts: list[CallContext] = []

        async def record(_payload: bytes, ctx: CallContext) -> bytes:
            contexts.append(ctx)
            return b""

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Record": record}),
            opens(1),
        )
        await client.endpoints[1].call(SERVICE, "Record")
        assert contexts[0].deadline is None and contexts[0].time_remaining() is None
        await close_all(server, client)

    arun(scenario)


# ---------------------------------------------------------------------- against a raw peer


def serve_echo(session: Session) -> None:
    session.open(1).serve(SERVICE, {"Echo": echo, "Big": big_reply})


async def big_reply(payload: bytes, _ctx: CallContext) -> bytes:
    return b"r" * int(payload)


def test_empty_success_reply_is_a_zero_length_message_in_one_frame() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(serve_echo)
        await peer.send(request_frames(1, 1, payload=b""))
        conn_id, stream_id, msg_type, flags, data, sizes = await peer.recv_message()
        assert (conn_id, stream_id, msg_type, flags, data, sizes) == (1, 1, 2, 0, b"", [10])
        await close_all(session)
        peer.close()

    arun(scenario)


def test_replies_use_go_style_frames_and_never_share_a_frame() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(serve_echo)
        sizes = [0, 100, 4086, 4087, 22_000, 440_000, 3_300_000]
        wire = b"".join(
            request_frames(1, 2 * i + 1, method="Big", payload=str(size).encode())
            for i, size in enumerate(sizes)
        )
        await peer.send(wire)
        replies = {}
        for _ in sizes:
            _, stream_id, _, _, data, frame_sizes = await peer.recv_message()
            replies[stream_id] = (data, frame_sizes)
        for i, size in enumerate(sizes):
            data, frame_sizes = replies[2 * i + 1]
            response = ttrpc_pb2.Response.FromString(data)
            assert response.payload == b"r" * size
            if len(data) <= 4086:
                assert frame_sizes == [10 + len(data)]
            else:
                assert frame_sizes == [4096, len(data) - 4086]
        await close_all(session)
        peer.close()

    arun(scenario)


def test_client_stream_ids_are_odd_and_increasing() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(opens(2))
        endpoint = session.endpoints[2]
        calls = [asyncio.ensure_future(endpoint.call(SERVICE, "M", b"%d" % i)) for i in range(5)]
        ids = []
        for _ in calls:
            conn_id, stream_id, msg_type, _, data, _ = await peer.recv_message()
            assert (conn_id, msg_type) == (2, 1)
            ids.append(stream_id)
            request = ttrpc_pb2.Request.FromString(data)
            assert (request.service, request.method, request.timeout_nano) == (SERVICE, "M", 0)
        assert ids == [1, 3, 5, 7, 9]
        # answer in reverse order, one of them with an error status
        for stream_id in reversed(ids):
            if stream_id == 5:
                body = ttrpc_pb2.Response(status=ttrpc_pb2.Status(code=5, message="nf"))
            else:
                body = ttrpc_pb2.Response(payload=b"re%d" % stream_id)
            await peer.send(raw_frame(2, raw_message(stream_id, 2, body.SerializeToString())))
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert results[0] == b"re1" and results[1] == b"re3" and results[4] == b"re9"
        assert isinstance(results[2], TtrpcError) and results[2].code == StatusCode.NOT_FOUND
        await close_all(session)
        peer.close()

    arun(scenario)


def test_outbound_request_over_4_mib_is_refused_before_writing_anything() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(opens(2))
        endpoint = session.endpoints[2]
        with pytest.raises(OversizedMessage) as info:
            await endpoint.call(SERVICE, "Sync", b"s" * MAX_MESSAGE_SIZE)
        assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
        with pytest.raises(BlockingIOError):
            peer.sock.recv(1)  # nothing was written
        # exactly 4 MiB of ttRPC data is allowed; it takes stream id 1 (none was consumed)
        envelope = len(b"".join(_request_parts(SERVICE, "Sync")))
        payload = b"s" * (MAX_MESSAGE_SIZE - envelope - 5)  # 5 = tag + 4-byte length varint
        call = asyncio.ensure_future(endpoint.call(SERVICE, "Sync", payload))
        _, stream_id, _, _, data, frame_sizes = await peer.recv_message()
        assert (stream_id, len(data), frame_sizes) == (1, MAX_MESSAGE_SIZE, [4096, 4190218])
        await peer.send(raw_frame(2, raw_message(1, 2, b"")))
        assert await call == b""
        await close_all(session)
        peer.close()

    arun(scenario)


def _request_parts(service: str, method: str) -> list[bytes]:
    return [ttrpc_pb2.Request(service=service, method=method).SerializeToString()]


def test_reply_over_4_mib_becomes_resource_exhausted() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(serve_echo)
        await peer.send(request_frames(1, 1, method="Big", payload=b"%d" % (5 << 20)))
        stream_id, response = await peer.recv_response()
        assert stream_id == 1
        assert response.status.code == StatusCode.RESOURCE_EXHAUSTED
        assert "exceed maximum message size" in response.status.message
        await close_all(session)
        peer.close()

    arun(scenario)


def test_inbound_oversized_request_is_discarded_and_answered_resource_exhausted() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(serve_echo)
        huge = raw_message(1, 1, b"h" * (MAX_MESSAGE_SIZE + 1))
        await peer.send(raw_frame(1, huge[:4096]) + raw_frame(1, huge[4096:]))
        await peer.send(request_frames(1, 3, payload=b"after"))
        stream_id, response = await peer.recv_response()
        assert (stream_id, response.status.code) == (1, StatusCode.RESOURCE_EXHAUSTED)
        assert response.status.message == (
            f"message length {MAX_MESSAGE_SIZE + 1} exceed maximum message size of "
            f"{MAX_MESSAGE_SIZE}"
        )
        stream_id, response = await peer.recv_response()
        assert (stream_id, response.payload) == (3, b"after")
        await close_all(session)
        peer.close()

    arun(scenario)


def test_inbound_oversized_reply_fails_the_pending_call() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(opens(2))
        call = asyncio.ensure_future(session.endpoints[2].call(SERVICE, "M"))
        _, stream_id, _, _, _, _ = await peer.recv_message()
        huge = raw_message(stream_id, 2, b"h" * (MAX_MESSAGE_SIZE + 10))
        await peer.send(raw_frame(2, huge))
        with pytest.raises(TtrpcError) as info:
            await call
        assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
        await close_all(session)
        peer.close()

    arun(scenario)


def test_bad_stream_ids_and_undecodable_requests_get_invalid_argument() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(serve_echo)
        odd = "StreamID must be odd for client initiated streams"
        increment = "StreamID cannot be re-used and must increment"
        await peer.send(request_frames(1, 2))  # even
        assert await _status(peer) == (2, StatusCode.INVALID_ARGUMENT, odd)
        await peer.send(request_frames(1, 7))
        assert (await peer.recv_response())[0] == 7
        await peer.send(request_frames(1, 7))  # reused
        assert await _status(peer) == (7, StatusCode.INVALID_ARGUMENT, increment)
        await peer.send(request_frames(1, 5))  # lower
        assert await _status(peer) == (5, StatusCode.INVALID_ARGUMENT, increment)
        await peer.send(raw_frame(1, raw_message(9, 1, b"\x0a\xff\xff")))  # garbage envelope
        stream_id, code, message = await _status(peer)
        assert (stream_id, code) == (9, StatusCode.INVALID_ARGUMENT)
        assert message.startswith("unmarshal request error:")
        await close_all(session)
        peer.close()

    arun(scenario)


async def _status(peer: RawPeer) -> tuple[int, int, str]:
    stream_id, response = await peer.recv_response()
    return stream_id, response.status.code, response.status.message


def test_data_frames_unknown_types_and_stray_replies_are_ignored() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(serve_echo)
        await peer.send(
            raw_frame(1, raw_message(1, 3, b"streamed data", flags=0x01))
            + raw_frame(1, raw_message(3, 9, b"unknown type"))
            + raw_frame(1, raw_message(99, 2, b"reply nobody asked for"))
            + request_frames(1, 5, payload=b"still fine")
        )
        stream_id, response = await peer.recv_response()
        assert (stream_id, response.payload) == (5, b"still fine")
        assert not session.closed
        await close_all(session)
        peer.close()

    arun(scenario)


def test_undecodable_reply_fails_only_that_call() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(opens(2))
        endpoint: Endpoint = session.endpoints[2]
        first = asyncio.ensure_future(endpoint.call(SERVICE, "A"))
        await peer.recv_message()
        await peer.send(raw_frame(2, raw_message(1, 2, b"\x12\x50short")))
        with pytest.raises(TtrpcError) as info:
            await first
        assert info.value.code == StatusCode.INTERNAL
        second = asyncio.ensure_future(endpoint.call(SERVICE, "B"))
        await peer.recv_message()
        await peer.send(raw_frame(2, raw_message(3, 2, b"")))
        assert await second == b""
        await close_all(session)
        peer.close()

    arun(scenario)


def test_too_many_concurrent_requests_get_resource_exhausted() -> None:
    async def scenario() -> None:
        release = asyncio.Event()

        async def block(_payload: bytes, _ctx: CallContext) -> bytes:
            await release.wait()
            return b"done"

        session, peer = await raw_peer_session(
            lambda s: s.open(1).serve(SERVICE, {"Block": block}), max_inflight=2
        )
        await peer.send(b"".join(request_frames(1, i, method="Block") for i in (1, 3, 5)))
        stream_id, response = await peer.recv_response()
        assert (stream_id, response.status.code) == (5, StatusCode.RESOURCE_EXHAUSTED)
        assert session.running_handlers == 2
        release.set()
        answered = {(await peer.recv_response())[0] for _ in range(2)}
        assert answered == {1, 3}
        await asyncio.sleep(0)  # the finished tasks' done callbacks run on the next iteration
        assert session.running_handlers == 0
        await close_all(session)
        peer.close()

    arun(scenario)


def test_metadata_round_trips() -> None:
    async def scenario() -> None:
        async def meta(_payload: bytes, ctx: CallContext) -> bytes:
            return repr(ctx.metadata).encode()

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Meta": meta}), opens(1)
        )
        pairs = [("traceparent", "00-abc-def-01"), ("k", ""), ("", "v")]
        reply = await client.endpoints[1].call(SERVICE, "Meta", metadata=pairs)
        assert reply == repr(tuple(pairs)).encode()
        await close_all(server, client)

    arun(scenario)


def test_a_handler_cancelled_from_inside_answers_cancelled() -> None:
    async def scenario() -> None:
        async def give_up(_payload: bytes, _ctx: CallContext) -> bytes:
            inner = asyncio.ensure_future(asyncio.sleep(10))
            asyncio.get_running_loop().call_soon(inner.cancel)
            await inner  # raises CancelledError, but our own task is not being cancelled
            return b""

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"GiveUp": give_up}), opens(1)
        )
        with pytest.raises(TtrpcError) as info:
            await client.endpoints[1].call(SERVICE, "GiveUp")
        assert info.value.code == StatusCode.CANCELLED
        assert not server.closed and not client.closed
        await close_all(server, client)

    arun(scenario)


def test_stream_ids_run_out_at_the_top_of_the_u32_range() -> None:
    async def scenario() -> None:
        server, client = await session_pair(serve_echo, opens(1))
        endpoint = client.endpoints[1]
        endpoint._next_stream_id = 0xFFFFFFFF  # the last odd id
        assert await endpoint.call(SERVICE, "Echo", b"last") == b"last"
        with pytest.raises(TtrpcError) as info:
            await endpoint.call(SERVICE, "Echo", b"one too many")
        assert info.value.code == StatusCode.RESOURCE_EXHAUSTED
        await close_all(server, client)

    arun(scenario)
