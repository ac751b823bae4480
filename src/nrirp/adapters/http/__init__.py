"""A small HTTP server on its own threads: the daemon's metrics, health and status endpoints.

The server (``nrirp.adapters.http.server.HttpServer``) imports ``http.server``; import it
only when an endpoint is served."""

from nrirp.adapters.http.response import QueryRoute, Response, Route

__all__ = ["QueryRoute", "Response", "Route"]
