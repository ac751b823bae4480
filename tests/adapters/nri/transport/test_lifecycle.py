"""Session lifecycle and hostile peers: close paths, vanishing peers, bad framing, leaks, floods."""

from __future__ import annotations

import asyncio
import fcntl
import os
import random
import socket
import struct
import termios
from pathlib import Path

import pytest

from nrirp.adapters.nri.transport import (
    CallContext,
    ConnectionClosed,
    Listener,
    ProtocolError,
    Session,
    StatusCode,
)
from nrirp.adapters.nri.transport.framing import MAX_INBOUND_FRAME
from tests.support.aio import arun

from .helpers import (
    SERVICE,
    RawPeer,
    close_all,
    echo,
    open_fds,
    opens,
    raw_frame,
    raw_message,
    raw_peer_session,
    request_frames,
    session_pair,
    wait_until,
)


class CloseLog:
    def __init__(self) -> None:
        self.reasons: list[BaseException | None] = []

    def __call__(self, reason: BaseException | None) -> None:
        self.reasons.append(reason)


def test_local_close_is_idempotent_fails_calls_and_leaves_nothing_behind() -> None:
    fds_before = open_fds()

    async def scenario() -> None:
        closes = CloseLog()
        started = asyncio.Event()
        cancelled = asyncio.Event()

        async def hang(_payload: bytes, _ctx: CallContext) -> bytes:
            started.set()
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.set()
                raise
            return b""

        server, client = await session_pair(
            lambda s: s.open(1).serve(SERVICE, {"Hang": hang}), opens(1, 2)
        )
        client.add_close_callback(closes)
        call = asyncio.ensure_future(client.endpoints[1].call(SERVICE, "Hang"))
        await started.wait()
        client.close()
        client.close()
        with pytest.raises(ConnectionClosed):
            await call
        with pytest.raises(ConnectionClosed):
            await client.endpoints[2].call(SERVICE, "After")
        assert closes.reasons == [None]
        assert client.closed and client.close_reason is None
        # the server sees EOF: its running handler is cancelled
        await server.wait_closed()
        assert cancelled.is_set()
        assert isinstance(server.close_reason, ConnectionClosed)
        await client.wait_closed()
        server.close()
        client.close()
        assert closes.reasons == [None]
        late = CloseLog()
        client.add_close_callback(late)
        assert late.reasons == [None]

    arun(scenario)
    assert open_fds() == fds_before


def test_peer_vanishing_mid_message_fails_pending_calls_promptly() -> None:
    async def scenario() -> None:
        closes = CloseLog()
        session, peer = await raw_peer_session(opens(2), on_close=closes)
        calls = [asyncio.ensure_future(session.endpoints[2].call(SERVICE, "M")) for _ in range(3)]
        for _ in calls:
            await peer.recv_message()
        reply = raw_frame(2, raw_message(1, 2, b"\x12\x05hello"))
        await peer.send(reply[:-3])  # a truncated frame ...
        await asyncio.sleep(0.01)
        loop = asyncio.get_running_loop()
        start = loop.time()
        peer.close()  # ... then the peer is gone
        results = await asyncio.gather(*calls, return_exceptions=True)
        assert loop.time() - start < 1.0
        assert all(isinstance(r, ConnectionClosed) for r in results), results
        assert all(r.code == StatusCode.UNAVAILABLE for r in results)  # type: ignore[union-attr]
        await session.wait_closed()
        assert len(closes.reasons) == 1
        assert isinstance(closes.reasons[0], ConnectionClosed)

    arun(scenario)


@pytest.mark.parametrize(
    "prefix",
    [b"\x00\x00\x00", raw_frame(1, b"")[:5], struct.pack(">II", 1, 100) + b"partial"],
)
def test_truncated_frames_then_eof_close_cleanly(prefix: bytes) -> None:
    async def scenario() -> None:
        closes = CloseLog()
        session, peer = await raw_peer_session(
            lambda s: s.open(1).serve(SERVICE, {"Echo": echo}), on_close=closes
        )
        await peer.send(prefix)
        peer.sock.shutdown(socket.SHUT_WR)
        await session.wait_closed()
        assert len(closes.reasons) == 1 and isinstance(closes.reasons[0], ConnectionClosed)
        await peer.expect_eof()
        peer.close()

    arun(scenario)


def test_absurd_frame_length_drops_the_session_with_a_protocol_error() -> None:
    async def scenario() -> None:
        closes = CloseLog()
        session, peer = await raw_peer_session(opens(1, 2), on_close=closes)
        call = asyncio.ensure_future(session.endpoints[2].call(SERVICE, "M"))
        await peer.recv_message()
        await peer.send(struct.pack(">II", 1, MAX_INBOUND_FRAME + 1))
        with pytest.raises(ConnectionClosed) as info:
            await call
        assert isinstance(info.value.__cause__, ProtocolError)
        await peer.expect_eof()
        await session.wait_closed()
        assert len(closes.reasons) == 1 and isinstance(closes.reasons[0], ProtocolError)
        peer.close()

    arun(scenario)


def test_frames_for_unknown_connections_are_dropped() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(lambda s: s.open(1).serve(SERVICE, {"Echo": echo}))
        await peer.send(
            request_frames(0, 1, payload=b"reserved")
            + request_frames(9, 1, payload=b"unknown")
            + raw_frame(0xFFFFFFFF, b"\xff" * 5000)
            + request_frames(1, 1, payload=b"known")
        )
        conn_id, stream_id, _, _, data, _ = await peer.recv_message()
        assert (conn_id, stream_id) == (1, 1) and data.endswith(b"known")
        assert not session.closed
        await close_all(session)
        peer.close()

    arun(scenario)


def test_garbage_bytes_give_a_clean_disconnect_or_are_ignored_never_a_crash() -> None:
    async def scenario() -> None:
        def setup(session: Session) -> None:
            session.open(1).serve(SERVICE, {"Echo": echo})
            session.open(2)

        rng = random.Random(1234)
        for _ in range(30):
            closes = CloseLog()
            session, peer = await raw_peer_session(setup, on_close=closes)
            await peer.send(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 3000))))
            peer.close()
            await session.wait_closed()
            assert len(closes.reasons) == 1
            assert isinstance(closes.reasons[0], ConnectionClosed | ProtocolError | OSError)

    arun(scenario)


def test_writers_wait_while_the_peer_does_not_read() -> None:
    async def scenario() -> None:
        session, peer = await raw_peer_session(opens(2))
        endpoint = session.endpoints[2]
        payload = b"p" * (1 << 20)
        calls = [asyncio.ensure_future(endpoint.call(SERVICE, "M", payload)) for _ in range(20)]
        await asyncio.sleep(0.1)
        assert not session.writable
        in_flight = session.buffered_output + _unread_bytes(peer.sock)
        assert in_flight < 3 * len(payload), "senders must wait, not queue everything"
        received = []
        for _ in calls:  # now read: every request arrives whole, in order
            _, stream_id, _, _, data, _ = await peer.recv_message()
            assert len(data) > len(payload)
            received.append(stream_id)
            await peer.send(raw_frame(2, raw_message(stream_id, 2, b"")))
        assert received == list(range(1, 40, 2))
        assert await asyncio.gather(*calls) == [b""] * 20
        await close_all(session)
        peer.close()

    arun(scenario, timeout=30)


def test_a_peer_flooding_requests_without_reading_replies_gets_dropped() -> None:
    async def scenario() -> None:
        closes = CloseLog()
        session, peer = await raw_peer_session(opens(1), on_close=closes, max_write_buffer=8 << 20)
        bad = request_frames(1, 2)  # even id: answered synchronously with an error status
        flood = bad * 20000
        with pytest.raises(OSError):
            for _ in range(100):
                await asyncio.wait_for(peer.send(flood), 5)
                if session.closed:
                    await peer.send(flood)  # the session is gone: eventually EPIPE/ECONNRESET
        await session.wait_closed()
        assert len(closes.reasons) == 1 and isinstance(closes.reasons[0], ProtocolError)
        assert "not reading" in str(closes.reasons[0])
        peer.close()

    arun(scenario, timeout=60)


def test_listener_sessions_are_set_up_before_reading_and_closed_with_it(tmp_path: Path) -> None:
    fds_before = open_fds()

    async def scenario() -> None:
        path = tmp_path / "nri.sock"
        accepted: list[Session] = []

        def setup(session: Session) -> None:
            accepted.append(session)
            session.open(2).serve(SERVICE, {"Echo": echo})

        listener = await Listener.start(path, setup)
        raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        raw.connect(str(path))
        raw.sendall(request_frames(2, 1, payload=b"first byte"))  # before the server looked
        peer = RawPeer(raw)
        _, response = await peer.recv_response()
        assert response.payload == b"first byte"

        client = Session()
        to_runtime = client.open(2)
        await client.connect(path)
        assert await to_runtime.call(SERVICE, "Echo", b"via path", timeout=5) == b"via path"
        await wait_until(lambda: len(listener.sessions) == 2)
        listener.close()
        listener.close()
        await listener.wait_closed()
        assert not path.exists()
        assert all(s.closed for s in accepted)
        await peer.expect_eof()
        await client.wait_closed()
        assert isinstance(client.close_reason, ConnectionClosed)
        peer.close()

    arun(scenario)
    assert open_fds() == fds_before


def test_listener_closes_a_session_whose_setup_fails(tmp_path: Path) -> None:
    async def scenario() -> None:
        def setup(_session: Session) -> None:
            raise RuntimeError("setup bug")

        listener = await Listener.start(tmp_path / "s.sock", setup)
        client = Session()
        endpoint = client.open(1)
        await client.connect(tmp_path / "s.sock")
        with pytest.raises(ConnectionClosed):
            await endpoint.call(SERVICE, "M", timeout=5)
        listener.close()
        await listener.wait_closed()
        await client.wait_closed()

    arun(scenario)


def test_connect_failure_leaves_the_session_reusable(tmp_path: Path) -> None:
    async def scenario() -> None:
        session = Session()
        endpoint = session.open(2)
        with pytest.raises(FileNotFoundError):
            await session.connect(tmp_path / "missing.sock")
        with pytest.raises(ConnectionClosed, match="not connected"):
            await endpoint.call(SERVICE, "M")
        listener = await Listener.start(
            tmp_path / "late.sock", lambda s: s.open(2).serve(SERVICE, {"Echo": echo})
        )
        await session.connect(tmp_path / "late.sock")
        assert await endpoint.call(SERVICE, "Echo", b"ok") == b"ok"
        with pytest.raises(RuntimeError, match="already attached"):
            await session.connect(tmp_path / "late.sock")
        session.close()
        listener.close()
        await session.wait_closed()
        await listener.wait_closed()

    arun(scenario)


def test_open_rejects_reserved_and_duplicate_ids() -> None:
    session = Session()
    session.open(1)
    with pytest.raises(ValueError, match="reserved"):
        session.open(0)
    with pytest.raises(ValueError, match="already open"):
        session.open(1)
    session.endpoints[1].serve(SERVICE, {"Echo": echo})
    with pytest.raises(ValueError, match="already served"):
        session.endpoints[1].serve(SERVICE, {})
    assert set(session.endpoints[1].services[SERVICE]) == {"Echo"}


def test_attach_to_an_inherited_fd_like_a_pre_launched_plugin() -> None:
    async def scenario() -> None:
        left, right = socket.socketpair()
        inherited = os.dup(right.fileno())  # what the runtime hands over as fd 3
        right.close()
        plugin = Session()
        plugin.open(1).serve(SERVICE, {"Echo": echo})
        await plugin.attach(socket.socket(fileno=inherited))
        runtime = Session()
        endpoint = runtime.open(1)
        await runtime.attach(left)
        assert await endpoint.call(SERVICE, "Echo", b"fd3") == b"fd3"
        await close_all(runtime, plugin)

    arun(scenario)


def _unread_bytes(sock: socket.socket) -> int:
    buf = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    return int(struct.unpack("i", buf)[0])


def test_connection_reset_is_reported_as_the_close_reason() -> None:
    async def scenario() -> None:
        closes = CloseLog()
        session, peer = await raw_peer_session(opens(2), on_close=closes)
        call = asyncio.ensure_future(session.endpoints[2].call(SERVICE, "M"))
        await asyncio.sleep(0.01)  # the request sits unread in the peer's socket ...
        peer.close()  # ... so closing it resets the connection (ECONNRESET on unix sockets)
        with pytest.raises(ConnectionClosed) as info:
            await call
        assert isinstance(info.value.__cause__, ConnectionResetError)
        await session.wait_closed()
        assert len(closes.reasons) == 1 and isinstance(closes.reasons[0], ConnectionResetError)

    arun(scenario)


def test_a_failing_close_callback_does_not_stop_the_others(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario() -> None:
        def broken(_reason: BaseException | None) -> None:
            raise RuntimeError("callback bug")

        after = CloseLog()
        session = Session(on_close=broken)
        session.add_close_callback(after)
        session.close()
        assert after.reasons == [None]
        await session.wait_closed()

    arun(scenario)
    assert "callback bug" in caplog.text
