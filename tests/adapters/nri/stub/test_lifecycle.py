"""Connection lifecycle: external reconnect with backoff, on_close, stop, pre-launched sockets."""

from __future__ import annotations

import asyncio
import logging
import re
import socket
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.nri import api
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import (
    Backoff,
    NotConnectedError,
    Plugin,
    RegistrationError,
    Stub,
    StubError,
)
from nrirp.adapters.nri.transport import ConnectionClosed, TtrpcError
from tests.support.aio import arun

from .runtime_peer import RuntimeServer, container, pod

FAST = Backoff(initial=0.02, maximum=0.1, factor=2.0, jitter=0.1, reset_after=5.0)


class Counting(Plugin):
    def __init__(self) -> None:
        self.configures = 0
        self.syncs: list[int] = []
        self.created: list[str] = []

    async def configure(self, request: api_pb2.ConfigureRequest) -> None:
        self.configures += 1

    async def synchronize(self, pods: Any, containers: Any) -> None:
        self.syncs.append(len(containers))

    async def create_container(self, pod: Any, container: Any) -> None:
        self.created.append(container.name)


def test_external_plugin_reconnects_and_goes_through_register_configure_sync_again(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        path = tmp_path / "nri.sock"
        closes: list[BaseException | None] = []
        plugin = Counting()

        async def on_close(reason: BaseException | None) -> None:
            closes.append(reason)

        stub = Stub(
            plugin,
            name="re",
            index="30",
            socket_path=path,
            reconnect=FAST,
            on_close=on_close,
            environ={},
        )
        server = await RuntimeServer(path).start()
        running = asyncio.create_task(stub.run())
        first = await server.next_peer()
        await first.handshake()
        await first.synchronize([pod()], [container("a")])
        assert plugin.configures == 1 and plugin.syncs == [0, 1]

        await server.stop()  # the runtime goes away (sessions closed, socket removed)
        await asyncio.sleep(0.3)  # several failed redials while it is gone
        assert len(closes) == 1 and isinstance(closes[0], ConnectionClosed)
        assert not stub.connected and not running.done()

        server = await RuntimeServer(path).start()  # ... and comes back
        second = await server.next_peer()
        registration = await asyncio.wait_for(second.registration, 5)
        assert (registration.plugin_name, registration.plugin_idx) == ("re", "30")
        await second.handshake()
        await second.synchronize([pod()], [container("a"), container("b")])
        assert plugin.configures == 2 and plugin.syncs == [0, 1, 0, 2]
        request = api_pb2.CreateContainerRequest(pod=pod(), container=container("new"))
        await second.call("CreateContainer", request, api_pb2.CreateContainerResponse)
        assert plugin.created == ["new"]

        stub.stop()
        await asyncio.wait_for(running, 5)
        assert closes[1:] == [None]  # a local stop is reported with no reason
        await server.stop()

    arun(main)


def stale_socket(path: Path) -> None:
    """A socket file nobody listens on, as a crashed runtime leaves: dials are refused."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(path))


def test_backoff_grows_while_a_stale_socket_refuses_and_stop_interrupts_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def main() -> None:
        backoff = Backoff(initial=0.01, maximum=0.08, factor=2.0, jitter=0.0)
        stale_socket(tmp_path / "stale.sock")
        stub = Stub(
            Counting(),
            name="p",
            index="01",
            socket_path=tmp_path / "stale.sock",
            reconnect=backoff,
            environ={},
        )
        running = asyncio.create_task(stub.run())
        await asyncio.sleep(0.5)
        assert not running.done()
        stub.stop()
        await asyncio.wait_for(running, 1)

    with caplog.at_level(logging.WARNING, logger="nrirp.nri.stub"):
        arun(main)
    delays = [
        float(m.group(1))
        for r in caplog.records
        if (m := re.search(r"retrying in ([0-9.]+) s", r.getMessage()))
    ]
    assert len(delays) >= 5
    assert delays[:4] == [0.0, 0.0, 0.0, 0.1]  # 0.01, 0.02, 0.04, 0.08 shown with one decimal
    assert "cannot connect to the NRI socket" in caplog.records[0].getMessage()
    assert "Connection refused" in caplog.records[0].getMessage()


def test_backoff_delays_double_up_to_the_cap() -> None:
    backoff = Backoff(initial=0.5, maximum=30.0, factor=2.0, jitter=0.0)
    assert [backoff.delay(n) for n in range(8)] == [0.5, 1, 2, 4, 8, 16, 30, 30]


def test_plugin_started_before_the_runtime_registers_once_it_appears(tmp_path: Path) -> None:
    async def main() -> None:
        path = tmp_path / "late.sock"
        stub = Stub(Counting(), name="p", index="01", socket_path=path, reconnect=FAST, environ={})
        running = asyncio.create_task(stub.run())
        await asyncio.sleep(0.15)
        server = await RuntimeServer(path).start()
        peer = await server.next_peer()
        await peer.handshake()
        assert stub.connected
        stub.stop()
        await asyncio.wait_for(running, 5)
        await server.stop()

    arun(main)


def test_without_reconnect_run_returns_when_the_runtime_goes_away(tmp_path: Path) -> None:
    async def main() -> None:
        path = tmp_path / "nri.sock"
        closes: list[BaseException | None] = []
        stub = Stub(
            Counting(),
            name="p",
            index="01",
            socket_path=path,
            reconnect=False,
            on_close=closes.append,
            environ={},
        )
        with pytest.raises(RegistrationError, match="cannot connect"):
            await stub.run()
        server = await RuntimeServer(path).start()
        running = asyncio.create_task(stub.run())
        peer = await server.next_peer()
        await peer.handshake()
        peer.close()
        await asyncio.wait_for(running, 5)
        assert len(closes) == 1 and isinstance(closes[0], ConnectionClosed)
        await server.stop()

    arun(main)


def test_failing_configure_is_reported_by_start() -> None:
    class BadConfig(Plugin):
        async def configure(self, request: Any) -> None:
            raise ValueError(f"cannot parse config {request.config!r}")

        async def create_container(self, pod: Any, container: Any) -> None:
            return None

    async def main() -> None:
        from .runtime_peer import socketpair_runtime

        peer, plugin_end = await socketpair_runtime(configure_in_register={"config": "x: ["})
        stub = Stub(BadConfig(), name="p", index="01", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        await asyncio.wait_for(peer.registration, 5)
        await asyncio.sleep(0)
        assert peer.early_configure is not None
        with pytest.raises(TtrpcError, match="cannot parse config"):
            await peer.early_configure  # the runtime sees the error...
        peer.close()  # ... and drops the plugin
        with pytest.raises(RegistrationError, match=r"cannot parse config 'x: \['"):
            await start

    arun(main)


def test_prelaunched_plugin_uses_the_inherited_socket_and_never_reconnects() -> None:
    async def main() -> None:
        from nrirp.adapters.nri.transport import Session

        from .runtime_peer import RuntimePeer

        runtime_end, plugin_end = socket.socketpair()
        session = Session()
        peer = RuntimePeer(session)
        await session.attach(runtime_end)
        closes: list[BaseException | None] = []
        plugin = Counting()
        env = {
            "NRI_PLUGIN_SOCKET": str(plugin_end.fileno()),
            "NRI_PLUGIN_NAME": "prelaunched",
            "NRI_PLUGIN_IDX": "05",
        }
        stub = Stub(
            plugin, environ=env, argv0="/opt/nri/plugins/05-prelaunched", on_close=closes.append
        )
        assert stub.prelaunched and not stub.reconnects
        running = asyncio.create_task(stub.run())
        registration = await asyncio.wait_for(peer.registration, 5)
        assert (registration.plugin_name, registration.plugin_idx) == ("prelaunched", "05")
        await peer.handshake()
        assert plugin.configures == 1
        peer.close()  # the runtime shuts down
        await asyncio.wait_for(running, 5)  # run() returns: no reconnect for pre-launched
        assert len(closes) == 1
        plugin_end.detach()  # the session closed the fd already
        with pytest.raises(RegistrationError, match="cannot reconnect"):
            await stub.start()

    arun(main)


@pytest.mark.parametrize("value", ["three", "-1"])
def test_invalid_plugin_socket_variable_is_refused(value: str) -> None:
    with pytest.raises(StubError, match="NRI_PLUGIN_SOCKET"):
        Stub(Counting(), name="p", index="01", environ={"NRI_PLUGIN_SOCKET": value})


def test_plugin_socket_that_is_not_a_socket_fails_start(tmp_path: Path) -> None:
    async def main() -> None:
        with open(tmp_path / "file", "w") as handle:
            env = {"NRI_PLUGIN_SOCKET": str(handle.fileno())}
            stub = Stub(Counting(), name="p", index="01", environ=env)
            with pytest.raises(RegistrationError, match="not a usable socket"):
                await stub.run()

    arun(main)


def test_start_twice_is_refused_and_stop_is_idempotent() -> None:
    async def main() -> None:
        from .test_protocol import connected

        stub, peer, _ = await connected(Counting())
        with pytest.raises(StubError, match="already started"):
            await stub.start()
        stub.stop()
        stub.stop()
        await stub.wait_closed()
        assert not stub.connected
        peer.close()

    arun(main)


def test_runtime_vanishing_mid_handler_drops_its_scheduled_update_and_reconnects(
    tmp_path: Path,
) -> None:
    """The handler is cancelled with the connection; its deferred update fails instead of
    reaching the runtime the plugin reconnects to."""

    class Slow(Plugin):
        def __init__(self) -> None:
            self.stub: Stub | None = None
            self.entered = asyncio.Event()
            self.cancelled = False
            self.futures: list[asyncio.Future[Any]] = []

        async def create_container(self, pod: Any, container: Any) -> None:
            assert self.stub is not None
            self.futures.append(
                self.stub.schedule_update_containers([api.container_update("x", cpus="1")])
            )
            self.entered.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                self.cancelled = True
                raise

    async def main() -> None:
        path = tmp_path / "nri.sock"
        plugin = Slow()
        stub = Stub(plugin, name="p", index="01", socket_path=path, reconnect=FAST, environ={})
        plugin.stub = stub
        server = await RuntimeServer(path).start()
        running = asyncio.create_task(stub.run())
        first = await server.next_peer()
        await first.handshake()
        request = api_pb2.CreateContainerRequest(pod=pod(), container=container())
        call = asyncio.create_task(
            first.call("CreateContainer", request, api_pb2.CreateContainerResponse, timeout=None)
        )
        await plugin.entered.wait()
        await server.stop()  # the runtime dies while the handler runs
        with pytest.raises(ConnectionClosed):
            await call
        (future,) = plugin.futures
        with pytest.raises(NotConnectedError):
            await asyncio.wait_for(future, 5)
        assert plugin.cancelled
        server = await RuntimeServer(path).start()
        second = await server.next_peer()
        await second.handshake()
        await asyncio.sleep(0.05)
        assert second.update_requests == [] and first.update_requests == []
        stub.stop()
        await asyncio.wait_for(running, 5)
        await server.stop()

    arun(main)


def test_resubscribe_registers_again_at_once_and_the_new_configure_chooses_the_events(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        path = tmp_path / "nri.sock"
        plugin = Counting()
        slow = Backoff(initial=30, maximum=30, factor=2.0, jitter=0.0)  # no redial by backoff
        stub = Stub(plugin, name="re", index="30", socket_path=path, reconnect=slow, environ={})
        server = await RuntimeServer(path).start()
        running = asyncio.create_task(stub.run())
        first = await server.next_peer()
        await first.handshake()
        await first.synchronize()
        assert stub.resubscribe()
        second = await asyncio.wait_for(server.next_peer(), 5)  # at once, no backoff
        await asyncio.wait_for(second.registration, 5)
        await second.handshake()
        await second.synchronize()
        assert plugin.configures == 2
        stub.stop()
        await asyncio.wait_for(running, 5)
        assert not stub.resubscribe()  # not connected
        await server.stop()

    arun(main)
