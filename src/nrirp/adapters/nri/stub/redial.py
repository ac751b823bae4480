"""When an external plugin dials the runtime again: as soon as its socket is (back) there.

A runtime that restarts removes its NRI socket and creates a new one; one that crashed leaves a
stale socket that refuses connections until the new runtime replaces it. So instead of sleeping
through a growing backoff, the plugin watches the socket path (a ``stat`` every
``Backoff.watch_interval`` seconds: 20 cheap system calls a second, robust when the directory
itself is missing, no file-system events to set up):

* the path is absent: wait until it appears, then dial at once;
* the path is there but the last dial (or connection) failed on it: wait the backoff delay of
  the attempt, but dial at once if the path is replaced by a new socket meanwhile (or goes away
  and comes back). Only failures against one and the same socket make the backoff grow;
* except on a socket that appeared less than ``Backoff.fresh_grace`` seconds ago: a runtime
  creates its socket (bind) an instant before it listens, and a dial in between is refused, so
  such a socket is dialled again at the next check, without backoff.

Every decision is recorded in :attr:`Redialer.history` (the latest few) and logged.
"""

from __future__ import annotations

import asyncio
import collections
import enum
import logging
import os
import time
from collections.abc import Callable

import attrs

from nrirp.adapters.nri.stub.backoff import Backoff

log = logging.getLogger("nrirp.nri.stub")

SocketId = tuple[int, int, int]
"""``(st_dev, st_ino, st_ctime_ns)``: a socket created anew differs even if its inode number is
reused."""

UNKNOWN_SOCKET: SocketId = (0, 0, 0)
"""The id of a path that exists but cannot be inspected (e.g. no search permission)."""

HISTORY_LENGTH = 64


def socket_id(path: str) -> SocketId | None:
    """The identity of whatever is at ``path``, or ``None`` if nothing is there."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return UNKNOWN_SOCKET  # dial and let the connection error say what is wrong
    return (st.st_dev, st.st_ino, st.st_ctime_ns)


class Wake(enum.Enum):
    """Why the wait before a dial ended."""

    STOPPED = "stopped"
    APPEARED = "socket appeared"
    REPLACED = "socket replaced"
    BACKOFF = "backoff elapsed"


@attrs.frozen
class Redial:
    """One wait before a dial: the backoff ``attempt`` it used (None for no backoff) and its
    ``delay`` (None when waiting for the socket to appear; the watch interval when a fresh socket
    refused), and why it ended."""

    attempt: int | None
    delay: float | None
    wake: Wake


class Redialer:
    """Decides how long an external plugin waits before dialling ``path`` again."""

    def __init__(
        self,
        path: str,
        backoff: Backoff,
        *,
        identify: Callable[[str], SocketId | None] = socket_id,
    ) -> None:
        self.path = path
        self.backoff = backoff
        self._identify = identify
        self.attempt = 0
        """The backoff attempt the next failure on the same socket waits for."""
        self.history: collections.deque[Redial] = collections.deque(maxlen=HISTORY_LENGTH)
        """The latest waits, oldest first."""
        self._dialled: SocketId | None = None
        self._fresh: tuple[SocketId | None, float] | None = None
        """The socket that last appeared (or replaced another), and when it was seen."""

    def dialling(self) -> None:
        """Note the socket about to be dialled (call right before each dial)."""
        self._dialled = self._identify(self.path)

    def connection_was_long(self) -> None:
        """A connection stayed up ``backoff.reset_after`` seconds: start the backoff over."""
        self.attempt = 0

    async def wait(self, stop: asyncio.Event, what: str, again: str = "retrying") -> bool:
        """Wait before the next dial. ``what`` (a failed dial or a lost connection) and
        ``again`` make the log line, e.g. ``<what>; retrying in 0.5 s``. Returns True if
        ``stop`` was set meanwhile."""
        current = self._identify(self.path)
        if current is None:
            log.warning("%s; %s when the NRI socket %s appears", what, again, self.path)
            return self._record(None, None, await self._until_present(stop))
        if current != self._dialled:  # a new runtime since that dial: no reason to wait
            log.warning("%s; %s at once: the NRI socket %s was replaced", what, again, self.path)
            return self._record(None, None, Wake.REPLACED)
        if self._is_fresh(current):
            interval = self.backoff.watch_interval
            log.info(
                "%s; the NRI socket %s is new and may not listen yet: %s at the next check",
                what, self.path, again,
            )  # fmt: skip
            return self._record(None, interval, await self._until_changed(stop, current, interval))
        attempt = self.attempt
        delay = self.backoff.delay(attempt)
        self.attempt += 1
        log.warning("%s; %s in %.1f s", what, again, delay)
        return self._record(attempt, delay, await self._until_changed(stop, current, delay))

    def _is_fresh(self, current: SocketId) -> bool:
        if self._fresh is None:
            return False
        socket, seen = self._fresh
        return socket == current and time.monotonic() - seen < self.backoff.fresh_grace

    def _record(self, attempt: int | None, delay: float | None, wake: Wake) -> bool:
        self.history.append(Redial(attempt, delay, wake))
        if wake in (Wake.APPEARED, Wake.REPLACED):
            self.attempt = 0
            self._fresh = (self._identify(self.path), time.monotonic())
            if attempt is not None or wake is Wake.APPEARED:  # the watcher cut a wait short
                log.info("NRI socket %s: %s, dialling", self.path, wake.value)
        return wake is Wake.STOPPED

    async def _until_present(self, stop: asyncio.Event) -> Wake:
        while True:
            if await _stopped_within(stop, self.backoff.watch_interval):
                return Wake.STOPPED
            if self._identify(self.path) is not None:
                return Wake.APPEARED

    async def _until_changed(self, stop: asyncio.Event, seen: SocketId, delay: float) -> Wake:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + delay
        while True:
            left = deadline - loop.time()
            if left <= 0:
                return Wake.BACKOFF
            if await _stopped_within(stop, min(left, self.backoff.watch_interval)):
                return Wake.STOPPED
            now = self._identify(self.path)
            if now is None:
                return await self._until_present(stop)
            if now != seen:
                return Wake.REPLACED


async def _stopped_within(stop: asyncio.Event, seconds: float) -> bool:
    if stop.is_set():
        return True
    try:
        async with asyncio.timeout(seconds):
            await stop.wait()
    except TimeoutError:
        return stop.is_set()
    return True
