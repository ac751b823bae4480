"""The dependency-injector compositions: what they wire, and that every adapter overrides."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest
from dependency_injector import providers

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.fakehw import (
    FakeHardwareDiscovery,
    expected_machine,
    load_machine,
    resolve,
    write_sysfs,
)
from nrirp.adapters.hostcontrol.cpufreq import SysfsCPUPower
from nrirp.adapters.hostcontrol.host import HostAdapter
from nrirp.adapters.hostcontrol.irq import ProcInterruptControl
from nrirp.adapters.hostcontrol.resctrl import ResctrlFs
from nrirp.adapters.memory import (
    FakeClock,
    InMemoryHostControl,
    InMemoryStateStore,
    RecordingDecisionLog,
    RecordingMetrics,
    RecordingRuntimeUpdates,
)
from nrirp.adapters.nri.resmgr.updates import NriRuntimeUpdates
from nrirp.adapters.storage import FileStateStore
from nrirp.adapters.system import ConfigFileError
from nrirp.app.composition import POLICY_MODULES_ENV, PolicyModuleError, make_policy_registry
from nrirp.app.daemon import DaemonContainer
from nrirp.app.embed import EmbeddedContainer
from nrirp.domain.config import ConfigError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Container,
    ContainerState,
    HostChange,
    LinuxResources,
    Pod,
    Update,
)
from nrirp.domain.pipeline import ResourceManager
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyEvent, PolicyRegistry, UnknownPolicyError

THIS_MODULE = __name__


class FirstCpuPolicy(TemplatePolicy):
    """Test policy (loaded via ``policy_modules``): CPU 1 for everyone, plus a host setting."""

    name: ClassVar[str] = "first-cpu"
    description: ClassVar[str] = "test policy: every container on CPU 1"

    def allocate(self, container: Container) -> None:
        assert self._ctx is not None
        self._ctx.cache.set_cpus(container.id, CPUSet.of(1))
        self._ctx.cache.set_host_change(container.id, HostChange(cgroup={"memory.high": "max"}))
        self._ctx.record_decision(container, "test policy pins to cpu 1")

    def handle_event(self, event: PolicyEvent) -> None:
        assert self._ctx is not None
        if event.kind == "move":
            self._ctx.cache.set_cpus(str(event.data), CPUSet.of(2))


def register_policies(registry: PolicyRegistry) -> None:
    registry.register(FirstCpuPolicy)


POD = Pod(id="p1", name="web", namespace="prod", uid="u1", cgroup_parent="/kubepods/podu1")
CTR = Container(id="c1", pod_id="p1", name="app", resources=LinuxResources(cpu_shares=1024))


def box16() -> FakeHardwareDiscovery:
    return FakeHardwareDiscovery(load_machine("box-16"))


def embedded(**config: object) -> EmbeddedContainer:
    container = EmbeddedContainer()
    container.config.from_dict({"policy": "template", **config})
    container.adapters.hardware.override(providers.Object(box16()))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    return container


def run_lifecycle(manager: ResourceManager) -> None:
    manager.start()
    manager.run_pod(POD)
    manager.create_container(POD, CTR)
    manager.post_create(POD, CTR)
    manager.start_container(POD, CTR)
    running = Container(
        id="c1",
        pod_id="p1",
        name="app",
        state=ContainerState.RUNNING,
        pid=4242,
        cgroups_path="/kubepods/podu1/c1",
    )
    manager.post_start(POD, running)


# ---------------------------------------------------------------- embedded
def test_embedded_defaults_build_a_working_engine() -> None:
    container = embedded()
    manager = container.core.resource_manager()
    assert manager is container.core.resource_manager()  # one engine per container
    assert manager.machine == expected_machine(load_machine("box-16"))
    assert isinstance(manager.policy, TemplatePolicy)
    store = container.adapters.state_store()
    assert isinstance(store, InMemoryStateStore)
    run_lifecycle(manager)
    assert store.saves > 0 and "c1" in (store.raw or "")
    assert container.core.policy_config() is None


def test_embedded_needs_runtime_updates_from_the_host() -> None:
    container = EmbeddedContainer()
    container.config.from_dict({"policy": "template"})
    container.adapters.hardware.override(providers.Object(box16()))
    with pytest.raises(Exception, match="runtime_updates"):
        container.core.resource_manager()


def test_embedded_every_adapter_overrides() -> None:
    container = embedded(policy="first-cpu", policy_modules=[THIS_MODULE])
    updates = RecordingRuntimeUpdates()
    store = InMemoryStateStore()
    host = InMemoryHostControl()
    clock = FakeClock(now=1234.0)
    decisions = RecordingDecisionLog()
    metrics = RecordingMetrics()
    container.adapters.runtime_updates.override(providers.Object(updates))
    container.adapters.state_store.override(providers.Object(store))
    container.adapters.host_control.override(providers.Object(host))
    container.adapters.clock.override(providers.Object(clock))
    container.adapters.decision_log.override(providers.Object(decisions))
    container.adapters.metrics.override(providers.Object(metrics))
    manager = container.core.resource_manager()
    run_lifecycle(manager)
    ctr = manager.cache.require_container("c1")
    assert ctr.cpus == CPUSet.of(1)
    assert ctr.created_at == 1234.0  # the fake clock
    assert store.saves > 0  # the overriding store
    assert [c.change for c in host.calls if c.action == "apply"] == [
        HostChange(cgroup={"memory.high": "max"})
    ]
    assert [d.reason for d in decisions.decisions] == ["test policy pins to cpu 1"]
    assert {op for op, _, ok in metrics.operations} >= {"create-container", "post-start"}
    manager.inject_event(PolicyEvent("move", "test", "c1"))
    assert updates.updates == [Update("c1", LinuxResources(cpus=CPUSet.of(2)))]
    manager.inject_event_failed = None
    manager.reconfigure  # noqa: B018
    updates.clear()


def test_machine_and_policy_override() -> None:
    container = embedded()
    machine = expected_machine(load_machine("hybrid-desktop"))
    policy = FirstCpuPolicy()
    container.core.machine.override(providers.Object(machine))
    container.core.policy.override(providers.Object(policy))
    manager = container.core.resource_manager()
    assert manager.machine is machine and manager.policy is policy


def test_policy_config_file_is_loaded_and_errors_name_the_problem(tmp_path: Path) -> None:
    good = tmp_path / "template.yaml"
    good.write_text("availableResources:\n  cpu: cpuset:0-3\n")
    config = embedded(config_file=str(good)).core.policy_config()
    assert config is not None and config.policy == "template"
    bad = tmp_path / "bad.yaml"
    bad.write_text("availableResources:\n  cpu: 12\nnoSuchKey: 1\n")
    with pytest.raises(ConfigError, match="noSuchKey"):
        embedded(config_file=str(bad)).core.policy_config()
    with pytest.raises(ConfigFileError, match="does not exist"):
        embedded(config_file=str(tmp_path / "missing.yaml")).core.policy_config()


# ---------------------------------------------------------------- policy registry
def test_policy_modules_from_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(POLICY_MODULES_ENV, f" {THIS_MODULE} , ")
    assert "first-cpu" in make_policy_registry()
    assert make_policy_registry([]).names() == ["balloons", "none", "template", "topology-aware"]


def test_policy_modules_by_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "policies" / "exclusive_cpus.py"
    monkeypatch.setenv(POLICY_MODULES_ENV, str(example))
    assert "exclusive-cpus" in make_policy_registry()  # the daemon's variable takes files too
    assert "exclusive-cpus" in make_policy_registry([str(example)])  # imported once
    with pytest.raises(PolicyModuleError, match="no such file"):
        make_policy_registry([str(tmp_path / "missing.py")])
    empty = tmp_path / "empty.py"
    empty.write_text("")
    with pytest.raises(PolicyModuleError, match=f"'{empty}' has no register_policies"):
        make_policy_registry([str(empty)])


def test_bad_policy_modules_are_named() -> None:
    with pytest.raises(PolicyModuleError, match=r"cannot import policy module 'no\.such\.module'"):
        make_policy_registry(["no.such.module"])
    with pytest.raises(PolicyModuleError, match="'json' has no register_policies"):
        make_policy_registry(["json"])


def test_unknown_policy_lists_known() -> None:
    with pytest.raises(
        UnknownPolicyError,
        match=r"unknown policy 'nope' \(known: balloons, none, template, topology-aware\)",
    ):
        embedded(policy="nope", policy_modules=[]).core.policy()


# ---------------------------------------------------------------- daemon
@pytest.fixture
def sysfs_tree(tmp_path: Path) -> Path:
    root = tmp_path / "sys"
    spec = load_machine("box-16")
    write_sysfs(resolve(spec, "box-16"), root)
    return root


def cgroup_v2_tree(root: Path) -> Path:
    root.mkdir()
    (root / "cgroup.controllers").write_text("cpu memory\n")
    ctr = root / "kubepods" / "podu1" / "c1"
    ctr.mkdir(parents=True)
    (ctr / "memory.high").write_text("")
    return root


def daemon(tmp_path: Path, sysfs: Path, **config: object) -> DaemonContainer:
    container = DaemonContainer()
    container.config.from_dict(
        {
            "policy": "template",
            "state_dir": str(tmp_path / "state"),
            "sysfs_root": str(sysfs),
            "cgroup_root": str(tmp_path / "cgroup"),
            **config,
        }
    )
    return container


def test_daemon_host_controls_can_be_turned_off(tmp_path: Path, sysfs_tree: Path) -> None:
    container = daemon(tmp_path, sysfs_tree, policy="template", host_controls=["sched"])
    assert isinstance(container.adapters.host_control(), HostAdapter)
    for port in ("cpu_power", "interrupts", "resctrl", "resource_export"):
        assert getattr(container.adapters, port)() is None
    none = daemon(tmp_path, sysfs_tree, policy="template", host_controls=[])
    assert isinstance(none.adapters.host_control(), CgroupfsHostControl)


def test_daemon_wires_real_adapters(tmp_path: Path, sysfs_tree: Path) -> None:
    cgroup_v2_tree(tmp_path / "cgroup")
    container = daemon(tmp_path, sysfs_tree, policy="first-cpu", policy_modules=[THIS_MODULE])
    manager = container.core.resource_manager()
    assert len(manager.machine.online) == 16  # read from the sysfs tree
    store = container.adapters.state_store()
    assert isinstance(store, FileStateStore) and store.path == str(tmp_path / "state" / "cache")
    host = container.adapters.host_control()
    assert isinstance(host, HostAdapter) and isinstance(host.cgroups, CgroupfsHostControl)
    assert isinstance(container.adapters.cpu_power(), SysfsCPUPower)
    assert isinstance(container.adapters.interrupts(), ProcInterruptControl)
    assert isinstance(container.adapters.resctrl(), ResctrlFs)
    assert isinstance(container.adapters.runtime_updates(), NriRuntimeUpdates)
    run_lifecycle(manager)
    store.close()
    assert '"c1"' in (tmp_path / "state" / "cache").read_text()
    high = tmp_path / "cgroup" / "kubepods" / "podu1" / "c1" / "memory.high"
    assert high.read_text() == "max"  # the policy's host change reached cgroupfs


def test_daemon_every_adapter_overrides(tmp_path: Path, sysfs_tree: Path) -> None:
    container = daemon(tmp_path, sysfs_tree)
    overrides = {
        "hardware": box16(),
        "state_store": InMemoryStateStore(),
        "host_control": InMemoryHostControl(),
        "runtime_updates": RecordingRuntimeUpdates(),
        "clock": FakeClock(),
        "decision_log": RecordingDecisionLog(),
        "metrics": RecordingMetrics(),
    }
    for name, value in overrides.items():
        getattr(container.adapters, name).override(providers.Object(value))
    manager = container.core.resource_manager()
    assert manager.machine == expected_machine(load_machine("box-16"))
    run_lifecycle(manager)
    assert overrides["state_store"].saves > 0  # type: ignore[attr-defined]
    assert overrides["metrics"].operations  # type: ignore[attr-defined]
    assert not (tmp_path / "state").exists()  # the file store was never built


def test_daemon_nri_side_follows_config_and_overrides(tmp_path: Path, sysfs_tree: Path) -> None:
    container = daemon(
        tmp_path,
        sysfs_tree,
        nri_socket=str(tmp_path / "nri.sock"),
        plugin_name="rm",
        plugin_index="07",
    )
    manager = ResourceManager(
        policy=TemplatePolicy(), machine=expected_machine(load_machine("box-16"))
    )
    updates = NriRuntimeUpdates()
    container.core.resource_manager.override(providers.Object(manager))
    container.adapters.runtime_updates.override(providers.Object(updates))
    stub = container.stub()
    assert (stub.full_name, stub.socket_path) == ("07-rm", str(tmp_path / "nri.sock"))
    assert stub.reconnects  # external plugin: redials
    assert stub.plugin is container.plugin()
    assert container.plugin().manager is manager and container.plugin().updates is updates
    assert container.service().stub is stub and container.service().updates is updates
