"""NRI transport: the connection multiplexer and ttRPC over asyncio, wire-compatible with Go.

One unix socket (a *session*) carries logical connections by id; NRI uses id 1 for the Plugin
service (the plugin serves, the runtime calls) and id 2 for the Runtime service (the runtime serves,
the plugin calls). Each logical connection has an :class:`Endpoint` that serves registered services
and/or calls the peer's, so the same code works for a plugin and for a (simulated) runtime. The
transport moves bytes for ``(service, method)`` pairs; it knows nothing of the NRI messages.

Public API:

- :class:`Session` -- ``open(conn_id) -> Endpoint``; then ``await connect(path)`` (external
  plugin), ``await attach(sock)`` (an already connected socket, e.g. ``socket.socket(fileno=3)``
  for a pre-launched plugin) or accept through a :class:`Listener`. ``close()`` (idempotent),
  ``await wait_closed()``, ``on_close`` / ``add_close_callback(cb(reason))``.
- :class:`Endpoint` -- ``serve(service, {method: handler})`` and
  ``await call(service, method, payload, timeout=..., metadata=...) -> bytes``.
- :data:`Handler` -- ``async (payload: bytes, ctx: CallContext) -> bytes``; raise
  :class:`TtrpcError` for a specific status, :class:`RequestRefused` for an ordinary refusal
  (logged as one line); other exceptions become UNKNOWN with their message and are logged with
  their traceback.
- :class:`Listener` -- ``await Listener.start(path, setup)``; ``setup(session)`` runs before the
  session reads anything.
- Errors: :class:`TtrpcError` (``code``: :class:`StatusCode`, ``message``),
  :class:`OversizedMessage` (RESOURCE_EXHAUSTED, refused before writing),
  :class:`ConnectionClosed` (UNAVAILABLE; pending and later calls after the session went down),
  :class:`ProtocolError` (the reason a session was dropped for bad framing).

See ``docs/nri-transport.md`` for the framing rules and limits.
"""

from nrirp.adapters.nri.transport.errors import (
    ConnectionClosed,
    OversizedMessage,
    ProtocolError,
    RequestRefused,
    StatusCode,
    TtrpcError,
)
from nrirp.adapters.nri.transport.framing import (
    MAX_MESSAGE_SIZE,
    PLUGIN_SERVICE_CONN,
    RUNTIME_SERVICE_CONN,
)
from nrirp.adapters.nri.transport.listener import Listener
from nrirp.adapters.nri.transport.session import Session
from nrirp.adapters.nri.transport.ttrpc import CallContext, Endpoint, Handler

__all__ = [
    "MAX_MESSAGE_SIZE",
    "PLUGIN_SERVICE_CONN",
    "RUNTIME_SERVICE_CONN",
    "CallContext",
    "ConnectionClosed",
    "Endpoint",
    "Handler",
    "Listener",
    "OversizedMessage",
    "ProtocolError",
    "RequestRefused",
    "Session",
    "StatusCode",
    "TtrpcError",
]
