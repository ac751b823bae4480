"""The stub against a scripted runtime: registration, configure, sync, event delivery, errors."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.nri import api
from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub import (
    Plugin,
    PluginDefinitionError,
    RegistrationError,
    Stub,
)
from nrirp.adapters.nri.transport import StatusCode, TtrpcError
from tests.support.aio import arun

from .runtime_peer import RuntimePeer, container, pod, socketpair_runtime

Recorded = list[tuple[str, tuple[Any, ...]]]


class Recorder(Plugin):
    """Implements every handler; records calls as (method, args)."""

    def __init__(self) -> None:
        self.calls: Recorded = []
        self.configured_with: api_pb2.ConfigureRequest | None = None
        self.mask: EventMask | int | None = None

    def names(self) -> list[str]:
        return [name for name, _ in self.calls]

    async def configure(self, request: api_pb2.ConfigureRequest) -> EventMask | int | None:
        self.configured_with = request
        return self.mask

    async def synchronize(self, pods: Any, containers: Any) -> Any:
        self.calls.append(("synchronize", (list(pods), list(containers))))
        return [api.container_update(c.id, cpus="1") for c in containers[:1]]

    async def shutdown(self) -> None:
        self.calls.append(("shutdown", ()))

    async def run_pod_sandbox(self, pod: Any) -> None:
        self.calls.append(("run_pod_sandbox", (pod,)))

    async def update_pod_sandbox(self, pod: Any, overhead: Any, resources: Any) -> None:
        self.calls.append(("update_pod_sandbox", (pod, overhead, resources)))

    async def post_update_pod_sandbox(self, pod: Any) -> None:
        self.calls.append(("post_update_pod_sandbox", (pod,)))

    async def stop_pod_sandbox(self, pod: Any) -> None:
        self.calls.append(("stop_pod_sandbox", (pod,)))

    async def remove_pod_sandbox(self, pod: Any) -> None:
        self.calls.append(("remove_pod_sandbox", (pod,)))

    async def create_container(self, pod: Any, container: Any) -> Any:
        self.calls.append(("create_container", (pod, container)))
        return api.container_adjustment(cpus="2-3", mems="0")

    async def post_create_container(self, pod: Any, container: Any) -> None:
        self.calls.append(("post_create_container", (pod, container)))

    async def start_container(self, pod: Any, container: Any) -> None:
        self.calls.append(("start_container", (pod, container)))

    async def post_start_container(self, pod: Any, container: Any) -> None:
        self.calls.append(("post_start_container", (pod, container)))

    async def update_container(self, pod: Any, container: Any, resources: Any) -> Any:
        self.calls.append(("update_container", (pod, container, resources)))
        return [api.container_update(container.id, cpus="5")]

    async def post_update_container(self, pod: Any, container: Any) -> None:
        self.calls.append(("post_update_container", (pod, container)))

    async def stop_container(self, pod: Any, container: Any) -> Any:
        self.calls.append(("stop_container", (pod, container)))
        return [api.container_update("other", memory_limit=1 << 20)]

    async def remove_container(self, pod: Any, container: Any) -> None:
        self.calls.append(("remove_container", (pod, container)))

    async def validate_container_adjustment(self, request: Any) -> None:
        self.calls.append(("validate_container_adjustment", (request,)))
        if request.adjust.linux.resources.cpu.cpus == "bad":
            raise ValueError("cpus 'bad' are not allowed here")


async def connected(
    plugin: object, peer_options: dict[str, Any] | None = None, **stub_options: Any
) -> tuple[Stub, RuntimePeer, asyncio.Task[None]]:
    """A stub started over a socketpair against a scripted runtime (handshake done)."""
    peer, plugin_end = await socketpair_runtime(**(peer_options or {}))
    stub_options.setdefault("name", "test")
    stub_options.setdefault("index", "10")
    stub = Stub(plugin, connection=plugin_end, environ={}, **stub_options)
    start = asyncio.create_task(stub.start())
    await peer.handshake()
    await start
    return stub, peer, start


async def shut(stub: Stub, peer: RuntimePeer) -> None:
    stub.stop()
    await stub.wait_closed()
    peer.close()
    await peer.session.wait_closed()


# --------------------------------------------------------------------------- registration


def test_registers_with_name_index_and_nri_version_then_is_configured() -> None:
    async def main() -> None:
        plugin = Recorder()
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(plugin, name="pinner", index="42", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        registration = await asyncio.wait_for(peer.registration, 5)
        assert (registration.plugin_name, registration.plugin_idx) == ("pinner", "42")
        assert registration.NRI_version == "v0.12.2"
        assert not start.done()  # start() waits for Configure
        reply = await peer.configure(
            config="some: config",
            runtime_name="containerd",
            runtime_version="v2.3.1",
            nri_version="v0.12.0",
            registration_timeout_ms=7000,
            request_timeout_ms=3500,
        )
        await start
        assert reply.events == int(api.ALL_EVENTS)
        assert stub.events == api.ALL_EVENTS
        assert stub.config == "some: config"
        assert (stub.runtime_name, stub.runtime_version) == ("containerd", "v2.3.1")
        assert stub.registration_timeout == 7.0 and stub.request_timeout == 3.5
        assert str(stub.runtime_level.nri_version) == "v0.12.0"
        assert plugin.configured_with is not None
        assert plugin.configured_with.config == "some: config"
        assert stub.connected
        await shut(stub, peer)
        assert not stub.connected

    arun(main)


def test_timeouts_keep_defaults_until_configure_sets_them() -> None:
    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(Recorder(), name="p", index="01", connection=plugin_end, environ={})
        assert (stub.registration_timeout, stub.request_timeout) == (5.0, 2.0)
        start = asyncio.create_task(stub.start())
        await peer.handshake(runtime_version="v1.7.0", nri_version="")  # NRI 0.3: no timeouts
        await start
        assert (stub.registration_timeout, stub.request_timeout) == (5.0, 2.0)
        await shut(stub, peer)

    arun(main)


def test_configure_arriving_before_the_register_reply_is_served() -> None:
    async def main() -> None:
        peer, plugin_end = await socketpair_runtime(configure_in_register={})
        stub = Stub(Recorder(), name="p", index="01", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        await peer.handshake()
        await start
        assert peer.early_configure is not None
        assert (await peer.early_configure).events == int(api.ALL_EVENTS)
        assert peer.log[:2] == ["call Configure", "reply Configure"]
        assert stub.connected
        await shut(stub, peer)

    arun(main)


def test_refused_registration_raises_registration_error_and_closes() -> None:
    async def main() -> None:
        error = TtrpcError(StatusCode.UNKNOWN, 'invalid plugin index "1"')
        peer, plugin_end = await socketpair_runtime(register_error=error)
        stub = Stub(Recorder(), name="p", index="01", connection=plugin_end, environ={})
        with pytest.raises(RegistrationError, match='invalid plugin index "1"'):
            await stub.start()
        assert not stub.connected
        await peer.session.wait_closed()  # the stub closed its end

    arun(main)


def test_runtime_that_never_configures_fails_start_within_the_timeouts() -> None:
    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(
            Recorder(),
            name="p",
            index="01",
            connection=plugin_end,
            environ={},
            registration_timeout=0.1,
            request_timeout=0.1,
        )
        with pytest.raises(RegistrationError, match=r"did not configure it within 0\.2 s"):
            await stub.start()
        await peer.session.wait_closed()

    arun(main)


# --------------------------------------------------------------------------- configure and mask


@pytest.mark.parametrize(
    ("runtime_version", "nri_version", "expected"),
    [
        ("v2.3.0", "v0.12.0", api.ALL_EVENTS),
        ("v2.2.1", "", api.ALL_EVENTS),  # NRI 0.11 by the table
        ("v2.2.0", "", api.ALL_EVENTS),  # NRI 0.10
        ("v2.1.4", "", api.LEGACY_EVENTS),  # NRI 0.8
        ("1.7.24~ds1", "", api.LEGACY_EVENTS),  # Debian's containerd, NRI 0.6.1
        ("v1.7.0", "", api.LEGACY_EVENTS),
        ("something-else", "", api.LEGACY_EVENTS),  # unknown: conservative
    ],
)
def test_mask_is_trimmed_to_what_the_runtime_nri_level_accepts(
    runtime_version: str, nri_version: str, expected: EventMask
) -> None:
    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(Recorder(), name="p", index="01", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        reply = await peer.handshake(runtime_version=runtime_version, nri_version=nri_version)
        await start
        assert reply.events == int(expected)
        assert stub.events == expected
        await shut(stub, peer)

    arun(main)


def test_unknown_runtime_name_gets_legacy_events_only() -> None:
    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(Recorder(), name="p", index="01", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        reply = await peer.handshake(runtime_name="cri-o", runtime_version="1.31.0", nri_version="")
        await start
        assert reply.events == int(api.LEGACY_EVENTS)
        await shut(stub, peer)

    arun(main)


def test_configure_may_narrow_the_subscription() -> None:
    async def main() -> None:
        plugin = Recorder()
        plugin.mask = EventMask.CREATE_CONTAINER | EventMask.STOP_CONTAINER
        stub, peer, _ = await connected(plugin)
        assert stub.events == EventMask.CREATE_CONTAINER | EventMask.STOP_CONTAINER
        await shut(stub, peer)

    arun(main)


def test_subscribing_to_an_event_without_handler_is_refused() -> None:
    class OnlyCreate(Plugin):
        async def configure(self, request: Any) -> EventMask:
            return EventMask.CREATE_CONTAINER | EventMask.REMOVE_CONTAINER

        async def create_container(self, pod: Any, container: Any) -> None:
            return None

    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(OnlyCreate(), name="p", index="01", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        await asyncio.wait_for(peer.registration, 5)
        with pytest.raises(TtrpcError, match="no handler for: RemoveContainer"):
            await peer.configure()
        with pytest.raises(PluginDefinitionError, match="RemoveContainer"):
            await start
        peer.close()

    arun(main)


def test_plugin_with_only_new_events_cannot_run_on_an_old_runtime() -> None:
    class Validator(Plugin):
        async def validate_container_adjustment(self, request: Any) -> None:
            return None

    async def main() -> None:
        peer, plugin_end = await socketpair_runtime()
        stub = Stub(Validator(), name="p", index="01", connection=plugin_end, environ={})
        start = asyncio.create_task(stub.start())
        await asyncio.wait_for(peer.registration, 5)
        # Sending 0 would mean "every event" to the runtime: the stub must fail instead.
        with pytest.raises(TtrpcError, match="cannot deliver"):
            await peer.configure(runtime_version="v2.0.0", nri_version="")
        with pytest.raises(RegistrationError, match="ValidateContainerAdjustment"):
            await start
        peer.close()

    arun(main)


# --------------------------------------------------------------------------- synchronize


def test_chunked_sync_is_merged_and_answered_more_until_the_last_chunk() -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        plugin.calls.clear()
        pods = [pod(f"p{i}") for i in range(7)]
        containers = [container(f"c{i}", f"p{i}") for i in range(7)]
        final, partial = await peer.synchronize(pods, containers, chunk=3)
        assert len(partial) == 2
        for reply in partial:
            assert reply.more and not reply.update
        assert not final.more
        assert [u.container_id for u in final.update] == [containers[0].id]
        assert final.update[0].linux.resources.cpu.cpus == "1"
        assert plugin.names() == ["synchronize"]  # called once, with everything
        got_pods, got_containers = plugin.calls[0][1]
        assert [p.name for p in got_pods] == [p.name for p in pods]
        assert [c.id for c in got_containers] == [c.id for c in containers]
        await shut(stub, peer)

    arun(main)


@settings(max_examples=25, deadline=None)
@given(
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=0, max_value=12),
    st.integers(min_value=1, max_value=5),
)
def test_any_chunking_delivers_everything_once_in_order(
    n_pods: int, n_containers: int, chunk: int
) -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        plugin.calls.clear()
        pods = [pod(f"p{i}") for i in range(n_pods)]
        containers = [container(f"c{i}") for i in range(n_containers)]
        final, partial = await peer.synchronize(pods, containers, chunk=chunk)
        assert all(reply.more and not reply.update for reply in partial)
        assert len(partial) == max(0, -(-max(n_pods, n_containers, 1) // chunk) - 1)
        assert plugin.names() == ["synchronize"]
        got_pods, got_containers = plugin.calls[0][1]
        assert [p.id for p in got_pods] == [p.id for p in pods]
        assert [c.id for c in got_containers] == [c.id for c in containers]
        assert len(final.update) == min(1, n_containers)
        await shut(stub, peer)

    arun(main)


def test_unchunked_sync_and_empty_sync() -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        final, _ = await peer.synchronize([pod()], [container()])
        assert [u.container_id for u in final.update] == [container().id]
        assert plugin.calls[0] == ("synchronize", ([], []))  # the handshake's empty sync
        await shut(stub, peer)

    arun(main)


# --------------------------------------------------------------------------- events

CONTAINER_EVENT_RPCS = [
    ("PostCreateContainer", api_pb2.PostCreateContainerRequest, "post_create_container"),
    ("StartContainer", api_pb2.StartContainerRequest, "start_container"),
    ("PostStartContainer", api_pb2.PostStartContainerRequest, "post_start_container"),
    ("PostUpdateContainer", api_pb2.PostUpdateContainerRequest, "post_update_container"),
    ("RemoveContainer", api_pb2.RemoveContainerRequest, "remove_container"),
]
POD_EVENT_RPCS = [
    ("RunPodSandbox", api_pb2.RunPodSandboxRequest, "run_pod_sandbox"),
    ("PostUpdatePodSandbox", api_pb2.PostUpdatePodSandboxRequest, "post_update_pod_sandbox"),
    ("StopPodSandbox", api_pb2.StopPodSandboxRequest, "stop_pod_sandbox"),
    ("RemovePodSandbox", api_pb2.RemovePodSandboxRequest, "remove_pod_sandbox"),
]
STATE_CHANGE_EVENTS = [
    (api_pb2.RUN_POD_SANDBOX, "run_pod_sandbox", False),
    (api_pb2.STOP_POD_SANDBOX, "stop_pod_sandbox", False),
    (api_pb2.REMOVE_POD_SANDBOX, "remove_pod_sandbox", False),
    (api_pb2.POST_UPDATE_POD_SANDBOX, "post_update_pod_sandbox", False),
    (api_pb2.POST_CREATE_CONTAINER, "post_create_container", True),
    (api_pb2.START_CONTAINER, "start_container", True),
    (api_pb2.POST_START_CONTAINER, "post_start_container", True),
    (api_pb2.POST_UPDATE_CONTAINER, "post_update_container", True),
    (api_pb2.REMOVE_CONTAINER, "remove_container", True),
]


def test_dedicated_event_rpcs_reach_their_handlers() -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        plugin.calls.clear()
        the_pod, the_container = pod("web"), container("app", "web")
        for method, request_type, _ in CONTAINER_EVENT_RPCS:
            reply = await peer.call(
                method, request_type(pod=the_pod, container=the_container), api_pb2.Empty
            )
            assert reply == api_pb2.Empty()
        for method, request_type, _ in POD_EVENT_RPCS:
            await peer.call(method, request_type(pod=the_pod), api_pb2.Empty)
        resources = api_pb2.LinuxResources()
        resources.cpu.shares.value = 512
        await peer.call(
            "UpdatePodSandbox",
            api_pb2.UpdatePodSandboxRequest(pod=the_pod, linux_resources=resources),
            api_pb2.UpdatePodSandboxResponse,
        )
        expected = [name for _, _, name in CONTAINER_EVENT_RPCS] + [
            name for _, _, name in POD_EVENT_RPCS
        ]
        assert plugin.names() == [*expected, "update_pod_sandbox"]
        for name, args in plugin.calls[: len(CONTAINER_EVENT_RPCS)]:
            assert args[0].name == "web" and args[1].name == "app", name
        for name, args in plugin.calls[len(CONTAINER_EVENT_RPCS) : -1]:
            assert args == (the_pod,), name
        assert plugin.calls[-1][1][2].cpu.shares.value == 512
        await shut(stub, peer)

    arun(main)


def test_state_change_delivers_every_non_adjusting_event() -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin, peer_options={}, name="old", index="20")
        plugin.calls.clear()
        the_pod, the_container = pod("db"), container("pg", "db")
        for event, _, with_container in STATE_CHANGE_EVENTS:
            await peer.state_change(event, the_pod, the_container if with_container else None)
        assert plugin.names() == [name for _, name, _ in STATE_CHANGE_EVENTS]
        for (_, args), (_, _, with_container) in zip(
            plugin.calls, STATE_CHANGE_EVENTS, strict=True
        ):
            assert args[0].name == "db"
            if with_container:
                assert args[1].name == "pg"
            else:
                assert len(args) == 1
        await shut(stub, peer)

    arun(main)


def test_adjusting_events_return_adjustments_and_updates() -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        the_pod, the_container = pod(), container()
        created = await peer.call(
            "CreateContainer",
            api_pb2.CreateContainerRequest(pod=the_pod, container=the_container),
            api_pb2.CreateContainerResponse,
        )
        assert created.adjust.linux.resources.cpu.cpus == "2-3"
        assert created.adjust.linux.resources.cpu.mems == "0"
        updated = await peer.call(
            "UpdateContainer",
            api_pb2.UpdateContainerRequest(pod=the_pod, container=the_container),
            api_pb2.UpdateContainerResponse,
        )
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in updated.update] == [
            (the_container.id, "5")
        ]
        stopped = await peer.call(
            "StopContainer",
            api_pb2.StopContainerRequest(pod=the_pod, container=the_container),
            api_pb2.StopContainerResponse,
        )
        assert [u.container_id for u in stopped.update] == ["other"]
        assert stopped.update[0].linux.resources.memory.limit.value == 1 << 20
        await shut(stub, peer)

    arun(main)


def test_validation_errors_become_rejections() -> None:
    async def main() -> None:
        plugin = Recorder()
        stub, peer, _ = await connected(plugin)
        request = api_pb2.ValidateContainerAdjustmentRequest(pod=pod(), container=container())
        api.set_cpuset_cpus(request.adjust, "bad")
        reply = await peer.call(
            "ValidateContainerAdjustment", request, api_pb2.ValidateContainerAdjustmentResponse
        )
        assert reply.reject and reply.reason == "cpus 'bad' are not allowed here"
        api.set_cpuset_cpus(request.adjust, "0")
        reply = await peer.call(
            "ValidateContainerAdjustment", request, api_pb2.ValidateContainerAdjustmentResponse
        )
        assert not reply.reject and not reply.reason
        await shut(stub, peer)

    arun(main)


def test_missing_handlers_answer_empty_responses() -> None:
    class OnlyCreate(Plugin):
        def __init__(self) -> None:
            self.seen = 0

        async def create_container(self, pod: Any, container: Any) -> None:
            self.seen += 1

    async def main() -> None:
        plugin = OnlyCreate()
        stub, peer, _ = await connected(plugin)
        assert stub.events == EventMask.CREATE_CONTAINER
        the_pod, the_container = pod(), container()
        for method, request in [
            ("UpdateContainer", api_pb2.UpdateContainerRequest(pod=the_pod)),
            ("StopContainer", api_pb2.StopContainerRequest(pod=the_pod)),
            ("RunPodSandbox", api_pb2.RunPodSandboxRequest(pod=the_pod)),
            ("ValidateContainerAdjustment", api_pb2.ValidateContainerAdjustmentRequest()),
            ("Shutdown", api_pb2.Empty()),
            ("StateChange", api_pb2.StateChangeEvent(event=api_pb2.START_CONTAINER)),
        ]:
            assert await peer.raw_call(method, request.SerializeToString()) == b"", method
        created = await peer.call(
            "CreateContainer",
            api_pb2.CreateContainerRequest(pod=the_pod, container=the_container),
            api_pb2.CreateContainerResponse,
        )
        assert created == api_pb2.CreateContainerResponse() and plugin.seen == 1
        await shut(stub, peer)

    arun(main)


def test_unknown_methods_are_unimplemented_and_garbage_is_invalid_argument() -> None:
    async def main() -> None:
        stub, peer, _ = await connected(Recorder())
        error = await peer.expect_status("SomeFutureEvent", b"")
        assert error.code == StatusCode.UNIMPLEMENTED and "SomeFutureEvent" in error.message
        garbage = b"\xff\xff\xff\xff"
        for method in [
            "CreateContainer",
            "StateChange",
            "Synchronize",
            "Configure",
            "StopPodSandbox",
        ]:
            error = await peer.expect_status(method, garbage)
            assert error.code == StatusCode.INVALID_ARGUMENT, method
            assert "invalid" in error.message
        # the connection survives bad requests
        assert (await peer.state_change(api_pb2.START_CONTAINER, pod(), container())) == (
            api_pb2.Empty()
        )
        await shut(stub, peer)

    arun(main)


def test_handler_exceptions_fail_the_call_with_their_message() -> None:
    class Failing(Plugin):
        async def create_container(self, pod: Any, container: Any) -> None:
            raise RuntimeError("no CPUs left for " + container.name)

        async def start_container(self, pod: Any, container: Any) -> None:
            raise TtrpcError(StatusCode.FAILED_PRECONDITION, "not now")

    async def main() -> None:
        stub, peer, _ = await connected(Failing())
        request = api_pb2.CreateContainerRequest(pod=pod(), container=container("big"))
        error = await peer.expect_status("CreateContainer", request.SerializeToString())
        assert error.code == StatusCode.UNKNOWN and error.message == "no CPUs left for big"
        request = api_pb2.StartContainerRequest(pod=pod(), container=container())
        error = await peer.expect_status("StartContainer", request.SerializeToString())
        assert (error.code, error.message) == (StatusCode.FAILED_PRECONDITION, "not now")
        await shut(stub, peer)

    arun(main)


def test_create_container_result_forms() -> None:
    results: list[Any] = []

    class Varied(Plugin):
        async def create_container(self, pod: Any, container: Any) -> Any:
            return results.pop(0)

    async def create(peer: RuntimePeer) -> api_pb2.CreateContainerResponse:
        request = api_pb2.CreateContainerRequest(pod=pod(), container=container())
        return await peer.call("CreateContainer", request, api_pb2.CreateContainerResponse)

    async def main() -> None:
        stub, peer, _ = await connected(Varied())
        update = api.container_update("x", cpus="7")
        results.extend(
            [
                (api.container_adjustment(cpus="1"), [update]),
                (None, [update, update]),
                api_pb2.CreateContainerResponse(update=[update]),
                [update],  # wrong type
            ]
        )
        first = await create(peer)
        assert first.adjust.linux.resources.cpu.cpus == "1" and list(first.update) == [update]
        second = await create(peer)
        assert not second.HasField("adjust") and list(second.update) == [update, update]
        third = await create(peer)
        assert list(third.update) == [update]
        request = api_pb2.CreateContainerRequest(pod=pod(), container=container())
        error = await peer.expect_status("CreateContainer", request.SerializeToString())
        assert (
            error.code == StatusCode.UNKNOWN and "create_container returned list" in error.message
        )
        await shut(stub, peer)

    arun(main)
