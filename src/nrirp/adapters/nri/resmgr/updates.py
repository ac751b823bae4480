"""The RuntimeUpdates port over NRI's UpdateContainers.

NRI runtimes hold their NRI lock while they call a plugin, and UpdateContainers takes the same
lock: sending an update from inside a handler's reply path deadlocks until the runtime's
request timeout. So :meth:`NriRuntimeUpdates.submit` only queues (from any thread) and a task
on the plugin's event loop sends the queued updates, merged per container, once per wake-up.
Updates the runtime refuses (or that cannot be sent) go back to the resource manager through
the failure callback, so the policy can react.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Sequence

from nrirp.domain.model import Update

log = logging.getLogger(__name__)

Sender = Callable[[list[Update]], Awaitable[list[Update]]]
"""Sends updates to the runtime; returns the ones it refused."""
FailureCallback = Callable[[Sequence[Update], str], None]


def merge_updates(updates: Sequence[Update]) -> list[Update]:
    """One update per container, in first-seen order; later fields win."""
    merged: dict[str, Update] = {}
    for update in updates:
        prior = merged.get(update.container_id)
        if prior is not None:
            update = Update(
                update.container_id,
                prior.resources.merged(update.resources),
                ignore_failure=prior.ignore_failure and update.ignore_failure,
            )
        merged[update.container_id] = update
    return list(merged.values())


class NriRuntimeUpdates:
    """Queues updates from the resource manager and delivers them asynchronously."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[Update] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wakeup: asyncio.Event | None = None
        self._on_failed: FailureCallback | None = None
        self.sent_batches = 0

    def bind_failures(self, on_failed: FailureCallback) -> None:
        """Where refused updates are reported (``ResourceManager.updates_failed``)."""
        self._on_failed = on_failed

    @property
    def queued(self) -> int:
        with self._lock:
            return len(self._queue)

    def submit(self, updates: Sequence[Update]) -> None:
        """Queue ``updates``; returns at once (safe from any thread, pipeline held)."""
        if not updates:
            return
        with self._lock:
            self._queue.extend(updates)
            loop, wakeup = self._loop, self._wakeup
        if loop is not None and wakeup is not None and not loop.is_closed():
            loop.call_soon_threadsafe(wakeup.set)

    async def deliver(self, send: Sender) -> None:
        """Send queued updates through ``send`` until cancelled (one runtime connection).

        Updates queued while no connection was up are sent first.
        """
        wakeup = asyncio.Event()
        with self._lock:
            self._loop = asyncio.get_running_loop()
            self._wakeup = wakeup
            if self._queue:
                wakeup.set()
        try:
            while True:
                await wakeup.wait()
                wakeup.clear()
                with self._lock:
                    batch, self._queue = merge_updates(self._queue), []
                if batch:
                    await self._send(send, batch)
        finally:
            with self._lock:
                if self._wakeup is wakeup:
                    self._loop = None
                    self._wakeup = None

    async def _send(self, send: Sender, batch: list[Update]) -> None:
        self.sent_batches += 1
        try:
            failed = await send(batch)
        except asyncio.CancelledError:
            self._report(batch, "connection to the runtime closed before the update was sent")
            raise
        except Exception as exc:
            self._report(batch, f"sending the update failed: {exc}")
            return
        if failed:
            self._report(failed, "the runtime refused the update")

    def _report(self, updates: Sequence[Update], reason: str) -> None:
        ids = ", ".join(u.container_id for u in updates)
        log.warning("%d container updates failed (%s): %s", len(updates), reason, ids)
        if self._on_failed is not None:
            try:
                self._on_failed(updates, reason)
            except Exception:
                log.exception("reporting failed updates to the resource manager failed")
