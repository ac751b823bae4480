"""Pods and containers given as NRI messages (a recording's replay): adopted before plugins
connect (their Synchronize reports them as given), or run and created with their ids and
resources exactly as given."""

from __future__ import annotations

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.simruntime import ContainerState, InvalidRequest, InvalidState, PodState
from tests.support.aio import arun

from .peers import ScriptedPlugin, runtime


def pod_pb(name: str) -> api_pb2.PodSandbox:
    pb = api_pb2.PodSandbox(id=f"sb-{name}", name=name, namespace="prod", uid=f"u-{name}")
    pb.linux.cgroup_parent = f"/kubepods/burstable/podu-{name}"
    pb.labels["app"] = name
    return pb


def ctr_pb(name: str, pod: str, state: int = api_pb2.CONTAINER_RUNNING) -> api_pb2.Container:
    pb = api_pb2.Container(id=f"c-{pod}-{name}", pod_sandbox_id=f"sb-{pod}", name=name)
    pb.state = state  # type: ignore[assignment]
    pb.linux.resources.cpu.shares.value = 1536
    pb.linux.resources.cpu.cpus = "2-3"
    pb.annotations["note"] = "given"
    return pb


def test_adopted_pods_and_containers_are_what_a_plugin_synchronizes_with() -> None:
    async def scenario() -> None:
        rt = runtime()
        given = [ctr_pb("a", "web"), ctr_pb("b", "web", api_pb2.CONTAINER_STOPPED)]
        await rt.adopt([pod_pb("web")], given)
        async with rt:
            plugin = ScriptedPlugin()
            await plugin.attach(rt)
            await rt.wait_plugin(plugin.full_name)
            (sync,) = plugin.requests_of("Synchronize")
            assert list(sync.pods) == [pod_pb("web")]
            assert list(sync.containers) == given
            assert rt.pod("sb-web").state is PodState.READY
            assert [c.state for c in rt.containers()] == [
                ContainerState.RUNNING,
                ContainerState.STOPPED,
            ]
            # adopting again keeps what the runtime has, adds and forgets the rest
            await rt.adopt([pod_pb("web"), pod_pb("db")], [given[0], ctr_pb("x", "db")])
            assert [c.id for c in rt.containers()] == ["c-web-a", "c-db-x"]
            with pytest.raises(InvalidRequest, match="not listed"):
                await rt.adopt([], [ctr_pb("a", "web")])
            assert [c.id for c in rt.containers()] == ["c-web-a", "c-db-x"]  # unchanged
            await plugin.close()

    arun(scenario)


def test_given_messages_reach_plugins_as_they_are() -> None:
    async def scenario() -> None:
        async with runtime() as rt:
            plugin = ScriptedPlugin()
            await plugin.attach(rt)
            await rt.wait_plugin(plugin.full_name)
            await rt.run_pod_sandbox_message(pod_pb("web"))
            created = await rt.create_container_message(ctr_pb("a", "web"))
            assert created.state is ContainerState.CREATED
            assert str(created.resources.cpus) == "2-3" and created.resources.cpu_shares == 1536
            (request,) = plugin.requests_of("CreateContainer")
            expected = ctr_pb("a", "web")
            expected.state = api_pb2.CONTAINER_UNKNOWN
            assert request.container == expected and request.pod == pod_pb("web")
            await rt.start_container(created)
            assert "PostStartContainer" in plugin.events_seen()
            with pytest.raises(InvalidState, match="already exists"):
                await rt.run_pod_sandbox_message(pod_pb("web"))
            with pytest.raises(InvalidState, match="already exists"):
                await rt.create_container_message(ctr_pb("a", "web"))
            await plugin.close()

    arun(scenario)
