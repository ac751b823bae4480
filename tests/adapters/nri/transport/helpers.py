"""Shared helpers for the transport tests: raw peers and frames."""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from nrirp.adapters.nri.gen import ttrpc_pb2
from nrirp.adapters.nri.transport import CallContext, Session
from nrirp.adapters.nri.transport.framing import frame_message

T = TypeVar("T")

SERVICE = "test.Service"


def open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


async def echo(payload: bytes, _ctx: CallContext) -> bytes:
    return payload


def opens(*conn_ids: int) -> Callable[[Session], None]:
    """A session setup that opens the given connections and serves nothing."""

    def setup(session: Session) -> None:
        for conn_id in conn_ids:
            session.open(conn_id)

    return setup


async def session_pair(
    setup_a: Callable[[Session], None], setup_b: Callable[[Session], None], **options: Any
) -> tuple[Session, Session]:
    """Two sessions connected by a socketpair, set up before they read."""
    left, right = socket.socketpair()
    a, b = Session(**options), Session(**options)
    setup_a(a)
    setup_b(b)
    await a.attach(left)
    await b.attach(right)
    return a, b


async def close_all(*sessions: Session) -> None:
    for session in sessions:
        session.close()
    for session in sessions:
        await session.wait_closed()


class RawPeer:
    """The other end of a session's socket, driven byte by byte by the test."""

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock
        self._loop = asyncio.get_running_loop()
        self._buffer = bytearray()

    async def send(self, data: bytes) -> None:
        await self._loop.sock_sendall(self.sock, data)

    async def recv_exactly(self, count: int, timeout: float = 5.0) -> bytes:
        async with asyncio.timeout(timeout):
            while len(self._buffer) < count:
                chunk = await self._loop.sock_recv(self.sock, 65536)
                if not chunk:
                    raise EOFError(f"EOF with {len(self._buffer)} of {count} bytes")
                self._buffer += chunk
        data = bytes(self._buffer[:count])
        del self._buffer[:count]
        return data

    async def recv_frame(self) -> tuple[int, bytes]:
        """One mux frame: (conn_id, payload)."""
        conn_id, length = struct.unpack(">II", await self.recv_exactly(8))
        return conn_id, await self.recv_exactly(length)

    async def recv_message(self) -> tuple[int, int, int, int, bytes, list[int]]:
        """One ttRPC message, possibly over several frames of one connection.

        Returns (conn_id, stream_id, type, flags, data, frame payload sizes).
        """
        conn_id, first = await self.recv_frame()
        sizes = [len(first)]
        length, stream_id, msg_type, flags = struct.unpack(">IIBB", first[:10])
        data = bytearray(first[10:])
        while len(data) < length:
            more_conn, more = await self.recv_frame()
            assert more_conn == conn_id, "frames of two connections interleaved inside a message"
            sizes.append(len(more))
            data += more
        assert len(data) == length, "a frame carried bytes beyond the message"
        return conn_id, stream_id, msg_type, flags, bytes(data), sizes

    async def recv_response(self) -> tuple[int, ttrpc_pb2.Response]:
        _, stream_id, msg_type, _, data, _ = await self.recv_message()
        assert msg_type == 2, f"expected a response, got type {msg_type}"
        return stream_id, ttrpc_pb2.Response.FromString(data)

    async def expect_eof(self, timeout: float = 5.0) -> None:
        async with asyncio.timeout(timeout):
            while True:
                chunk = await self._loop.sock_recv(self.sock, 65536)
                if not chunk:
                    return

    def close(self) -> None:
        self.sock.close()


def request_frames(
    conn_id: int,
    stream_id: int,
    service: str = SERVICE,
    method: str = "Echo",
    payload: bytes = b"",
    timeout_nano: int = 0,
) -> bytes:
    request = ttrpc_pb2.Request(
        service=service, method=method, payload=payload, timeout_nano=timeout_nano
    )
    return frame_message(conn_id, stream_id, 1, 0, [request.SerializeToString()])


def raw_frame(conn_id: int, payload: bytes) -> bytes:
    return struct.pack(">II", conn_id, len(payload)) + payload


def raw_message(stream_id: int, msg_type: int, data: bytes, flags: int = 0) -> bytes:
    return struct.pack(">IIBB", len(data), stream_id, msg_type, flags) + data


async def raw_peer_session(
    setup: Callable[[Session], None], **options: Any
) -> tuple[Session, RawPeer]:
    left, right = socket.socketpair()
    session = Session(**options)
    setup(session)
    await session.attach(left)
    return session, RawPeer(right)


async def wait_until(predicate: Callable[[], bool], timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.005)


async def gather_results(*aws: Awaitable[T]) -> list[T | BaseException]:
    return list(await asyncio.gather(*aws, return_exceptions=True))
