"""NriRuntimeUpdates: submit never blocks, delivery is asynchronous, merged, failures reported."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import pytest

from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates, merge_updates
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import LinuxResources, Update


def upd(cid: str, **res: object) -> Update:
    return Update(cid, LinuxResources(**res))  # type: ignore[arg-type]


class Runtime:
    """A fake runtime side: records batches, refuses some container ids, can block."""

    def __init__(self, refuse: frozenset[str] = frozenset()) -> None:
        self.batches: list[list[Update]] = []
        self.refuse = refuse
        self.gate = asyncio.Event()
        self.gate.set()
        self.arrived = asyncio.Event()

    async def send(self, updates: list[Update]) -> list[Update]:
        self.batches.append(updates)
        self.arrived.set()
        await self.gate.wait()
        return [u for u in updates if u.container_id in self.refuse]


def test_merge_keeps_first_seen_order_and_later_fields() -> None:
    merged = merge_updates(
        [
            upd("a", cpu_shares=2),
            upd("b", cpus=CPUSet.of(1)),
            upd("a", cpu_shares=5, mems=CPUSet.of(0)),
        ]
    )
    assert merged == [upd("a", cpu_shares=5, mems=CPUSet.of(0)), upd("b", cpus=CPUSet.of(1))]


async def wait_until(predicate: object, timeout: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not predicate():  # type: ignore[operator]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("condition not reached")
        await asyncio.sleep(0.005)


def test_updates_queued_before_connecting_are_sent_first() -> None:
    async def main() -> None:
        updates = NriRuntimeUpdates()
        updates.submit([upd("a", cpu_shares=10)])
        updates.submit([upd("a", cpu_quota=5)])
        runtime = Runtime()
        task = asyncio.create_task(updates.deliver(runtime.send))
        await wait_until(lambda: runtime.batches)
        assert runtime.batches == [[upd("a", cpu_shares=10, cpu_quota=5)]]
        task.cancel()

    asyncio.run(main())


def test_submit_returns_while_a_send_is_in_flight_and_from_other_threads() -> None:
    async def main() -> None:
        updates = NriRuntimeUpdates()
        runtime = Runtime()
        runtime.gate.clear()  # the runtime does not answer yet
        task = asyncio.create_task(updates.deliver(runtime.send))
        updates.submit([upd("a", cpu_shares=10)])
        await runtime.arrived.wait()
        thread = threading.Thread(target=updates.submit, args=([upd("b", cpu_shares=3)],))
        thread.start()
        thread.join(timeout=1)
        assert not thread.is_alive()  # submit did not wait for the blocked runtime
        assert updates.queued == 1
        runtime.gate.set()
        await wait_until(lambda: len(runtime.batches) == 2)
        assert runtime.batches[1] == [upd("b", cpu_shares=3)]
        task.cancel()

    asyncio.run(main())


def test_refused_and_unsendable_updates_are_reported() -> None:
    reported: list[tuple[list[str], str]] = []

    def on_failed(failed: Sequence[Update], reason: str) -> None:
        reported.append(([u.container_id for u in failed], reason))

    async def main() -> None:
        updates = NriRuntimeUpdates()
        updates.bind_failures(on_failed)
        runtime = Runtime(refuse=frozenset({"b"}))
        task = asyncio.create_task(updates.deliver(runtime.send))
        updates.submit([upd("a", cpu_shares=3), upd("b", cpu_shares=4)])
        await wait_until(lambda: reported)
        task.cancel()

        async def broken(batch: list[Update]) -> list[Update]:
            raise ConnectionError("socket closed")

        task = asyncio.create_task(updates.deliver(broken))
        updates.submit([upd("c", cpu_shares=5)])
        await wait_until(lambda: len(reported) == 2)
        task.cancel()

    asyncio.run(main())
    assert reported == [
        (["b"], "the runtime refused the update"),
        (["c"], "sending the update failed: socket closed"),
    ]


def test_cancelled_send_reports_the_batch() -> None:
    reported: list[str] = []

    async def main() -> None:
        updates = NriRuntimeUpdates()
        updates.bind_failures(lambda failed, reason: reported.append(reason))
        runtime = Runtime()
        runtime.gate.clear()
        task = asyncio.create_task(updates.deliver(runtime.send))
        updates.submit([upd("a", cpu_shares=3)])
        await runtime.arrived.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        updates.submit([upd("z", cpu_shares=1)])  # no loop bound any more: just queued
        assert updates.queued == 1

    asyncio.run(main())
    assert reported == ["connection to the runtime closed before the update was sent"]
