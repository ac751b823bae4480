"""A runtime that abuses Synchronize: endless ``more=true`` chunks, too many objects at once.

Every ``more=true`` chunk is kept until the last one arrives, so the dispatcher bounds what one
sync may hold (bytes of the kept chunks, pods plus containers of the whole sync): beyond that
the sync is refused with OUT_OF_RANGE and what it held is let go, and a later sync works.
"""

from __future__ import annotations

from typing import Any

import pytest

from nrirp.adapters.nri.api import PLUGIN_SERVICE, EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import dispatch
from nrirp.adapters.nri.transport import CallContext, StatusCode, TtrpcError
from tests.support.aio import arun

from .runtime_peer import container, pod
from .test_protocol import Recorder, connected, shut


def _chunk(first: int, count: int, more: bool) -> api_pb2.SynchronizeRequest:
    return api_pb2.SynchronizeRequest(
        pods=[pod(f"p{i}") for i in range(first, first + count)], more=more
    )


def test_endless_more_chunks_are_refused_once_over_the_byte_budget(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatch, "MAX_SYNC_BYTES", 4096)

    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        plugin.calls.clear()
        sent = 0
        with pytest.raises(TtrpcError) as refused:
            for n in range(1000):  # without the bound: accepted, and every chunk kept
                request = _chunk(n * 10, 10, more=True)
                sent += request.ByteSize()
                await peer.call("Synchronize", request, api_pb2.SynchronizeResponse)
        assert refused.value.code == StatusCode.OUT_OF_RANGE
        assert "bytes of more=true chunks" in refused.value.message
        assert 4096 < sent <= 4096 + _chunk(0, 10, True).ByteSize() + 100
        assert plugin.calls == []  # the plugin never saw the refused sync
        # nothing of it is left over: the next sync is delivered on its own
        final, partial = await peer.synchronize([pod("a"), pod("b")], [container()], chunk=1)
        assert len(partial) == 1 and not final.more
        assert plugin.names() == ["synchronize"]
        got_pods, got_containers = plugin.calls[0][1]
        assert [p.name for p in got_pods] == ["a", "b"]
        assert [c.id for c in got_containers] == [container().id]
        await shut(stub, peer)

    arun(main)


def test_a_sync_of_too_many_objects_is_refused_in_one_message_or_in_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatch, "MAX_SYNC_OBJECTS", 50)

    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        plugin.calls.clear()
        for chunk in (0, 20):
            with pytest.raises(TtrpcError) as refused:
                await peer.synchronize(
                    [pod(f"p{i}") for i in range(30)],
                    [container(f"c{i}", f"p{i}") for i in range(30)],
                    chunk=chunk,
                )
            assert refused.value.code == StatusCode.OUT_OF_RANGE
            assert "more than 50 pods and containers" in refused.value.message
        assert plugin.calls == []
        pods = [pod(f"p{i}") for i in range(25)]
        containers = [container(f"c{i}", f"p{i}") for i in range(25)]
        await peer.synchronize(pods, containers, chunk=10)  # 50: at the limit, delivered
        got_pods, got_containers = plugin.calls[0][1]
        assert (len(got_pods), len(got_containers)) == (25, 25)
        await shut(stub, peer)

    arun(main)


def test_empty_more_chunks_are_answered_and_not_kept() -> None:
    async def configure(_request: api_pb2.ConfigureRequest) -> EventMask:
        return EventMask(0)

    async def main() -> None:
        seen: list[tuple[int, int]] = []

        async def synchronize(pods: Any, containers: Any) -> None:
            seen.append((len(pods), len(containers)))

        dispatcher = dispatch.Dispatcher({"synchronize": synchronize}, configure)
        serve = dispatcher.methods()["Synchronize"]
        context = CallContext(PLUGIN_SERVICE, "Synchronize", 1, None)
        empty_more = api_pb2.SynchronizeRequest(more=True).SerializeToString()
        for _ in range(1000):
            reply = api_pb2.SynchronizeResponse.FromString(await serve(empty_more, context))
            assert reply.more and not reply.update
        assert dispatcher._sync_chunks == []
        last = api_pb2.SynchronizeRequest(pods=[pod()], containers=[container()])
        await serve(last.SerializeToString(), context)
        assert seen == [(1, 1)]

    arun(main)
