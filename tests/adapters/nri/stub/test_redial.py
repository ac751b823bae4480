"""Redialling after the runtime went away: watch the socket path, dial as soon as it is (back)
there, back off only while the same socket refuses. Unit tests on the decisions, then the stub
against the simulated runtime over a real unix socket, restarted and crashed again and again."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Sequence
from pathlib import Path

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import Backoff, Plugin, Redial, Redialer, Stub, Wake
from nrirp.adapters.nri.stub.redial import SocketId, socket_id
from nrirp.simruntime import SimRuntime
from tests.support.aio import arun

A: SocketId = (1, 10, 100)
B: SocketId = (1, 11, 200)
C: SocketId = (1, 12, 300)


class FakePath:
    """What ``stat`` says about the socket path; tests change it while the redialer waits."""

    def __init__(self, current: SocketId | None) -> None:
        self.current = current

    def __call__(self, _path: str) -> SocketId | None:
        return self.current


def redialer(fake: FakePath, **backoff: float) -> Redialer:
    settings = {
        "initial": 10.0, "maximum": 30.0, "jitter": 0.0, "watch_interval": 0.005,
        "fresh_grace": 0.0,
    }  # fmt: skip
    return Redialer("/run/nri.sock", Backoff(**{**settings, **backoff}), identify=fake)


async def settle(task: asyncio.Task[bool], timeout: float = 2.0) -> bool:
    return await asyncio.wait_for(task, timeout)


def test_failures_on_one_socket_grow_the_backoff() -> None:
    async def main() -> None:
        fake = FakePath(A)
        r = redialer(fake, initial=0.01, factor=2.0)
        stop = asyncio.Event()
        for _ in range(3):
            r.dialling()
            assert not await r.wait(stop, "refused")
        assert list(r.history) == [
            Redial(0, 0.01, Wake.BACKOFF),
            Redial(1, 0.02, Wake.BACKOFF),
            Redial(2, 0.04, Wake.BACKOFF),
        ]
        assert r.attempt == 3
        r.connection_was_long()
        assert r.attempt == 0

    arun(main)


def test_a_replaced_socket_cuts_the_backoff_short_and_starts_it_over() -> None:
    async def main() -> None:
        fake = FakePath(A)
        r = redialer(fake)  # 10 s: far longer than this test may take
        stop = asyncio.Event()
        r.attempt = 5
        r.dialling()
        waiting = asyncio.create_task(r.wait(stop, "refused"))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        fake.current = B  # the runtime came back: a new socket at the same path
        assert not await settle(waiting)
        assert list(r.history) == [Redial(5, 30.0, Wake.REPLACED)]
        assert r.attempt == 0

    arun(main)


def test_an_absent_socket_is_waited_for_without_backoff() -> None:
    async def main() -> None:
        fake = FakePath(None)
        r = redialer(fake)
        stop = asyncio.Event()
        r.dialling()
        waiting = asyncio.create_task(r.wait(stop, "no such file"))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        fake.current = A
        assert not await settle(waiting)
        # gone during a backoff, then back: dialled as soon as it is back
        r.dialling()
        waiting = asyncio.create_task(r.wait(stop, "refused"))
        await asyncio.sleep(0.02)
        fake.current = None
        await asyncio.sleep(0.02)
        fake.current = C
        assert not await settle(waiting)
        assert list(r.history) == [
            Redial(None, None, Wake.APPEARED),
            Redial(0, 10.0, Wake.APPEARED),
        ]
        assert r.attempt == 0

    arun(main)


def test_a_socket_that_refuses_just_after_it_appeared_is_dialled_again_at_the_next_check() -> None:
    async def main() -> None:
        fake = FakePath(None)
        r = redialer(fake, fresh_grace=0.2)
        stop = asyncio.Event()
        r.dialling()
        waiting = asyncio.create_task(r.wait(stop, "no such file"))
        await asyncio.sleep(0.02)
        fake.current = A  # bound, not listening yet: the dial is refused
        assert not await settle(waiting)
        r.dialling()
        assert not await settle(asyncio.create_task(r.wait(stop, "refused")), 0.5)
        assert list(r.history) == [
            Redial(None, None, Wake.APPEARED),
            Redial(None, 0.005, Wake.BACKOFF),
        ]
        await asyncio.sleep(0.25)  # the grace is over: a socket still refusing backs off
        r.dialling()
        waiting = asyncio.create_task(r.wait(stop, "refused"))
        await asyncio.sleep(0.05)
        assert not waiting.done()
        stop.set()
        assert await settle(waiting)
        assert r.history[-1] == Redial(0, 10.0, Wake.STOPPED)
        assert r.attempt == 1

    arun(main)


def test_a_socket_replaced_before_the_wait_is_dialled_at_once() -> None:
    async def main() -> None:
        fake = FakePath(A)
        r = redialer(fake)
        r.dialling()
        fake.current = B  # the runtime restarted between the dial and its failure
        assert not await settle(asyncio.create_task(r.wait(asyncio.Event(), "lost")), 0.5)
        assert list(r.history) == [Redial(None, None, Wake.REPLACED)]

    arun(main)


def test_stop_ends_any_wait() -> None:
    async def main() -> None:
        for current in (A, None):
            fake = FakePath(current)
            r = redialer(fake)
            stop = asyncio.Event()
            r.dialling()
            waiting = asyncio.create_task(r.wait(stop, "x"))
            await asyncio.sleep(0.02)
            stop.set()
            assert await settle(waiting)
            assert r.history[-1].wake is Wake.STOPPED

    arun(main)


def test_socket_id_tells_absent_from_present(tmp_path: Path) -> None:
    path = tmp_path / "nri.sock"
    assert socket_id(str(path)) is None
    assert socket_id(str(tmp_path / "no-dir" / "nri.sock")) is None
    stale_socket(path)
    first = socket_id(str(path))
    assert first is not None
    path.unlink()
    stale_socket(path)
    assert socket_id(str(path)) not in (None, first)


# ---------------------------------------------------------------- stub and simulated runtime
def stale_socket(path: Path) -> None:
    """A socket file nobody listens on, as a crashed runtime leaves: dials are refused."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))


class Syncs(Plugin):
    """Records when each Synchronize arrives (the end of a registration)."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.arrived = asyncio.Event()

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> None:
        self.times.append(asyncio.get_running_loop().time())
        self.arrived.set()

    async def create_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        pass


async def registered_after(plugin: Syncs, since: float, timeout: float = 5.0) -> float:
    """Seconds from ``since`` to the next Synchronize."""
    count = len(plugin.times)
    async with asyncio.timeout(timeout):
        while len(plugin.times) == count:
            plugin.arrived.clear()
            await plugin.arrived.wait()
    return plugin.times[-1] - since


def test_registered_again_promptly_after_each_of_many_runtime_restarts(tmp_path: Path) -> None:
    """The runtime stops (removing its socket) and starts again eight times, after downtimes
    up to 1.5 s: every time the stub dials as soon as the socket is back. Its backoff (0.5 s
    growing to 30 s with factor 4) is never used; without the watch the last returns would
    wait tens of seconds."""

    async def main() -> None:
        path = tmp_path / "nri.sock"
        loop = asyncio.get_running_loop()
        plugin = Syncs()
        backoff = Backoff(initial=0.5, maximum=30.0, factor=4.0, jitter=0.0)
        stub = Stub(
            plugin, name="back", index="40", socket_path=path, reconnect=backoff, environ={}
        )
        running = asyncio.create_task(stub.run())
        latencies = []
        try:
            for downtime in (0.05, 0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.5):
                await asyncio.sleep(downtime)
                runtime = await SimRuntime(socket_path=path).start()
                latencies.append(await registered_after(plugin, loop.time()))
                await runtime.close()  # stops listening and removes the socket
        finally:
            stub.stop()
            await asyncio.wait_for(running, 5)
        assert stub.redialer is not None
        wakes = [r.wake for r in stub.redialer.history]
        # the start and seven returns; the last loss may be seen after stop() or not at all
        assert wakes[:8] == [Wake.APPEARED] * 8 and wakes[8:] in ([], [Wake.STOPPED]), wakes
        print("re-registration after the socket reappeared (s):", latencies)
        assert max(latencies) < 1.0, latencies  # typically a few tens of ms (50 ms watch)

    arun(main, timeout=60)


def test_a_stale_socket_backs_off_until_a_new_runtime_replaces_it(tmp_path: Path) -> None:
    """Crashes leave the socket behind: dials are refused and the backoff grows (here to an
    18 s wait); a runtime starting on the path replaces the socket and the stub registers at
    once, three crashes in a row."""

    async def main() -> None:
        path = tmp_path / "nri.sock"
        loop = asyncio.get_running_loop()
        plugin = Syncs()
        backoff = Backoff(initial=0.02, maximum=30.0, factor=30.0, jitter=0.0)
        stub = Stub(
            plugin, name="back", index="40", socket_path=path, reconnect=backoff, environ={}
        )
        redialer = stub.redialer
        assert redialer is not None
        stale_socket(path)
        running = asyncio.create_task(stub.run())
        latencies = []
        try:
            for _crash in range(3):
                while redialer.attempt < 3:  # refused at 0.02 s, 0.6 s; now waiting 18 s
                    await asyncio.sleep(0.01)
                assert redialer.history[-1] == Redial(1, pytest.approx(0.6), Wake.BACKOFF)
                runtime = await SimRuntime(socket_path=path).start()  # replaces the socket
                latencies.append(await registered_after(plugin, loop.time()))
                assert redialer.history[-1] == Redial(2, pytest.approx(18.0), Wake.REPLACED)
                assert redialer.attempt == 0
                await runtime.close()
                path.unlink(missing_ok=True)
                stale_socket(path)  # as if it had crashed: the socket stays
        finally:
            stub.stop()
            await asyncio.wait_for(running, 5)
        assert max(latencies) < 1.0, latencies

    arun(main, timeout=60)
