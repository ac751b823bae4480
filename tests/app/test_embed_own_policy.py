"""A host agent's own policy, with a config type of its own, passed to ``Engine.build``: nothing
else to register. Its configuration loads from YAML (unknown keys refused, with their path),
reloads, survives a restart, and stays the engine's own (no global registration)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import attrs
import pytest
from dependency_injector import providers

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.fakehw import expected_machine, load_machine
from nrirp.adapters.memory import InMemoryStateStore, RecordingRuntimeUpdates
from nrirp.app.embed import EmbeddedContainer, Engine
from nrirp.domain.config import ConfigError, PolicyConfig
from nrirp.domain.config.keys import ref
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, LinuxResources, Pod
from nrirp.domain.policies import TemplatePolicy
from nrirp.domain.policy import PolicyError, UnknownPolicyError

BOX16 = expected_machine(load_machine("box-16"))
POD = Pod(id="p1", name="web", namespace="prod", uid="u1", cgroup_parent="/kubepods/podu1")
CTR = Container(id="c1", pod_id="p1", name="app", resources=LinuxResources(cpu_shares=1024))


@attrs.frozen(kw_only=True)
class PinSpec:
    """The host's own config type: which CPUs every container gets."""

    cpus: str = "0"
    pin_memory: bool = attrs.field(default=False, metadata=ref("pinMemory"))


class PinEveryonePolicy(TemplatePolicy):
    """Puts every container on the configured CPUs."""

    name: ClassVar[str] = "pin-everyone"
    description: ClassVar[str] = "test policy: every container on the configured CPUs"
    config_type: ClassVar[type[Any] | None] = PinSpec

    def _check(self, config: PolicyConfig | None) -> None:
        if config is not None and not isinstance(config.spec, PinSpec):
            raise PolicyError(f"not a {self.name} configuration")

    def allocate(self, container: Container) -> None:
        assert self._ctx is not None
        spec = self._config.spec if self._config is not None else PinSpec()
        self._ctx.cache.set_cpus(container.id, CPUSet.parse(spec.cpus))


YAML = "cpus: 2-3\npinMemory: true\n"


def build(policy: Any, **kwargs: Any) -> Engine:
    return Engine.build(policy, runtime_updates=RecordingRuntimeUpdates(), machine=BOX16, **kwargs)


@pytest.mark.parametrize("given", ["class", "object"])
def test_own_policy_and_config_type_with_no_registration(given: str) -> None:
    policy = PinEveryonePolicy if given == "class" else PinEveryonePolicy()
    engine = build(policy, config=YAML)
    engine.start()
    assert isinstance(engine.policy, PinEveryonePolicy)
    assert engine.config == PolicyConfig(
        policy="pin-everyone", spec=PinSpec(cpus="2-3", pin_memory=True)
    )
    engine.run_pod_sandbox(POD)
    assert engine.create_container(POD, CTR).adjustment.resources.cpus == CPUSet.of(2, 3)


def test_unknown_keys_are_refused_with_their_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        build(PinEveryonePolicy, config="cpus: 1\npinMemroy: true\nlog: {debg: []}\n")
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("cpus", "invalid value 1: expected a string"),
        ("pinMemroy", "unknown field (did you mean pinMemory?)"),
        ("log.debg", "unknown field (did you mean debug?)"),
    ]
    typo = tmp_path / "pin.yaml"
    typo.write_text("cpu: 1\n")
    with pytest.raises(ConfigError, match=r"cpu: unknown field \(did you mean cpus\?\)"):
        build(PinEveryonePolicy, config_file=str(typo)).start()


def test_reconfigure_reads_the_own_type() -> None:
    engine = build(PinEveryonePolicy(), config=YAML)
    engine.start()
    outcome = engine.reconfigure("cpus: '5'\nbogus: 1\n")
    assert not outcome.applied and outcome.reason == "bogus: unknown field"
    assert engine.reconfigure("cpus: '5'\n").applied
    assert engine.config is not None and engine.config.spec == PinSpec(cpus="5")


def test_a_restart_restores_the_own_config() -> None:
    store = InMemoryStateStore()
    first = build(PinEveryonePolicy, config=YAML, state_store=store)
    first.start()
    first.run_pod_sandbox(POD)
    second = build(PinEveryonePolicy, state_store=store)
    assert second.start().restored
    assert second.config == first.config


def test_the_registration_is_the_engines_own() -> None:
    build(PinEveryonePolicy, config=YAML)
    with pytest.raises(UnknownPolicyError, match="unknown policy 'pin-everyone'"):
        build("pin-everyone")
    with pytest.raises(ConfigError, match="unknown policy 'pin-everyone'"):
        load_policy_config("pin-everyone", YAML)


def test_a_builtin_name_with_another_config_type_is_refused() -> None:
    class NotTheTemplate(PinEveryonePolicy):
        name: ClassVar[str] = "template"

    with pytest.raises(ValueError, match="'template' is already registered with config type"):
        build(NotTheTemplate)


def test_a_hand_composed_engine_registers_in_its_registry(tmp_path: Path) -> None:
    config_file = tmp_path / "pin.yaml"
    config_file.write_text(YAML)
    container = EmbeddedContainer()
    container.config.from_dict({"policy": "pin-everyone", "config_file": str(config_file)})
    container.core.machine.override(providers.Object(BOX16))
    container.adapters.runtime_updates.override(providers.Object(RecordingRuntimeUpdates()))
    container.core.policy_registry().register(PinEveryonePolicy)
    engine = Engine(container)
    engine.start()
    assert isinstance(engine.policy, PinEveryonePolicy)
    assert engine.config is not None and engine.config.spec == PinSpec(cpus="2-3", pin_memory=True)
