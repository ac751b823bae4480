"""Runtime updates the simulator can wait for: NRI delivery plus "everything was sent"."""

from __future__ import annotations

import asyncio

from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates, Sender
from nrirp.domain.model import Update


class SettledTimeoutError(Exception):
    """Policy-initiated updates were still queued or in flight when the wait ended."""


class SettlingRuntimeUpdates(NriRuntimeUpdates):
    """:class:`NriRuntimeUpdates` that also knows when nothing is queued or being sent.

    After a step the simulator awaits :meth:`settled`, so the runtime's model holds every
    update the policy made (unsolicited ones go through UpdateContainers asynchronously).
    """

    def __init__(self) -> None:
        super().__init__()
        self._in_flight = 0

    @property
    def idle(self) -> bool:
        return self.queued == 0 and self._in_flight == 0

    async def deliver(self, send: Sender) -> None:
        async def tracked(batch: list[Update]) -> list[Update]:
            self._in_flight += 1
            try:
                return await send(batch)
            finally:
                self._in_flight -= 1

        await super().deliver(tracked)

    async def settled(self, timeout: float = 10.0) -> None:
        """Return once no update is queued or in flight (several loop turns in a row, so
        updates a failure report causes are seen too); raise :class:`SettledTimeoutError`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        quiet = 0
        while quiet < 3:
            if loop.time() > deadline:
                raise SettledTimeoutError(
                    f"policy updates not delivered within {timeout:g}s "
                    f"({self.queued} queued, {self._in_flight} in flight)"
                )
            if self.idle:
                quiet += 1
                await asyncio.sleep(0)
            else:
                quiet = 0
                await asyncio.sleep(0.001)
