"""What happened, for tests: every call to a plugin and its outcome, plugin lifecycle events,
updates plugins asked for, and a way to wait until something happened."""

from __future__ import annotations

import asyncio
import collections
import enum
from collections.abc import Callable, Sequence

import attrs
from google.protobuf.message import Message


class CallOutcome(enum.Enum):
    """How a call to a plugin ended."""

    OK = "ok"
    ERROR = "error"
    """The plugin answered with an error status of its own."""
    FATAL = "fatal"
    """Timeout or lost connection: the plugin was dropped and the runtime carried on."""
    FALLBACK = "fallback"
    """UNIMPLEMENTED for a dedicated event RPC: the event was re-sent as StateChange."""


@attrs.frozen
class PluginCall:
    """One ttRPC call between the runtime and a plugin.

    ``inbound`` is False for calls the runtime made (Configure, events, ...) and True for calls
    the plugin made (UpdateContainers). ``event`` is the NRI event name for event deliveries
    (also when sent as StateChange). Times are on the event loop clock.
    """

    seq: int
    plugin: str
    method: str
    event: str | None
    outcome: CallOutcome
    code: int | None
    error: str | None
    started: float
    duration: float
    inbound: bool = False
    request: Message | None = attrs.field(default=None, eq=False, repr=False)
    reply: Message | None = attrs.field(default=None, eq=False, repr=False)


class PluginEventKind(enum.Enum):
    """Steps in a plugin connection's life."""

    CONNECTED = "connected"
    REGISTERED = "registered"
    CONFIGURED = "configured"
    SYNCHRONIZED = "synchronized"
    """Synchronized (external) or configured (pre-launched): it now receives events."""
    REJECTED = "rejected"
    """Registration, configuration or synchronization failed."""
    CLOSED = "closed"
    """The connection is gone (dropped by the runtime, or the plugin went away)."""


@attrs.frozen
class PluginEvent:
    """A lifecycle step of a plugin connection; ``plugin`` is empty before registration."""

    seq: int
    kind: PluginEventKind
    plugin: str
    detail: str
    at: float


@attrs.frozen
class OperationRecord:
    """One CRI-like operation of the runtime and how it ended."""

    seq: int
    operation: str
    target: str
    error: str | None
    failed_updates: tuple[str, ...] = ()
    """Containers whose updates (requested by plugins along the way) could not be applied."""


class Journal:
    """The runtime's record of calls, plugin events and operations (bounded, oldest dropped)."""

    def __init__(self, limit: int | None = 100_000, keep_messages: bool = True) -> None:
        self.keep_messages = keep_messages
        self._calls: collections.deque[PluginCall] = collections.deque(maxlen=limit)
        self._events: collections.deque[PluginEvent] = collections.deque(maxlen=limit)
        self._operations: collections.deque[OperationRecord] = collections.deque(maxlen=limit)
        self._seq = 0
        self._changed = asyncio.Event()

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _notify(self) -> None:
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    def call(
        self,
        plugin: str,
        method: str,
        event: str | None,
        outcome: CallOutcome,
        started: float,
        duration: float,
        *,
        code: int | None = None,
        error: str | None = None,
        inbound: bool = False,
        request: Message | None = None,
        reply: Message | None = None,
    ) -> None:
        keep = self.keep_messages
        self._calls.append(
            PluginCall(
                self._next(),
                plugin,
                method,
                event,
                outcome,
                code,
                error,
                started,
                duration,
                inbound,
                request if keep else None,
                reply if keep else None,
            )
        )
        self._notify()

    def event(self, kind: PluginEventKind, plugin: str, detail: str, at: float) -> None:
        self._events.append(PluginEvent(self._next(), kind, plugin, detail, at))
        self._notify()

    def operation(
        self, operation: str, target: str, error: str | None, failed: Sequence[str] = ()
    ) -> None:
        self._operations.append(
            OperationRecord(self._next(), operation, target, error, tuple(failed))
        )
        self._notify()

    @property
    def calls(self) -> tuple[PluginCall, ...]:
        return tuple(self._calls)

    @property
    def events(self) -> tuple[PluginEvent, ...]:
        return tuple(self._events)

    @property
    def operations(self) -> tuple[OperationRecord, ...]:
        return tuple(self._operations)

    def calls_to(self, plugin: str, method: str | None = None) -> list[PluginCall]:
        """Calls made to (or by) ``plugin``, optionally of one method or event name."""
        return [
            c
            for c in self._calls
            if c.plugin == plugin and (method is None or method in (c.method, c.event))
        ]

    def clear(self) -> None:
        """Forget everything recorded so far (sequence numbers keep counting)."""
        self._calls.clear()
        self._events.clear()
        self._operations.clear()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float | None = 10.0) -> None:
        """Wait until ``predicate()`` holds; it is re-checked after every recorded change.

        Raises ``TimeoutError`` after ``timeout`` seconds (None: wait forever).
        """
        async with asyncio.timeout(timeout):
            while not predicate():
                await self._changed.wait()

    def changed(self) -> None:
        """Wake up waiters without recording anything (the runtime's state changed)."""
        self._notify()
