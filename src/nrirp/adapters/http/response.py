"""What a route answers (kept apart from the server so that it costs no ``http.server``
import)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import attrs


@attrs.frozen
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"


Route = Callable[[], Response]
QueryRoute = Callable[[Mapping[str, str]], Response]
"""A route that reads the query string: each parameter's first value, by name."""
