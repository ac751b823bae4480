"""Wiring of topology hints and timers in every composition: defaults, overrides, and a policy
seeing the hints of a container's devices (embedded, daemon, and through the simulated runtime)."""

from __future__ import annotations

import asyncio
import os
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest
from dependency_injector import providers

from nrirp.adapters.fakehw import FakeTopologyHints, load_machine, resolve, write_sysfs
from nrirp.adapters.memory import ManualTimers, RecordingRuntimeUpdates
from nrirp.adapters.podresources import CombinedHints, PodResourceHints
from nrirp.adapters.sysfs import SysfsTopologyHints
from nrirp.adapters.system import ThreadTimers
from nrirp.app.composition import Ports
from nrirp.app.daemon import DaemonContainer
from nrirp.app.embed import EmbeddedContainer
from nrirp.app.simulator import SimulatorContainer
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Device, LinuxResources, Pod
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyEvent, PolicyRegistry
from nrirp.domain.topology import TopologyHint
from nrirp.simruntime import ContainerSpec, DeviceSpec, MountSpec, PodSpec

THIS_MODULE = __name__
GPU = "/sys/devices/pci0000:af/0000:af:00.0"  # server-4s-144: node 2
NVME = "/sys/devices/pci0000:5e/0000:5e:00.0"  # node 1


class HintProbePolicy(TemplatePolicy):
    """Records the hints it sees per container name and schedules an event per container."""

    name: ClassVar[str] = "hint-probe"
    description: ClassVar[str] = "test policy: records topology hints"

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[str, dict[str, TopologyHint]] = {}
        self.events: list[PolicyEvent] = []
        self.event_threads: list[str] = []

    def allocate(self, container: Container) -> None:
        assert self._ctx is not None
        self.seen[container.name] = dict(self._ctx.topology_hints(container))
        self._ctx.schedule_event(0.05, PolicyEvent("probe", self.name, container.name))

    def handle_event(self, event: PolicyEvent) -> None:
        self.events.append(event)
        self.event_threads.append(threading.current_thread().name)


def register_policies(registry: PolicyRegistry) -> None:
    registry.register(HintProbePolicy)


CONFIG = {"policy": "hint-probe", "policy_modules": [THIS_MODULE]}
POD = Pod(id="p1", name="web", namespace="prod", uid="u1", cgroup_parent="/kubepods/podu1")
GPU_CTR = Container(
    id="c1",
    pod_id="p1",
    name="app",
    resources=LinuxResources(cpu_shares=1024),
    devices=(Device("/dev/dri/card0", "c", 226, 0),),
)


def create(container: Any, ctr: Container = GPU_CTR) -> HintProbePolicy:
    manager = container.core.resource_manager()
    manager.start()
    manager.run_pod(POD)
    manager.create_container(POD, ctr)
    policy = container.core.policy()
    assert isinstance(policy, HintProbePolicy)
    return policy


@pytest.fixture(scope="module")
def server_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hw") / "sys"
    write_sysfs(resolve(load_machine("server-4s-144")), root)
    return root


@pytest.mark.parametrize("composition", [EmbeddedContainer, DaemonContainer, SimulatorContainer])
def test_every_composition_declares_every_adapter(composition: type[Any]) -> None:
    assert {"topology_hints", "timers"} <= set(Ports.dependencies)
    for name in Ports.dependencies:
        assert isinstance(getattr(composition.adapters, name), providers.Provider), name


def test_daemon_reads_hints_from_its_sysfs_root(tmp_path: Path, server_tree: Path) -> None:
    container = DaemonContainer()
    container.config.from_dict(
        {**CONFIG, "sysfs_root": str(server_tree), "state_dir": str(tmp_path / "state")}
    )
    container.adapters.host_control.override(providers.Object(None))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    combined = container.adapters.topology_hints()
    assert isinstance(combined, CombinedHints)  # sysfs, then the kubelet's pod resources
    hints, pod_resources = combined.sources
    assert isinstance(hints, SysfsTopologyHints)
    assert hints.root == os.path.realpath(server_tree) and not hints.resolve_host_paths
    assert isinstance(pod_resources, PodResourceHints) and not pod_resources.enabled()
    timers = container.adapters.timers()
    assert isinstance(timers, ThreadTimers)
    policy = create(container)
    (hint,) = policy.seen["app"].values()
    assert (hint.provider, hint.nodes) == (GPU, CPUSet.of(2))
    deadline = threading.Event()
    for _ in range(100):  # the thread timer fires 50 ms later, on its own thread
        if policy.events:
            break
        deadline.wait(0.05)
    assert [e.data for e in policy.events] == ["app"]
    assert policy.event_threads == ["nrirp-timer"]
    timers.close()


def test_embedded_defaults_to_host_sysfs_and_thread_timers() -> None:
    container = EmbeddedContainer()
    container.config.from_dict(CONFIG)
    hints = container.adapters.topology_hints()
    assert isinstance(hints, SysfsTopologyHints) and hints.root == os.path.realpath("/sys")
    assert isinstance(container.adapters.timers(), ThreadTimers)


def test_embedded_hint_source_and_timers_override() -> None:
    container = EmbeddedContainer()
    container.config.from_dict(CONFIG)
    container.adapters.hardware.override(providers.Object(_fake_hardware("server-4s-144")))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    hint = TopologyHint("/sys/devices/pci0000:00/0000:00:02.0", cpus=CPUSet.parse("0-3"))
    timers = ManualTimers()
    container.adapters.topology_hints.override(
        providers.Object(FakeTopologyHints({"/dev/dri/card0": hint}))
    )
    container.adapters.timers.override(providers.Object(timers))
    policy = create(container)
    assert list(policy.seen["app"]) == [hint.provider]
    assert policy.events == []
    timers.advance(0.05)
    assert [e.data for e in policy.events] == ["app"]


def test_no_hint_source_means_no_hints() -> None:
    container = EmbeddedContainer()
    container.config.from_dict(CONFIG)
    container.adapters.hardware.override(providers.Object(_fake_hardware("box-16")))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    container.adapters.topology_hints.override(providers.Object(None))
    container.adapters.timers.override(providers.Object(ManualTimers()))
    assert create(container).seen == {"app": {}}


# ---------------------------------------------------------------------- simulator
def simulator(**config: object) -> SimulatorContainer:
    container = SimulatorContainer()
    container.config.from_dict({**CONFIG, "machine": "server-4s-144", **config})
    return container


def test_simulator_hints_come_from_the_machine_spec_or_its_tree(server_tree: Path) -> None:
    from_spec = simulator().adapters.topology_hints()
    assert isinstance(from_spec, FakeTopologyHints)
    assert from_spec.table["/dev/dri/card0"].provider == GPU
    from_tree = simulator(machine=None, sysfs_root=str(server_tree)).adapters.topology_hints()
    assert isinstance(from_tree, SysfsTopologyHints) and not from_tree.resolve_host_paths
    without_devices = simulator(machine="box-16").adapters.topology_hints()
    assert isinstance(without_devices, FakeTopologyHints) and without_devices.table == {}


def test_simulated_runtime_passes_devices_and_mounts_to_the_policy() -> None:
    container = simulator()
    container.adapters.timers.override(providers.Object(ManualTimers()))
    spec = PodSpec(
        "web",
        containers=[
            ContainerSpec("gpu", devices=[DeviceSpec("/dev/dri/card0", "c", 226, 0)]),
            ContainerSpec("disk", mounts=[MountSpec("/data", NVME, ("rbind", "ro"))]),
            ContainerSpec(
                "none",
                annotations={},
                devices=[DeviceSpec("/dev/dri/card0", "c", 226, 0)],
            ),
        ],
        annotations={"topologyhints.resource-policy.nri.io/container.none": "false"},
    )

    async def main() -> None:
        container.core.resource_manager().start()
        async with container.simulation() as sim:
            await sim.runtime.run_pod(spec)

    asyncio.run(asyncio.wait_for(main(), 20))
    policy = container.core.policy()
    assert isinstance(policy, HintProbePolicy)
    assert {name: sorted(found) for name, found in policy.seen.items()} == {
        "gpu": [GPU],
        "disk": [NVME],
        "none": [],
    }
    assert policy.seen["gpu"][GPU].path == "/dev/dri/card0"
    assert policy.seen["disk"][NVME].path == NVME


def _fake_hardware(name: str) -> Any:
    from nrirp.adapters.fakehw import FakeHardwareDiscovery

    return FakeHardwareDiscovery(load_machine(name))


# ---------------------------------------------------------------------- closing timers
def test_engine_takes_hints_and_timers_and_close_cancels_timers() -> None:
    from nrirp.app.embed import Engine

    hint = TopologyHint("/sys/devices/pci0000:00/0000:00:02.0", nodes=CPUSet.of(1))
    timers = ThreadTimers()
    engine = Engine.build(
        "hint-probe",
        policy_modules=[THIS_MODULE],
        runtime_updates=RecordingRuntimeUpdates(),
        hardware=_fake_hardware("box-16"),
        topology_hints=FakeTopologyHints({"/dev/dri/card0": hint}),
        timers=timers,
    )
    engine.start()
    engine.run_pod_sandbox(POD)
    engine.create_container(POD, GPU_CTR)
    policy = engine.policy
    assert isinstance(policy, HintProbePolicy)
    assert list(policy.seen["app"]) == [hint.provider]
    assert timers.pending == 1  # the probe's event, 50 ms away
    engine.close()
    assert timers.pending == 0
    threading.Event().wait(0.2)
    assert policy.events == []


def test_daemon_final_flush_cancels_timers(tmp_path: Path, server_tree: Path) -> None:
    import argparse

    from nrirp.app.commands.run import Daemon

    container = DaemonContainer()
    container.config.from_dict(
        {**CONFIG, "sysfs_root": str(server_tree), "state_dir": str(tmp_path / "state")}
    )
    timers = ThreadTimers()
    container.adapters.timers.override(providers.Object(timers))
    fired: list[str] = []
    daemon = Daemon(container, argparse.Namespace())
    # set after the daemon is built: building it can take longer than 0.2 s on a busy machine
    timers.call_later(0.2, lambda: fired.append("late"))
    assert daemon._flush(0) == 0
    assert timers.pending == 0
    threading.Event().wait(0.4)
    assert fired == []
