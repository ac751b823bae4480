"""ValidateContainerAdjustment (NRI v0.10+): after merging, in parallel, transactional."""

from __future__ import annotations

import asyncio

import pytest

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import TtrpcError
from nrirp.simruntime import AdjustmentRejected, ContainerSpec, PodSpec
from tests.support.aio import arun

from .peers import ScriptedPlugin, mask, ready, runtime

POD = PodSpec("web", containers=[ContainerSpec("app")])
VALIDATE = mask(api_pb2.VALIDATE_CONTAINER_ADJUSTMENT)
CREATE = mask(api_pb2.CREATE_CONTAINER)


async def pin(_request: object) -> api_pb2.CreateContainerResponse:
    reply = api_pb2.CreateContainerResponse()
    reply.adjust.linux.resources.cpu.cpus = "1"
    reply.adjust.annotations["pinned"] = "yes"
    return reply


def test_validators_see_the_pristine_container_the_merge_and_its_owners() -> None:
    seen: list[api_pb2.ValidateContainerAdjustmentRequest] = []

    async def validate(request: api_pb2.ValidateContainerAdjustmentRequest) -> None:
        seen.append(request)

    async def scenario() -> None:
        async with runtime() as rt:
            pinner = ScriptedPlugin(
                "pinner", "10", events=CREATE, handlers={"CreateContainer": pin}
            )
            judge = ScriptedPlugin(
                "judge", "90", events=VALIDATE, handlers={"ValidateContainerAdjustment": validate}
            )
            await ready(rt, pinner, judge)
            pod = await rt.run_pod_sandbox(POD)
            ctr = await rt.create_container(pod, "app")
            assert str(ctr.resources.cpus) == "1"
            (request,) = seen
            assert request.container.id == ctr.id
            assert request.container.linux.resources.cpu.cpus == ""  # pristine
            assert request.adjust.linux.resources.cpu.cpus == "1"
            owners = request.owners.owners[ctr.id]
            assert owners.simple[api_pb2.FIELD_CPU_SET_CPUS] == "10-pinner"
            compound = owners.compound[api_pb2.FIELD_ANNOTATIONS].owners
            assert dict(compound) == {"pinned": "10-pinner"}
            assert [(p.name, p.index) for p in request.plugins] == [
                ("pinner", "10"),
                ("judge", "90"),
            ]
            for plugin in (pinner, judge):
                await plugin.close()

    arun(scenario)


def test_a_rejection_or_a_failing_validator_fails_creation() -> None:
    async def reject(_request: object) -> api_pb2.ValidateContainerAdjustmentResponse:
        return api_pb2.ValidateContainerAdjustmentResponse(reject=True, reason="no pinning here")

    async def broken(_request: object) -> None:
        await asyncio.sleep(0)
        raise TtrpcError(2, "validator crashed")

    async def scenario() -> None:
        async with runtime() as rt:
            pinner = ScriptedPlugin(
                "pinner", "10", events=CREATE, handlers={"CreateContainer": pin}
            )
            strict = ScriptedPlugin(
                "strict", "80", events=VALIDATE, handlers={"ValidateContainerAdjustment": reject}
            )
            flaky = ScriptedPlugin(
                "flaky", "90", events=VALIDATE, handlers={"ValidateContainerAdjustment": broken}
            )
            await ready(rt, pinner, strict, flaky)
            pod = await rt.run_pod_sandbox(POD)
            with pytest.raises(AdjustmentRejected) as rejected:
                await rt.create_container(pod, "app")
            assert str(rejected.value) == (
                'validator "80-strict" rejected container adjustment, reason: no pinning here; '
                "validator plugin 90-flaky failed: validator crashed"
            )
            assert rt.containers() == []
            # both validators were asked: they run in parallel, not stopping at the first
            assert strict.seen("ValidateContainerAdjustment") and flaky.seen(
                "ValidateContainerAdjustment"
            )
            for plugin in (pinner, strict, flaky):
                await plugin.close()

    arun(scenario)


def test_releases_before_v0_10_never_validate() -> None:
    async def scenario() -> None:
        async with runtime(nri_version="v0.8.0") as rt:
            pinner = ScriptedPlugin(
                "pinner", "10", events=CREATE, handlers={"CreateContainer": pin}
            )
            await ready(rt, pinner)
            pod = await rt.run_pod_sandbox(POD)
            await rt.create_container(pod, "app")
            assert all(c.method != "ValidateContainerAdjustment" for c in rt.journal.calls)
            await pinner.close()

    arun(scenario)
