"""An engine on a fake machine: by catalogue name, and with nothing of the host leaking in
(neither the host's ``/sys`` topology hints nor the ``NRIRP_POLICY_MODULES`` policy modules),
unless asked for."""

from __future__ import annotations

from pathlib import Path

import pytest

from nrirp.adapters.fakehw import (
    FakeHardwareDiscovery,
    FakeTopologyHints,
    MachineSpecError,
    UnknownMachineError,
    expected_machine,
    load_machine,
    write_sysfs,
)
from nrirp.adapters.fakehw.layout import resolve
from nrirp.adapters.memory import RecordingRuntimeUpdates
from nrirp.adapters.sysfs import SysfsDiscovery, SysfsTopologyHints
from nrirp.app.composition import POLICY_MODULES_ENV, PolicyModuleError
from nrirp.app.embed import Engine, policy_modules_from_env
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Device, Mount, Pod
from nrirp.domain.topology import MemoryType
from tests.app.test_containers import THIS_MODULE as FIRST_CPU_MODULE

BOGUS = "nrirp_no_such_module_anywhere"
GPU = Device(path="/dev/dri/card0", type="c", major=226, minor=0)  # server-4s-144: node 2
POD = Pod(id="p1", name="web", namespace="prod", uid="u1", cgroup_parent="/kubepods/podu1")


def build(**kwargs: object) -> Engine:
    return Engine.build("template", runtime_updates=RecordingRuntimeUpdates(), **kwargs)  # type: ignore[arg-type]


def hint_nodes(engine: Engine, container: Container) -> dict[str, CPUSet]:
    source = engine.container.adapters.topology_hints()
    assert source is not None
    return {provider: hint.nodes for provider, hint in source.hints(container).items()}


@pytest.mark.parametrize("name", ["box-16", "sparse-8s-4096", "hbm-cxl"])
def test_a_catalogue_machine_by_name(name: str) -> None:
    engine = build(machine=name)
    assert engine.machine == expected_machine(load_machine(name))


def test_a_machine_spec_file_by_path(tmp_path: Path) -> None:
    spec = tmp_path / "two.yaml"
    spec.write_text("name: two\ncompact: {packages: 1, cores_per_node: 2, memory_per_node: 1Gi}\n")
    assert str(build(machine=str(spec)).machine.online) == "0-1"


def test_memory_types_apply_to_a_named_machine() -> None:
    engine = build(machine="box-16", memory_types={3: MemoryType.PMEM})
    assert engine.machine.memory_type(3) is MemoryType.PMEM
    assert engine.machine.memory_type(2) is MemoryType.DRAM


def test_unknown_machines_fail_when_building() -> None:
    with pytest.raises(UnknownMachineError, match="no catalogue machine named 'box-17'"):
        build(machine="box-17")
    with pytest.raises(MachineSpecError):
        build(machine=__file__.replace(".py", ".yaml"))  # no such spec file


def test_a_fake_machine_engine_loads_no_modules_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(POLICY_MODULES_ENV, BOGUS)
    for engine in (
        build(machine="box-16"),
        build(machine=expected_machine(load_machine("box-16"))),
        build(hardware=FakeHardwareDiscovery(load_machine("box-16"))),
    ):
        engine.start()  # the bogus module was never imported
        assert "first-cpu" not in engine.container.core.policy_registry().names()
    # asked for: the environment's modules load (and a bogus one fails, naming itself)
    with pytest.raises(PolicyModuleError, match=BOGUS):
        build(machine="box-16", policy_modules=policy_modules_from_env())
    monkeypatch.setenv(POLICY_MODULES_ENV, FIRST_CPU_MODULE)
    asked = Engine.build(
        "first-cpu",
        runtime_updates=RecordingRuntimeUpdates(),
        machine="box-16",
        policy_modules=policy_modules_from_env(),
    )
    assert asked.policy.name == "first-cpu"


def test_an_engine_on_the_host_still_reads_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    write_sysfs(resolve(load_machine("box-16"), "box-16"), str(tmp_path / "sys"))
    monkeypatch.setenv(POLICY_MODULES_ENV, BOGUS)
    with pytest.raises(PolicyModuleError, match=BOGUS):
        build(sysfs_root=str(tmp_path / "sys"))


def test_a_fake_machine_engine_takes_hints_from_its_machine_not_the_host() -> None:
    gpu_user = Container(id="c1", pod_id="p1", name="app", devices=(GPU,))
    host_mount = Container(
        id="c2",
        pod_id="p1",
        name="app2",
        mounts=(Mount(source="/sys/devices/system", destination="/x"),),
    )
    named = build(machine="server-4s-144")
    assert isinstance(named.container.adapters.topology_hints(), FakeTopologyHints)
    assert hint_nodes(named, gpu_user) == {"/sys/devices/pci0000:af/0000:af:00.0": CPUSet.of(2)}
    assert hint_nodes(named, host_mount) == {}
    discovered = build(hardware=FakeHardwareDiscovery(load_machine("server-4s-144")))
    assert hint_nodes(discovered, gpu_user) == hint_nodes(named, gpu_user)
    plain = build(machine=expected_machine(load_machine("server-4s-144")))
    assert hint_nodes(plain, gpu_user) == {}  # a bare Machine has no devices: no hints at all
    own = FakeTopologyHints()
    assert (
        build(machine="server-4s-144", topology_hints=own).container.adapters.topology_hints()
        is own
    )


def test_hints_follow_a_given_sysfs_tree(tmp_path: Path) -> None:
    root = str(tmp_path / "sys")
    write_sysfs(resolve(load_machine("server-4s-144"), "server-4s-144"), root)
    by_discovery = build(hardware=SysfsDiscovery(root)).container.adapters.topology_hints()
    assert isinstance(by_discovery, SysfsTopologyHints) and by_discovery.root == root
    # asked for with sysfs_root: that tree's hints, even on a named machine
    asked = build(machine="server-4s-144", sysfs_root=root).container.adapters.topology_hints()
    assert isinstance(asked, SysfsTopologyHints) and asked.root == root
