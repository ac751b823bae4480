from __future__ import annotations

import json
from typing import Any, ClassVar

import attrs
import pytest

from nrirp.adapters.documents import load_policy_config
from nrirp.adapters.memory import (
    InMemoryStateStore,
    RecordingDecisionLog,
    RecordingRuntimeUpdates,
)
from nrirp.domain.config import PolicyConfig, TemplatePolicySpec
from nrirp.domain.model import ContainerState, LinuxResources
from nrirp.domain.pipeline import DefaultConfigCodec, OperationFailedError, ResourceManager
from nrirp.domain.policies import NonePolicy, TemplatePolicy, builtin_registry
from nrirp.domain.policy import Policy, PolicyEvent, PolicyRegistry, UnknownPolicyError

from .support import make_container, make_pod, small_machine

TEMPLATE_CR = """
apiVersion: config.nri/v1alpha1
kind: TemplatePolicy
metadata: {name: default, namespace: kube-system}
spec:
  reservedResources: {cpu: 750m}
  availableResources: {cpu: "cpuset:0-5"}
  log: {debug: [resource-manager]}
"""


def template_config() -> PolicyConfig:
    return load_policy_config("template", TEMPLATE_CR)


def test_registry_has_builtins_and_rejects_unknown() -> None:
    registry = builtin_registry()
    assert registry.names() == ["balloons", "none", "template", "topology-aware"]
    assert isinstance(registry.create("template"), TemplatePolicy)
    assert registry.create("none") is not registry.create("none")  # fresh instances
    assert "A no-op policy" in registry.describe()["template"]
    with pytest.raises(
        UnknownPolicyError,
        match="unknown policy 'balloon' \\(known: balloons, none, template, topology-aware\\)",
    ):
        registry.create("balloon")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(NonePolicy)


def test_builtins_satisfy_the_port() -> None:
    policies: list[Policy] = [TemplatePolicy(), NonePolicy()]
    assert [p.name for p in policies] == ["template", "none"]
    assert TemplatePolicy.config_type is TemplatePolicySpec


@pytest.mark.parametrize("policy_cls", [TemplatePolicy, NonePolicy])
def test_builtins_change_nothing_through_a_whole_lifecycle(policy_cls: type) -> None:
    updates = RecordingRuntimeUpdates()
    store = InMemoryStateStore()
    manager = ResourceManager(
        policy=policy_cls(), machine=small_machine(), store=store, updates=updates
    )
    config = template_config() if policy_cls is TemplatePolicy else load_policy_config("none", "")
    manager.start(config)
    pod = make_pod()
    ctr = make_container(pod, "a")
    manager.run_pod(pod)
    result = manager.create_container(pod, ctr)
    assert result.adjustment.is_empty() and result.updates == ()
    manager.post_create(pod, ctr)
    manager.post_start(pod, ctr)
    assert manager.update_container(pod, ctr, LinuxResources(cpu_shares=2048)) == []
    manager.inject_event(PolicyEvent("anything"))
    assert manager.stop_container(pod, ctr) == []
    assert (
        manager.synchronize([pod], [make_container(pod, "b", state=ContainerState.RUNNING)]) == []
    )
    assert updates.batches == []
    assert manager.topology_zones() == () and manager.policy_metrics() == ()
    assert manager.describe()["policy"] == policy_cls.name
    assert json.loads(store.raw or "{}")["policy"] == policy_cls.name


def test_template_rejects_config_of_another_policy() -> None:
    manager = ResourceManager(policy=TemplatePolicy(), machine=small_machine())
    with pytest.raises(OperationFailedError, match="cannot use a 'none' configuration"):
        manager.start(load_policy_config("none", ""))
    assert not manager.started


def test_template_reconfigure_keeps_old_config_on_mismatch() -> None:
    manager = ResourceManager(policy=TemplatePolicy(), machine=small_machine())
    first = template_config()
    manager.start(first)
    second = load_policy_config("template", {"reservedResources": {"cpu": "1"}})
    assert manager.reconfigure(second).applied
    assert manager.config == second
    outcome = manager.reconfigure(load_policy_config("none", ""))
    assert not outcome.applied and "switching policies needs a restart" in outcome.reason
    assert manager.config == second


def test_real_config_survives_a_restart() -> None:
    store = InMemoryStateStore()
    first = ResourceManager(policy=TemplatePolicy(), machine=small_machine(), store=store)
    first.start(template_config())
    pod = make_pod()
    first.run_pod(pod)
    saved = json.loads(store.raw or "{}")
    assert saved["config"]["reservedResources"] == {"cpu": "750m"}
    second = ResourceManager(policy=TemplatePolicy(), machine=small_machine(), store=store)
    second.start()
    assert second.config == template_config()
    assert [p.name for p in second.pods()] == ["pod0"]


@attrs.frozen
class _OwnSpec:
    greeting: str = "hello"
    limit: int = 1


class _OwnPolicy(TemplatePolicy):
    name: ClassVar[str] = "own"
    description: ClassVar[str] = "a policy the built-in registry does not know"
    config_type: ClassVar[type[Any] | None] = _OwnSpec


def test_a_policy_outside_the_registry_gets_its_saved_config_back_without_a_codec() -> None:
    registry = PolicyRegistry()
    registry.register(_OwnPolicy)
    config = load_policy_config("own", {"greeting": "hi", "limit": 3}, registry)
    store = InMemoryStateStore()
    first = ResourceManager(policy=_OwnPolicy(), machine=small_machine(), store=store)
    first.start(config)
    first.run_pod(make_pod())
    saved = json.loads(store.raw or "{}")["config"]
    assert (saved["greeting"], saved["limit"]) == ("hi", 3)
    log = RecordingDecisionLog()
    second = ResourceManager(
        policy=_OwnPolicy(), machine=small_machine(), store=store, decisions=log
    )
    second.start()
    assert [n.message for n in log.notices] == []
    assert second.config == config


def test_default_codec_round_trip() -> None:
    codec = DefaultConfigCodec()
    config = template_config()
    assert codec.load("template", codec.dump(config)) == config


def test_template_hooks_do_not_touch_the_cache() -> None:
    manager = ResourceManager(policy=TemplatePolicy(), machine=small_machine())
    manager.start(None)
    pod = make_pod()
    manager.run_pod(pod)
    manager.create_container(pod, make_container(pod, "a"))
    ctr = manager.container("id-pod0-a")
    assert ctr is not None and ctr.cpus is None and ctr.pending.controllers == frozenset()
