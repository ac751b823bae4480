"""``HttpServer``: routes, and a stop that returns at once (the daemon stops or moves its
server on the event loop, when a reload changes ``instrumentation.httpEndpoint``)."""

from __future__ import annotations

import socket
import time
import urllib.error
import urllib.request

import pytest

from nrirp.adapters.http.response import Response
from nrirp.adapters.http.server import HttpServer


def get(port: int, path: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_routes_and_unknown_paths() -> None:
    server = HttpServer(
        "127.0.0.1:0",
        {"/healthz": lambda: Response(200, b"ok\n")},
        {"/explain": lambda query: Response(200, query.get("container", "").encode())},
    )
    server.start()
    try:
        assert get(server.port, "/healthz") == (200, b"ok\n")
        assert get(server.port, "/healthz?x=1") == (200, b"ok\n")
        assert get(server.port, "/explain?container=a/b/c") == (200, b"a/b/c")
        assert get(server.port, "/nope") == (404, b"not found\n")
    finally:
        server.stop()


@pytest.mark.parametrize("idle", [0.0, 0.3, 0.7])
def test_stop_returns_at_once_and_frees_the_port(idle: float) -> None:
    """``serve_forever`` noticed a shutdown only at its next poll: stopping an idle server
    held its caller (the daemon's event loop) up to half a second."""
    server = HttpServer("127.0.0.1:0", {"/healthz": lambda: Response(200, b"ok\n")})
    server.start()
    port = server.port
    assert get(port, "/healthz")[0] == 200
    time.sleep(idle)
    began = time.perf_counter()
    server.stop()
    assert time.perf_counter() - began < 0.1
    server.stop()  # idempotent
    with socket.create_server(("127.0.0.1", port)):  # the port is free again
        pass
    again = HttpServer(f"127.0.0.1:{port}", {"/healthz": lambda: Response(200, b"again\n")})
    again.start()
    try:
        assert get(port, "/healthz") == (200, b"again\n")
    finally:
        again.stop()


@pytest.mark.skipif(not socket.has_dualstack_ipv6(), reason="no dual-stack IPv6 here")
def test_an_endpoint_without_host_is_served_on_ipv4_and_ipv6() -> None:
    """``:port`` (the DaemonSet's ``--http-endpoint :8891``) bound 0.0.0.0 only: on a pod
    whose address is IPv6 (a single-stack IPv6 cluster) the kubelet's probes and Prometheus
    found nothing there. Go's ``:8891``, the reference's, listens on both."""
    server = HttpServer(":0", {"/healthz": lambda: Response(200, b"ok\n")})
    server.start()
    try:
        assert get(server.port, "/healthz") == (200, b"ok\n")
        with urllib.request.urlopen(f"http://[::1]:{server.port}/healthz", timeout=10) as got:
            assert (got.status, got.read()) == (200, b"ok\n")
    finally:
        server.stop()


def test_an_endpoint_without_host_falls_back_to_ipv4(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without IPv6 (a kernel booted with ``ipv6.disable=1``) ``:port`` is every IPv4
    address, as before."""
    monkeypatch.setattr(socket, "has_dualstack_ipv6", lambda: False)
    server = HttpServer(":0", {"/healthz": lambda: Response(200, b"ok\n")})
    server.start()
    try:
        assert get(server.port, "/healthz") == (200, b"ok\n")
        with pytest.raises(urllib.error.URLError):
            urllib.request.urlopen(f"http://[::1]:{server.port}/healthz", timeout=10)
    finally:
        server.stop()


def test_an_endpoint_in_use_is_refused_with_or_without_host() -> None:
    with socket.create_server(("0.0.0.0", 0)) as taken:
        port = taken.getsockname()[1]
        for endpoint in (f":{port}", f"0.0.0.0:{port}", f"127.0.0.1:{port}"):
            server = HttpServer(endpoint, {})
            with pytest.raises(OSError, match="in use"):
                server.start()
