"""The resource-manager plugin on the simulated runtime, in one process (``Simulation``)."""

from __future__ import annotations

import pytest

from nrirp.adapters.memory import InMemoryStateStore, RecordingDecisionLog
from nrirp.adapters.nri.resmgr.plugin import ResourceManagerPlugin
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.nri.stub import RegistrationError
from nrirp.app.simulator.simulation import Simulation, simulated_runtime
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.pipeline import ResourceManager
from nrirp.simruntime import ContainerSpec, InvalidState, PodSpec, SimRuntime
from tests.adapters.nri.resmgr.test_plugin import PIN, PinPolicy
from tests.domain.support import GiB, small_machine
from tests.support.aio import arun


def simulation(runtime: SimRuntime, *, started: bool = True) -> Simulation:
    updates = NriRuntimeUpdates()
    manager = ResourceManager(
        policy=PinPolicy(),
        machine=small_machine(),
        store=InMemoryStateStore(),
        updates=updates,
        decisions=RecordingDecisionLog(),
    )
    if started:
        manager.start()
    return Simulation(runtime, ResourceManagerPlugin(manager, updates), updates)


def test_simulated_runtime_has_the_machines_cpus_mems_and_memory() -> None:
    options = simulated_runtime(small_machine(), "v0.6.1").options
    assert (options.host_cpus, options.host_mems) == (CPUSet.range(0, 8), CPUSet.parse("0-1"))
    assert options.memory_capacity == 16 * GiB
    assert str(options.nri_version) == "v0.6.1"


def test_the_plugin_receives_events_and_its_decisions_reach_the_containers() -> None:
    async def main() -> None:
        runtime = simulated_runtime(small_machine())
        async with simulation(runtime) as sim:
            assert [p.name for p in runtime.active_plugins()] == ["90-resource-manager"]
            spec = PodSpec(
                "web", containers=[ContainerSpec("a")], annotations={f"{PIN}/container.a": "2-3"}
            )
            _pod, (container,) = await sim.runtime.run_pod(spec)
            assert container.resources.cpus == CPUSet.range(2, 4)
        with pytest.raises(InvalidState):
            await runtime.open_plugin_socket()  # closed with the simulation

    arun(main)


def test_a_plugin_not_ready_in_time_leaves_nothing_running() -> None:
    async def main() -> None:
        runtime = simulated_runtime(small_machine())
        sim = simulation(runtime)
        with pytest.raises(TimeoutError):
            await sim.start(timeout=0)
        with pytest.raises(InvalidState):
            await runtime.open_plugin_socket()
        # arun fails the test if the plugin's service task is still running

    arun(main)


def test_a_plugin_that_stops_before_it_is_ready_leaves_nothing_running() -> None:
    async def main() -> None:
        runtime = simulated_runtime(small_machine())
        # a manager that was never started fails Configure: the stub gives up
        sim = simulation(runtime, started=False)
        with pytest.raises(RegistrationError, match="stopped before it was ready"):
            await sim.start()
        with pytest.raises(InvalidState):
            await runtime.open_plugin_socket()

    arun(main)
