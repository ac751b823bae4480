"""One unary gRPC call over HTTP/2 cleartext on a unix socket, by hand.

The NRI v0.1 exec client runs once per container start and must start in a few milliseconds;
``import grpc`` alone takes about 170 ms. A unary call needs little of HTTP/2: the connection
preface and SETTINGS, one HEADERS frame of literal headers, one DATA frame with the
length-prefixed message, then reading frames until the stream ends (acknowledging the server's
SETTINGS and PINGs), with the reply's headers decoded by :mod:`hpack`. The server is grpcio's
(``server.py``): it speaks h2c with prior knowledge on unix sockets.
"""

from __future__ import annotations

import socket
import struct
import time

from nrirp.adapters.engine_api.hpack import Decoder, HpackError, literal

_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_DATA, _HEADERS, _RST_STREAM, _SETTINGS, _PING, _GOAWAY, _CONTINUATION = 0, 1, 3, 4, 6, 7, 9
_END_STREAM, _ACK, _END_HEADERS, _PADDED, _PRIORITY = 0x1, 0x1, 0x4, 0x8, 0x20
_STREAM = 1
_MAX_REPLY = 4 << 20

STATUS_NAMES = {
    0: "OK",
    1: "CANCELLED",
    2: "UNKNOWN",
    3: "INVALID_ARGUMENT",
    4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND",
    6: "ALREADY_EXISTS",
    7: "PERMISSION_DENIED",
    8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION",
    10: "ABORTED",
    11: "OUT_OF_RANGE",
    12: "UNIMPLEMENTED",
    13: "INTERNAL",
    14: "UNAVAILABLE",
    15: "DATA_LOSS",
    16: "UNAUTHENTICATED",
}


class CallError(Exception):
    """The call failed after the server was reached."""


class Unreachable(CallError):
    """Nobody accepts connections on the socket (missing, refused): no server is running."""


class CallFailed(CallError):
    """The server answered with a non-OK gRPC status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{STATUS_NAMES.get(status, status)}: {message}")
        self.status = status
        self.message = message


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    return (
        struct.pack(">I", len(payload))[1:]
        + bytes([kind, flags])
        + struct.pack(">I", stream)
        + payload
    )


def request_bytes(path: str, message: bytes, timeout: float) -> bytes:
    """Everything the client sends for one call, in one buffer."""
    headers = b"".join(
        literal(name, value)
        for name, value in (
            (":method", "POST"),
            (":scheme", "http"),
            (":path", path),
            (":authority", "localhost"),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
            ("grpc-timeout", f"{max(1, int(timeout * 1000))}m"),
        )
    )
    body = b"\x00" + struct.pack(">I", len(message)) + message
    return (
        _PREFACE
        + _frame(_SETTINGS, 0, 0)
        + _frame(_HEADERS, _END_HEADERS, _STREAM, headers)
        + _frame(_DATA, _END_STREAM, _STREAM, body)
    )


class _Reader:
    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock = sock
        self._deadline = deadline
        self._buffer = bytearray()

    def exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise CallError("timed out waiting for the engine's reply")
            self._sock.settimeout(left)
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                raise CallError("timed out waiting for the engine's reply") from None
            if not chunk:
                raise CallError("the engine closed the connection before replying")
            self._buffer += chunk
        data = bytes(self._buffer[:size])
        del self._buffer[:size]
        return data


def _unpadded(flags: int, payload: bytes, kind: int) -> bytes:
    if flags & _PADDED:
        if not payload or payload[0] >= len(payload):
            raise CallError("bad padding in a reply frame")
        payload = payload[1 : len(payload) - payload[0]]
    if kind == _HEADERS and flags & _PRIORITY:
        payload = payload[5:]
    return payload


def unary_call(socket_path: str, path: str, message: bytes, timeout: float = 10.0) -> bytes:
    """Call ``path`` (``/package.Service/Method``) with the serialized ``message``; returns the
    serialized reply.

    Raises :class:`Unreachable` when no server listens on ``socket_path``, :class:`CallFailed`
    for a non-OK status, :class:`CallError` for anything else (timeout, broken reply).
    """
    deadline = time.monotonic() + timeout
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        try:
            sock.connect(socket_path)
        except (FileNotFoundError, ConnectionRefusedError, NotADirectoryError) as exc:
            raise Unreachable(f"no engine API at {socket_path}: {exc.strerror}") from None
        except OSError as exc:
            raise CallError(f"cannot connect to {socket_path}: {exc}") from None
        try:
            sock.sendall(request_bytes(path, message, timeout))
            return _read_reply(_Reader(sock, deadline), sock)
        except OSError as exc:
            raise CallError(f"engine API connection {socket_path} failed: {exc}") from None
    finally:
        sock.close()


def _read_reply(reader: _Reader, sock: socket.socket) -> bytes:
    decoder = Decoder()
    body = bytearray()
    headers: dict[str, str] = {}
    block = bytearray()
    block_ends_stream = False
    while True:
        head = reader.exactly(9)
        size = int.from_bytes(head[:3], "big")
        kind, flags = head[3], head[4]
        stream = int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
        if size > _MAX_REPLY:
            raise CallError(f"reply frame of {size} bytes is too large")
        payload = reader.exactly(size)
        if kind == _SETTINGS and not flags & _ACK:
            sock.sendall(_frame(_SETTINGS, _ACK, 0))
        elif kind == _PING and not flags & _ACK:
            sock.sendall(_frame(_PING, _ACK, 0, payload))
        elif kind == _GOAWAY:
            code = int.from_bytes(payload[4:8], "big") if len(payload) >= 8 else 0
            if code or stream:
                raise CallError(f"the engine ended the connection (HTTP/2 error {code})")
        elif stream != _STREAM:
            continue
        elif kind == _RST_STREAM:
            code = int.from_bytes(payload[:4], "big") if len(payload) >= 4 else 0
            raise CallError(f"the engine reset the call (HTTP/2 error {code})")
        elif kind == _DATA:
            body += _unpadded(flags, payload, kind)
            if len(body) > _MAX_REPLY:
                raise CallError("reply too large")
            if flags & _END_STREAM:
                break
        elif kind in (_HEADERS, _CONTINUATION):
            if kind == _HEADERS:
                block = bytearray(_unpadded(flags, payload, kind))
                block_ends_stream = bool(flags & _END_STREAM)
            else:
                block += payload
            if flags & _END_HEADERS:
                try:
                    headers.update(decoder.decode(bytes(block)))
                except HpackError as exc:
                    raise CallError(f"cannot decode the reply's headers: {exc}") from None
                if block_ends_stream:
                    break
    return _message(headers, bytes(body))


def percent_decode(text: str) -> str:
    """gRPC's percent-encoding of ``grpc-message`` undone (``urllib`` costs milliseconds)."""
    if "%" not in text:
        return text
    raw = text.encode()
    out = bytearray()
    i = 0
    while i < len(raw):
        if raw[i] == 0x25 and i + 3 <= len(raw):
            try:
                out.append(int(raw[i + 1 : i + 3], 16))
                i += 3
                continue
            except ValueError:
                pass
        out.append(raw[i])
        i += 1
    return out.decode("utf-8", "replace")


def _message(headers: dict[str, str], body: bytes) -> bytes:
    if headers.get(":status", "200") != "200":
        raise CallError(f"HTTP status {headers[':status']} from the engine API")
    status_text = headers.get("grpc-status")
    if status_text is None:
        raise CallError("the engine's reply has no gRPC status")
    try:
        status = int(status_text)
    except ValueError:
        raise CallError(f"bad gRPC status {status_text!r}") from None
    if status != 0:
        raise CallFailed(status, percent_decode(headers.get("grpc-message", "")))
    if len(body) < 5:
        raise CallError("the engine's reply has no message")
    if body[0] != 0:
        raise CallError("compressed replies are not supported")
    size = int.from_bytes(body[1:5], "big")
    if len(body) != 5 + size:
        raise CallError("the engine's reply has a bad length")
    return body[5:]
