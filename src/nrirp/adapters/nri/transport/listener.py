"""Accepting sessions on a unix socket path (the runtime side, e.g. a simulated runtime)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable
from typing import Any

from nrirp.adapters.nri.transport.session import Session

log = logging.getLogger("nrirp.nri.transport.listener")

SessionSetup = Callable[[Session], None]
"""Called with each accepted session before any of its bytes are read: open connections here."""


class Listener:
    """A listening unix socket that wraps every accepted connection in a :class:`Session`.

    Create with :meth:`start`. ``setup(session)`` runs synchronously for each new session before
    its first byte is read, so the connections it opens miss nothing; if it raises, the session is
    closed. :meth:`close` stops accepting, closes every live session and removes the socket file.
    """

    def __init__(self, path: str, setup: SessionSetup, session_options: dict[str, Any]) -> None:
        self._path = path
        self._setup = setup
        self._session_options = session_options
        self._sessions: set[Session] = set()
        self._closing: list[Session] = []
        self._server: asyncio.AbstractServer | None = None
        self._inode: tuple[int, int] | None = None

    @classmethod
    async def start(
        cls, path: str | os.PathLike[str], setup: SessionSetup, **session_options: Any
    ) -> Listener:
        """Bind and listen on ``path`` (a stale socket file there is replaced).

        ``session_options`` are passed to each :class:`Session` (``max_inflight``, ...).
        """
        listener = cls(os.fspath(path), setup, session_options)
        loop = asyncio.get_running_loop()
        listener._server = await loop.create_unix_server(listener._accept, listener._path)
        info = os.stat(listener._path)
        listener._inode = (info.st_dev, info.st_ino)
        return listener

    @property
    def path(self) -> str:
        """The socket path."""
        return self._path

    @property
    def sessions(self) -> frozenset[Session]:
        """Sessions accepted and still open."""
        return frozenset(self._sessions)

    def _accept(self) -> asyncio.BufferedProtocol:
        session = Session(**self._session_options)
        protocol = session.make_protocol()
        self._sessions.add(session)
        session.add_close_callback(lambda _reason: self._sessions.discard(session))
        try:
            self._setup(session)
        except Exception:
            log.exception("session setup failed; closing the new session")
            session.close()
        return protocol

    def close(self) -> None:
        """Stop accepting, close all sessions and unlink the socket file (idempotent)."""
        if self._server is not None:
            self._server.close()
        self._closing.extend(self._sessions)
        for session in list(self._sessions):
            session.close()
        if self._inode is not None:
            with contextlib.suppress(OSError):
                info = os.stat(self._path)
                if (info.st_dev, info.st_ino) == self._inode:
                    os.unlink(self._path)
            self._inode = None

    async def wait_closed(self) -> None:
        """Wait until the listening socket and all sessions closed by :meth:`close` are gone."""
        if self._server is not None:
            await self._server.wait_closed()
        closing, self._closing = self._closing, []
        for session in closing:
            await session.wait_closed()
