"""SimulatorContainer: fake hardware, in-memory adapters, our plugin on the simulated runtime."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from dependency_injector import providers

from nrirp.adapters.fakehw import expected_machine, load_machine, resolve, write_sysfs
from nrirp.adapters.memory import (
    FakeClock,
    InMemoryHostControl,
    InMemoryStateStore,
    RecordingDecisionLog,
)
from nrirp.app.simulator import SimulatorContainer
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import HostChange
from nrirp.simruntime import ContainerSpec, PodSpec, RuntimeOptions, SimRuntime

TEST_POLICIES = "tests.app.test_containers"  # FirstCpuPolicy: CPU 1 + memory.high=max


def simulator(**config: object) -> SimulatorContainer:
    container = SimulatorContainer()
    container.config.from_dict(
        {"policy": "first-cpu", "policy_modules": [TEST_POLICIES], "machine": "box-16", **config}
    )
    return container


def drive(container: SimulatorContainer) -> tuple[CPUSet | None, str]:
    """Start the engine, run one pod through the simulated runtime; the container's effective
    cpus and the runtime's NRI version."""

    async def main() -> tuple[CPUSet | None, str]:
        container.core.resource_manager().start()
        async with container.simulation() as sim:
            _, (ctr,) = await sim.runtime.run_pod(PodSpec("web", containers=[ContainerSpec("app")]))
            status = sim.runtime.container(ctr.id)
            return status.resources.cpus, str(sim.runtime.version)

    return asyncio.run(asyncio.wait_for(main(), 20))


def test_simulator_defaults_run_a_pod_through_the_plugin() -> None:
    container = simulator()
    cpus, version = drive(container)
    assert cpus == CPUSet.of(1)  # the policy's adjustment, applied by the simulated runtime
    assert version == "v0.12.2"
    assert container.core.machine() == expected_machine(load_machine("box-16"))
    decisions = container.adapters.decision_log()
    assert isinstance(decisions, RecordingDecisionLog)
    assert [d.container for d in decisions.decisions] == ["app"]
    assert container.adapters.state_store().saves > 0
    host = container.adapters.host_control()
    assert isinstance(host, InMemoryHostControl)
    assert list(host.settings.values()) == [HostChange(cgroup={"memory.high": "max"})]


def test_simulator_every_adapter_overrides() -> None:
    container = simulator()
    store, host, log = InMemoryStateStore(), InMemoryHostControl(), RecordingDecisionLog()
    clock = FakeClock(now=42.0)
    runtime = SimRuntime(RuntimeOptions(nri_version="v0.6.1", host_cpus=CPUSet.range(0, 16)))
    container.adapters.state_store.override(providers.Object(store))
    container.adapters.host_control.override(providers.Object(host))
    container.adapters.decision_log.override(providers.Object(log))
    container.adapters.clock.override(providers.Object(clock))
    container.runtime.override(providers.Object(runtime))
    cpus, version = drive(container)
    assert cpus == CPUSet.of(1) and version == "v0.6.1"
    assert store.saves > 0 and host.calls and len(log.decisions) == 1
    assert container.core.resource_manager().containers()[0].created_at == 42.0


def test_simulator_hardware_sources(tmp_path: Path) -> None:
    root = tmp_path / "sys"
    write_sysfs(resolve(load_machine("hybrid-desktop"), "hybrid-desktop"), root)
    from_tree = simulator(machine=None, sysfs_root=str(root)).core.machine()
    assert len(from_tree.online) == len(expected_machine(load_machine("hybrid-desktop")).online)
    with pytest.raises(ValueError, match="needs a machine"):
        simulator(machine=None).core.machine()
