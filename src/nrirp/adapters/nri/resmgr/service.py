"""Running the resource-manager plugin: the stub's connection loop plus update delivery."""

from __future__ import annotations

import asyncio
import contextlib

from nrirp.adapters.nri.resmgr.translate import update_from_pb, updates_to_pb
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates, Sender
from nrirp.adapters.nri.stub import Stub
from nrirp.domain.model import Update


def stub_sender(stub: Stub) -> Sender:
    """Sends domain updates with the stub's deadlock-safe ``update_containers``."""

    async def send(updates: list[Update]) -> list[Update]:
        failed = await stub.update_containers(updates_to_pb(updates))
        return [update_from_pb(u) for u in failed]

    return send


class PluginService:
    """Serves the plugin through ``stub`` and delivers queued runtime updates meanwhile.

    :meth:`run` returns when the stub's run loop does (after :meth:`stop`, or when a
    pre-launched plugin's connection closes); external plugins reconnect in between.
    """

    def __init__(self, stub: Stub, updates: NriRuntimeUpdates) -> None:
        self.stub = stub
        self.updates = updates

    async def run(self) -> None:
        # created here, outside any NRI handler, so the delivery task may await UpdateContainers
        delivery = asyncio.create_task(self.updates.deliver(stub_sender(self.stub)))
        try:
            await self.stub.run()
        finally:
            delivery.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await delivery

    def stop(self) -> None:
        self.stub.stop()
