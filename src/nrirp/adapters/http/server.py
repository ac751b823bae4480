"""``HttpServer``: GET routes served by a threading HTTP server (standard library only).

The server runs on daemon threads of its own, so a slow client or a scrape never holds up
the event loop that serves NRI; a route that needs the pipeline's state asks the loop for it
(see ``app/daemon/observability.py``). Routes are exact paths: a plain route ignores the
query string, a query route gets its parameters; other paths get 404, other methods 405.
"""

from __future__ import annotations

import contextlib
import http.server
import logging
import re
import selectors
import socket
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

from nrirp.adapters.http.response import QueryRoute, Response, Route

log = logging.getLogger("nrirp.http")

_ENDPOINT = re.compile(
    r"(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9_.-]*)):(?P<port>\d{1,5})"
)


def parse_endpoint(endpoint: str) -> tuple[str, int, socket.AddressFamily]:
    """``host:port``, ``:port`` (every address: host ``""``) or ``[v6addr]:port`` to (host,
    port, family). Raises ``ValueError`` naming the endpoint."""
    match = _ENDPOINT.fullmatch(endpoint)
    if match is None or int(match["port"]) > 65535:
        raise ValueError(f"invalid HTTP endpoint {endpoint!r}: expected '[host]:port'")
    port = int(match["port"])
    if match["v6"] is not None:
        return match["v6"], port, socket.AF_INET6
    return match["host"], port, socket.AF_INET


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    timeout = 0  # handle_request() never waits: _serve calls it once a connection waits
    dual_stack = False
    routes: Mapping[str, Route] = {}
    query_routes: Mapping[str, QueryRoute] = {}

    def server_bind(self) -> None:
        if self.dual_stack:  # [::] taking IPv4 too, as Go's ":port"
            self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server
    timeout = 10
    protocol_version = "HTTP/1.0"
    server_version = "nrirp"
    sys_version = ""

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, *, body: bool) -> None:
        path, _, query = self.path.partition("?")
        route = self.server.routes.get(path)
        query_route = self.server.query_routes.get(path)
        if route is None and query_route is None:
            response = Response(404, b"not found\n")
        else:
            try:
                if query_route is not None:
                    params = urllib.parse.parse_qs(query, keep_blank_values=True)
                    response = query_route({k: v[0] for k, v in params.items()})
                else:
                    assert route is not None
                    response = route()
            except Exception:
                log.exception("HTTP %s failed", self.path)
                response = Response(500, b"internal error\n")
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if body:
            self.wfile.write(response.body)

    def _refuse(self) -> None:
        self.send_error(405, "only GET and HEAD")

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)


class HttpServer:
    """Serves ``routes`` (path -> :data:`Route`) and ``query_routes`` (path ->
    :data:`QueryRoute`) on ``endpoint`` (``host:port``, ``:port`` or ``[v6]:port``; port 0
    picks a free one, see :attr:`port`). ``:port`` is every address, IPv6 and IPv4 (as Go's
    ``:port``; IPv4 only on a host without IPv6), so that the probes and scrapes of a pod
    whose address is IPv6 reach it."""

    def __init__(
        self,
        endpoint: str,
        routes: Mapping[str, Route],
        query_routes: Mapping[str, QueryRoute] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.routes = dict(routes)
        self.query_routes = dict(query_routes or {})
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._wake: socket.socket | None = None

    def start(self) -> None:
        """Bind and serve on a thread. Raises ``ValueError`` for a bad endpoint and
        ``OSError`` if it cannot bind."""
        host, port, family = parse_endpoint(self.endpoint)
        both = not host and socket.has_dualstack_ipv6()
        if not host:  # every address: IPv6 and IPv4 if the host has IPv6, else IPv4
            host, family = ("::", socket.AF_INET6) if both else ("0.0.0.0", family)

        class Server(_Server):
            address_family = family
            dual_stack = both
            routes = self.routes
            query_routes = self.query_routes

        server = Server((host, port), _Handler)
        self._server = server
        self._wake, wake = socket.socketpair()
        self._thread = threading.Thread(
            target=_serve, args=(server, wake), name="nrirp-http", daemon=True
        )
        self._thread.start()

    @property
    def port(self) -> int:
        """The bound port (0 before :meth:`start`)."""
        return int(self._server.server_address[1]) if self._server is not None else 0

    def stop(self) -> None:
        """Stop serving and close the socket (idempotent). Returns at once: the serving
        thread is woken, not polled (``serve_forever`` notices a shutdown only at its next
        poll, up to half a second later, and the caller is the event loop)."""
        server, self._server = self._server, None
        if server is None:
            return
        wake, self._wake = self._wake, None
        if wake is not None:
            with contextlib.suppress(OSError):
                wake.send(b"x")
        if self._thread is not None:
            self._thread.join(5)
        server.server_close()
        if wake is not None:
            wake.close()


def _serve(server: _Server, wake: socket.socket) -> None:
    """``serve_forever`` without polling: wait for a connection or for ``wake`` (a byte, or
    its peer closed), so an idle server costs no wake-ups and stops at once."""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(server, selectors.EVENT_READ)
            selector.register(wake, selectors.EVENT_READ)
            while True:
                ready = [key.fileobj for key, _ in selector.select()]
                if wake in ready:
                    return
                server.handle_request()  # ready: accepted at once (``timeout`` 0)
                server.service_actions()
    finally:
        wake.close()
