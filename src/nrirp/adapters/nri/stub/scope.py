"""Knowing whether code runs on behalf of an event handler whose reply is not yet sent.

While the runtime waits for a handler's reply it holds its lock, and it serves UpdateContainers
only under that lock. So a handler must never wait for an UpdateContainers reply. The stub marks
every handler invocation with a :class:`HandlerScope` in a context variable; tasks the handler
creates inherit it. ``stub.update_containers()`` refuses to be awaited while the scope is active,
and ``stub.schedule_update_containers()`` uses :meth:`HandlerScope.replied` to send after the reply.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading


class HandlerActivity:
    """Whether event handlers of the stubs in this process are running (invocations not
    finished yet), for background threads that step aside for them (the state file's writer,
    the log thread, the recorder): :attr:`busy` to look, :meth:`wait_idle` to wait without
    holding the GIL. :meth:`started` and :meth:`finished` are called on the event loop, on
    every request's path: they count, and touch the event only when a thread waits on it."""

    def __init__(self) -> None:
        self._running = 0
        self._waiting: list[threading.Event] = []
        """One event per thread waiting in :meth:`wait_idle` (none clears another's)."""
        self._waiting_lock = threading.Lock()  # the waiting threads' only, never the loop's

    @property
    def busy(self) -> bool:
        return self._running > 0

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no handler runs, at most ``timeout`` seconds; True if none does."""
        if not self._running:
            return True
        idle = threading.Event()
        with self._waiting_lock:
            self._waiting.append(idle)
        try:
            if not self._running:  # finished before this waiter was listed: not set for it
                return True
            return idle.wait(timeout)
        finally:
            with self._waiting_lock:
                self._waiting.remove(idle)

    def started(self) -> None:
        self._running += 1

    def finished(self) -> None:
        self._running -= 1
        if not self._running and self._waiting:
            for idle in tuple(self._waiting):
                idle.set()


HANDLERS = HandlerActivity()
"""The handlers of every stub in this process."""


def handlers_running() -> bool:
    """True while some event handler of a stub in this process has not returned. Safe to
    call from any thread."""
    return HANDLERS.busy


class HandlerScope:
    """One handler invocation: active until the handler returned and its reply was queued."""

    __slots__ = ("_replied", "active")

    def __init__(self) -> None:
        self.active = True
        self._replied: asyncio.Future[None] | None = None
        HANDLERS.started()

    def replied(self) -> asyncio.Future[None]:
        """A future resolved once the handler's reply has been handed to the transport."""
        if self._replied is None:
            self._replied = asyncio.get_running_loop().create_future()
            if not self.active:
                self._replied.set_result(None)
        return self._replied

    def finish(self) -> None:
        """The handler returned. Waiters wake on the next loop iteration: by then the transport
        has written the reply, which it does in the same step in which the handler returns."""
        if self.active:
            HANDLERS.finished()
        self.active = False
        waiter = self._replied
        if waiter is not None:
            waiter.get_loop().call_soon(_resolve, waiter)


def _resolve(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


CURRENT_SCOPE: contextvars.ContextVar[HandlerScope | None] = contextvars.ContextVar(
    "nrirp_nri_handler_scope", default=None
)


def active_scope() -> HandlerScope | None:
    """The scope of the handler this code runs for, if that handler has not replied yet."""
    scope = CURRENT_SCOPE.get()
    return scope if scope is not None and scope.active else None
