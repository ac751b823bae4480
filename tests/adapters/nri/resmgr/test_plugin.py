"""The resource-manager NRI plugin against a scripted runtime (the stub tests' RuntimePeer)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar

import pytest

from nrirp.adapters.memory import InMemoryStateStore, RecordingDecisionLog
from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.plugin import SYNC_IDS_LISTED, ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.service import PluginService
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.stub import Stub
from nrirp.adapters.nri.stub.scope import handlers_running
from nrirp.adapters.nri.transport import TtrpcError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import UPDATES_FAILED, PolicyError, PolicyEvent
from tests.adapters.nri.stub.runtime_peer import RuntimePeer, socketpair_runtime
from tests.domain.support import small_machine
from tests.support.aio import arun

PIN = "pin.test.nrirp"


class PinPolicy(TemplatePolicy):
    """Pins by pod annotation ``pin.test.nrirp/container.NAME``; refuses ``refuse``; fails
    with a bug on ``crash``; when a container is released, widens container ``a`` to CPUs
    0-7."""

    name: ClassVar[str] = "template"
    failed: ClassVar[list[tuple[str, ...]]] = []

    def allocate(self, container: Container) -> None:
        assert self._ctx is not None
        reader = self._ctx.annotations(container)
        if reader.get_bool("refuse.test.nrirp"):
            raise PolicyError(f"no CPUs left for {container.name}")
        if reader.get_bool("crash.test.nrirp"):
            raise KeyError(f"bug placing {container.name}")
        cpus = reader.get_cpuset(PIN)
        if cpus is not None:
            self._ctx.cache.set_cpus(container.id, cpus)
            self._ctx.record_decision(container, "pinned by annotation")

    def sync(self, added: Any, removed: Any) -> None:
        for container in added:
            self.allocate(container)

    def release(self, container: Container) -> None:
        assert self._ctx is not None
        other = self._ctx.cache.container("sandbox-web-a")
        if other is not None and other.id != container.id and other.state.holds_resources:
            self._ctx.cache.set_cpus(other.id, CPUSet.range(0, 8))

    def handle_event(self, event: PolicyEvent) -> None:
        if event.kind == UPDATES_FAILED:
            self.failed.append(event.data.container_ids)


def pod(name: str = "web", **annotations: str) -> api_pb2.PodSandbox:
    msg = api_pb2.PodSandbox(id=f"sandbox-{name}", name=name, namespace="prod", uid=f"u-{name}")
    msg.linux.cgroup_parent = f"/kubepods/burstable/podu-{name}"
    for key, value in annotations.items():
        msg.annotations[key] = value
    return msg


def ctr(name: str, pod_name: str = "web", state: int = 0) -> api_pb2.Container:
    msg = api_pb2.Container(
        id=f"sandbox-{pod_name}-{name}",
        pod_sandbox_id=f"sandbox-{pod_name}",
        name=name,
        state=state,  # type: ignore[arg-type]
    )
    msg.linux.resources.cpu.shares.value = 512
    msg.linux.cgroups_path = f"/kubepods/burstable/podu-{pod_name}/{msg.id}"
    return msg


class Rig:
    def __init__(self, manager: ResourceManager, peer: RuntimePeer, service: PluginService):
        self.manager = manager
        self.peer = peer
        self.service = service


def with_plugin(
    body: Callable[[Rig], Awaitable[None]],
    *,
    store: InMemoryStateStore | None = None,
    decisions: RecordingDecisionLog | None = None,
    sync: tuple[list[Any], list[Any]] = ([], []),
    configure: dict[str, str] | None = None,
    observer: Any = None,
    **peer_options: Any,
) -> None:
    async def main() -> None:
        PinPolicy.failed = []
        updates = NriRuntimeUpdates()
        manager = ResourceManager(
            policy=PinPolicy(),
            machine=small_machine(),
            store=store or InMemoryStateStore(),
            updates=updates,
            decisions=decisions,
            observer=observer,
        )
        manager.start()
        peer, plugin_end = await socketpair_runtime(**peer_options)
        stub = Stub(
            ResourceManagerPlugin(manager, updates),
            name="resource-manager",
            index="90",
            connection=plugin_end,
            reconnect=False,
        )
        service = PluginService(stub, updates)
        running = asyncio.create_task(service.run())
        await asyncio.wait_for(peer.registration, 5)
        await peer.configure(**(configure or {}))
        await peer.synchronize(*sync)
        try:
            await body(Rig(manager, peer, service))
        finally:
            service.stop()
            await running
            peer.close()
            await peer.session.wait_closed()

    arun(main)


async def create(peer: RuntimePeer, p: Any, c: Any) -> api_pb2.CreateContainerResponse:
    return await peer.call(
        "CreateContainer",
        api_pb2.CreateContainerRequest(pod=p, container=c),
        api_pb2.CreateContainerResponse,
    )


async def event(peer: RuntimePeer, method: str, p: Any, c: Any = None) -> None:
    if c is None:
        request: Any = getattr(api_pb2, f"{method}Request")(pod=p)
    else:
        request = getattr(api_pb2, f"{method}Request")(pod=p, container=c)
    await peer.call(method, request, getattr(api_pb2, f"{method}Response"))


def test_lifecycle_adjusts_and_tracks_state() -> None:
    decisions = RecordingDecisionLog()
    p = pod(**{f"{PIN}/container.a": "2-3"})
    a = ctr("a")

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        reply = await create(rig.peer, p, a)
        assert reply.adjust.linux.resources.cpu.cpus == "2-3"
        assert not reply.adjust.linux.resources.cpu.HasField("shares")  # only what changed
        assert list(reply.update) == []
        for method in ("PostCreateContainer", "StartContainer", "PostStartContainer"):
            await event(rig.peer, method, p, a)
        cached = rig.manager.container(a.id)
        assert cached is not None and cached.state is ContainerState.RUNNING
        assert cached.cpus == CPUSet.parse("2-3")
        stop = await rig.peer.call(
            "StopContainer",
            api_pb2.StopContainerRequest(pod=p, container=a),
            api_pb2.StopContainerResponse,
        )
        assert list(stop.update) == []
        await event(rig.peer, "RemoveContainer", p, a)
        await event(rig.peer, "StopPodSandbox", p)
        await event(rig.peer, "RemovePodSandbox", p)
        assert rig.manager.containers() == [] and rig.manager.pods() == []

    with_plugin(body, decisions=decisions)
    assert [(d.container, str(d.cpus), d.reason) for d in decisions.decisions] == [
        ("a", "2-3", "pinned by annotation")
    ]


def test_refused_create_fails_with_reason_and_leaves_cache() -> None:
    p = pod(**{"refuse.test.nrirp/container.b": "true"})

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        with pytest.raises(TtrpcError) as err:
            await create(rig.peer, p, ctr("b"))
        assert "create-container container prod/web/b: no CPUs left for b" in err.value.message
        assert rig.manager.containers() == []
        assert [x.name for x in rig.manager.pods()] == ["web"]

    with_plugin(body)


def test_an_ordinary_refusal_is_one_log_line_without_a_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    p = pod(**{"refuse.test.nrirp/container.b": "true"})

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        with pytest.raises(TtrpcError) as err:
            await create(rig.peer, p, ctr("b"))
        assert err.value.message == "create-container container prod/web/b: no CPUs left for b"

    with caplog.at_level(logging.DEBUG):
        with_plugin(body)
    about = [r for r in caplog.records if "no CPUs left" in r.getMessage()]
    assert [r.getMessage() for r in about] == [
        "conn 1: nri.pkg.api.v1alpha1.Plugin/CreateContainer refused: "
        "create-container container prod/web/b: no CPUs left for b"
    ]
    assert all(r.exc_info is None for r in caplog.records)
    assert "Traceback" not in caplog.text


def test_an_internal_error_is_logged_with_its_traceback(caplog: pytest.LogCaptureFixture) -> None:
    p = pod(**{"crash.test.nrirp/container.b": "true"})

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        with pytest.raises(TtrpcError) as err:
            await create(rig.peer, p, ctr("b"))
        assert "internal error: KeyError" in err.value.message
        assert rig.manager.containers() == []

    with caplog.at_level(logging.DEBUG):
        with_plugin(body)
    (failed,) = [r for r in caplog.records if r.exc_info is not None]
    assert failed.getMessage().endswith("Plugin/CreateContainer failed")
    assert "KeyError: 'bug placing b'" in caplog.text and "Traceback" in caplog.text


def test_state_change_delivery_of_older_runtimes() -> None:
    p = pod()

    async def body(rig: Rig) -> None:
        await rig.peer.state_change(api_pb2.RUN_POD_SANDBOX, p)
        assert [x.id for x in rig.manager.pods()] == [p.id]
        await create(rig.peer, p, ctr("a"))
        await rig.peer.state_change(api_pb2.POST_CREATE_CONTAINER, p, ctr("a"))
        cached = rig.manager.container("sandbox-web-a")
        assert cached is not None and cached.state is ContainerState.CREATED
        assert rig.service.stub.runtime_version == "v1.7.24"

    with_plugin(body, configure={"runtime_version": "v1.7.24", "nri_version": ""})


def test_policy_updates_go_out_after_the_reply() -> None:
    p = pod(**{f"{PIN}/container.a": "1", f"{PIN}/container.b": "2"})

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        await create(rig.peer, p, ctr("a"))
        await create(rig.peer, p, ctr("b"))
        rig.peer.log.clear()
        # b removed without a stop: its release widens a, an update the reply cannot carry
        await event(rig.peer, "RemoveContainer", p, ctr("b"))
        await asyncio.wait_for(rig.peer.update_arrived.wait(), 5)
        assert rig.peer.log == ["call RemoveContainer", "reply RemoveContainer", "update"]
        (request,) = rig.peer.update_requests
        assert [(u.container_id, u.linux.resources.cpu.cpus) for u in request.update] == [
            ("sandbox-web-a", "0-7")
        ]

    with_plugin(body)


class AfterReplyObserver:
    """Notes each call it hears of, and whether an NRI handler was running then."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str | None, bool]] = []

    def started(self, *_: Any) -> None:
        pass

    def handled(self, operation: str, *args: Any) -> None:
        self.heard.append((operation, args[-1], handlers_running()))


def test_an_observer_hears_of_each_call_after_its_reply() -> None:
    """A recorder's work never delays the runtime: it hears of a call once the handler
    returned and its reply was handed to the connection, every call once, in order."""
    observer = AfterReplyObserver()
    p = pod(**{"refuse.test.nrirp/container.b": "true"})

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        await create(rig.peer, p, ctr("a"))
        with pytest.raises(TtrpcError):
            await create(rig.peer, p, ctr("b"))
        await event(rig.peer, "StartContainer", p, ctr("a"))
        await asyncio.sleep(0.05)  # the last reply's hook runs once the reply is written

    with_plugin(body, observer=observer)
    assert observer.heard == [
        ("synchronize", None, False),
        ("run-pod", None, False),
        ("create-container", None, False),
        ("create-container", "no CPUs left for b", False),
        ("start-container", None, False),
    ]


def test_refused_updates_reach_the_policy() -> None:
    p = pod(**{f"{PIN}/container.a": "1", f"{PIN}/container.b": "2"})

    async def body(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        await create(rig.peer, p, ctr("a"))
        await create(rig.peer, p, ctr("b"))
        await event(rig.peer, "RemoveContainer", p, ctr("b"))
        for _ in range(200):
            if PinPolicy.failed:
                break
            await asyncio.sleep(0.01)
        assert PinPolicy.failed == [("sandbox-web-a",)]

    with_plugin(body, fail_updates=lambda update: True)


def test_synchronize_reconciles_restored_state(caplog: pytest.LogCaptureFixture) -> None:
    """A restart: the saved state knows a and b; the runtime reports a (survivor) and c (new)."""
    store = InMemoryStateStore()
    p = pod(**{f"{PIN}/container.a": "1", f"{PIN}/container.c": "3"})

    async def first(rig: Rig) -> None:
        await event(rig.peer, "RunPodSandbox", p)
        await create(rig.peer, p, ctr("a"))
        await create(rig.peer, p, ctr("b"))

    with_plugin(first, store=store)
    running = api_pb2.CONTAINER_RUNNING
    survivors = [ctr("a", state=running), ctr("c", state=running)]
    survivors[0].linux.resources.cpu.cpus = "1"

    async def second(rig: Rig) -> None:
        ids = sorted(c.id for c in rig.manager.containers())
        assert ids == ["sandbox-web-a", "sandbox-web-c"]
        a_now = rig.manager.container("sandbox-web-a")
        c_now = rig.manager.container("sandbox-web-c")
        assert a_now is not None and a_now.cpus == CPUSet.of(1)  # kept its assignment
        assert c_now is not None and c_now.cpus == CPUSet.of(3)  # allocated at sync

    with caplog.at_level(logging.INFO, logger="nrirp.resmgr"):
        with_plugin(second, store=store, sync=([p], survivors))
    (line,) = [r for r in caplog.records if r.getMessage().startswith("synchronized")]
    assert "1 released (gone), 1 admitted (new), 1 kept" in line.getMessage()
    assert line.fields == {  # type: ignore[attr-defined]
        "released": "sandbox-web-b",
        "admitted": "sandbox-web-c",
        "kept": "sandbox-web-a",
    }


def test_the_synchronize_line_lists_a_bounded_number_of_ids(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Thousands of containers (or a hostile runtime's 20,000) made one line of hundreds of
    kilobytes: the line's counts say how many, its fields list the first ones."""
    p = pod()
    many = [ctr(f"c{n:03d}", state=api_pb2.CONTAINER_RUNNING) for n in range(SYNC_IDS_LISTED + 7)]

    async def body(rig: Rig) -> None:
        assert len(rig.manager.containers()) == len(many)

    with caplog.at_level(logging.INFO, logger="nrirp.resmgr"):
        with_plugin(body, sync=([p], many))
    (line,) = [r for r in caplog.records if r.getMessage().startswith("synchronized")]
    assert f"{len(many)} admitted (new)" in line.getMessage()
    admitted = line.fields["admitted"]  # type: ignore[attr-defined]
    listed = sorted(c.id for c in many)[:SYNC_IDS_LISTED]
    assert admitted == ",".join(listed) + ",... (7 more)"


def test_synchronize_runs_inside_the_bulk_hook() -> None:
    """The daemon pauses garbage collection around a Synchronize: translation and the
    manager's sync run inside the hook it gives."""
    seen: list[str] = []

    class Bulk:
        def __enter__(self) -> None:
            seen.append("enter")

        def __exit__(self, *exc: object) -> None:
            seen.append("exit")

    class Watching(PinPolicy):
        def sync(self, added: Any, removed: Any) -> None:
            seen.append(f"sync {len(added)}")
            super().sync(added, removed)

    manager = ResourceManager(policy=Watching(), machine=small_machine())
    manager.start()
    plugin = ResourceManagerPlugin(manager, NriRuntimeUpdates(), bulk=Bulk)
    p = pod()
    arun(lambda: plugin.synchronize([p], [ctr("a", state=api_pb2.CONTAINER_RUNNING)]))
    assert seen == ["enter", "sync 1", "exit"]


def configured_events(
    policy: str, spec: dict[str, Any] | None, runtime_version: str, nri_version: str = ""
) -> EventMask:
    from nrirp.adapters.memory import InMemoryHostControl
    from nrirp.domain.config import load_policy_config
    from nrirp.domain.policies import builtin_registry

    manager = ResourceManager(
        policy=builtin_registry().create(policy),
        machine=small_machine(),
        host=InMemoryHostControl(),
    )
    manager.start(load_policy_config(policy, spec) if spec is not None else None)
    plugin = ResourceManagerPlugin(manager, NriRuntimeUpdates())
    request = api_pb2.ConfigureRequest(
        runtime_name="containerd", runtime_version=runtime_version, NRI_version=nri_version
    )
    return arun(lambda: plugin.configure(request))


REQUESTS = (
    "RunPodSandbox,StopPodSandbox,RemovePodSandbox,CreateContainer,StartContainer,"
    "UpdateContainer,StopContainer,RemoveContainer"
)
SCHEDULING = {
    "reservedResources": {"cpu": "cpuset:0"},
    "schedulingClasses": [{"name": "idle", "policy": "idle"}],
}


def test_subscribes_to_the_requests_and_post_start_only_for_host_side_settings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.DEBUG, logger="nrirp.resmgr"):
        events = configured_events("topology-aware", None, "v1.7.24")
    assert events.pretty() == REQUESTS  # no Post* events: nothing acts on them
    (line,) = [r.getMessage() for r in caplog.records if "subscribing" in r.getMessage()]
    assert line.startswith(f"policy topology-aware: subscribing to {REQUESTS}; ")
    assert "PostStartContainer left out" in line
    # scheduling classes a containerd 1.7 (NRI 0.6.1) cannot carry: applied after start
    events = configured_events("balloons", SCHEDULING, "v1.7.24")
    assert events.pretty() == REQUESTS.replace(
        "StartContainer,", "StartContainer,PostStartContainer,", 1
    )
    # NRI 0.12 carries them: the runtime applies them at creation
    assert configured_events("balloons", SCHEDULING, "v2.3.0", "v0.12.2").pretty() == REQUESTS


def test_a_policy_that_does_not_say_what_it_sets_gets_post_start() -> None:
    manager = ResourceManager(policy=PinPolicy(), machine=small_machine(), host=_Host())
    manager.start()
    plugin = ResourceManagerPlugin(manager, NriRuntimeUpdates())
    events = arun(lambda: plugin.configure(api_pb2.ConfigureRequest(runtime_name="containerd")))
    assert events & EventMask.POST_START_CONTAINER
    assert not plugin.subscription_stale()


class _Host:
    def apply(self, target: object, change: object) -> None:
        pass

    def forget(self, target: object) -> None:
        pass
