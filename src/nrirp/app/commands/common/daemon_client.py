"""Asking a running daemon: its status socket ``<state-dir>/status.sock`` (one request line,
a JSON answer) or its HTTP endpoint (``instrumentation.httpEndpoint``)."""

from __future__ import annotations

import socket

STATUS_SOCKET = "status.sock"
TIMEOUT = 10.0


def socket_path(state_dir: str) -> str:
    return f"{state_dir.rstrip('/')}/{STATUS_SOCKET}"


def fetch_socket(state_dir: str, request: str = "/status") -> bytes:
    """The daemon's answer to ``request`` (``/status``, ``/explain?container=...``) on its
    status socket."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(TIMEOUT)
        sock.connect(socket_path(state_dir))
        sock.sendall(request.encode() + b"\n")
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def fetch_http(endpoint: str, path: str = "/status") -> bytes:
    """``GET http://ENDPOINT/PATH``'s body (``:port`` means 127.0.0.1); an error status's
    body is returned too when it is JSON (the daemon's error documents)."""
    import urllib.error  # here: every command's start-up (nrirp run's too) would pay for it
    import urllib.request

    host = endpoint
    if host.startswith(":"):
        host = "127.0.0.1" + host
    try:
        with urllib.request.urlopen(f"http://{host}{path}", timeout=TIMEOUT) as answer:
            body: bytes = answer.read()
    except urllib.error.HTTPError as error:
        if error.headers.get_content_type() != "application/json":
            raise
        body = error.read()
    return body
