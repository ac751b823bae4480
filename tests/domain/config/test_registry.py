"""Pluggable policies register once, in the registry instance config loading is given, and
get the same loading and errors as the built-in ones."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, ClassVar

import attrs
import pytest

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import (
    ConfigError,
    Quantity,
    unstructure_policy_config,
)
from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.validation import check_range
from nrirp.domain.policies import TemplatePolicy, builtin_registry
from nrirp.domain.policy import PolicyRegistry


@attrs.frozen(kw_only=True)
class MemoryTieringSpec:
    """A made-up policy spec, as a plugin would define it."""

    demote_after_seconds: int = attrs.field(default=60, metadata=ref("demoteAfterSeconds"))
    max_pmem: Quantity | None = attrs.field(default=None, metadata=ref("maxPMEM"))
    enable_numa_balancing: bool = False  # no explicit key: lowerCamelCase of the name

    def config_problems(self) -> Iterator[Issue]:
        yield from check_range(self, "demote_after_seconds", 1)


class MemoryTieringPolicy(TemplatePolicy):
    name: ClassVar[str] = "memory-tiering"
    description: ClassVar[str] = "test policy with a spec of its own"
    config_type: ClassVar[type[Any] | None] = MemoryTieringSpec


def policy_with(spec_class: type | None, name: str = "bad") -> type[TemplatePolicy]:
    return type(
        "Made", (TemplatePolicy,), {"name": name, "description": "", "config_type": spec_class}
    )


@pytest.fixture
def tiering() -> PolicyRegistry:
    registry = builtin_registry()
    registry.register(MemoryTieringPolicy, kind="MemoryTieringPolicy")
    return registry


def test_builtin_policies_are_registered() -> None:
    registry = builtin_registry()
    assert {"topology-aware", "balloons", "template", "none"} <= set(registry.names())
    registration = registry.spec_registration("balloons")
    assert registration is not None and registration.kind == "BalloonsPolicy"


def test_registered_spec_loads_bare_and_as_custom_resource(tiering: PolicyRegistry) -> None:
    bare = load_policy_config(
        "memory-tiering",
        "demoteAfterSeconds: 30\nmaxPMEM: 64Gi\nenableNumaBalancing: true\n",
        tiering,
    )
    assert bare.spec == MemoryTieringSpec(
        demote_after_seconds=30, max_pmem=Quantity.parse("64Gi"), enable_numa_balancing=True
    )
    document = unstructure_policy_config(bare, as_document=True, specs=tiering)
    assert document["kind"] == "MemoryTieringPolicy"
    assert document["spec"]["enableNumaBalancing"] is True
    assert load_policy_config("memory-tiering", document, tiering) == bare


def test_registered_spec_gets_the_same_error_reporting(tiering: PolicyRegistry) -> None:
    with pytest.raises(ConfigError) as info:
        load_policy_config(
            "memory-tiering", "demoteAfterSeconds: 0\nmaxPMEM: lots\nfoo: 1\n", tiering
        )
    assert [(p.path, p.message) for p in info.value.problems] == [
        (
            "maxPMEM",
            "invalid value 'lots': expected a quantity such as '750m', '2', '1.5' or '2Gi'",
        ),
        ("foo", "unknown field"),
    ]
    with pytest.raises(ConfigError) as info:
        load_policy_config("memory-tiering", "demoteAfterSeconds: 0\n", tiering)
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("demoteAfterSeconds", "invalid value 0: must be at least 1"),
    ]


def test_a_registry_is_not_global(tiering: PolicyRegistry) -> None:
    # another registry (and the loading functions' default, the built-ins) do not know it
    with pytest.raises(ConfigError, match="unknown policy 'memory-tiering'"):
        load_policy_config("memory-tiering", "{}")
    with pytest.raises(ConfigError, match="unknown policy 'memory-tiering'"):
        load_policy_config("memory-tiering", "{}", builtin_registry())


def test_conflicting_registrations_are_refused(tiering: PolicyRegistry) -> None:
    with pytest.raises(ValueError, match="already registered"):
        tiering.register(MemoryTieringPolicy, kind="MemoryTieringPolicy")
    with pytest.raises(ValueError, match="already registered"):
        tiering.register(MemoryTieringPolicy, kind="OtherKind")
    with pytest.raises(ValueError, match="kind 'BalloonsPolicy' is already registered"):
        tiering.register(policy_with(MemoryTieringSpec, "other"), kind="BalloonsPolicy")


def test_invalid_spec_classes_are_refused() -> None:
    @attrs.frozen
    class UsesCommonKey:
        log: bool = False

    registry = builtin_registry()
    with pytest.raises(ValueError, match="keys reserved for the common blocks: log"):
        registry.register(policy_with(UsesCommonKey), kind="BadPolicy")
    with pytest.raises(TypeError, match="not an attrs class"):
        registry.register(policy_with(dict), kind="BadPolicy")
    with pytest.raises(ValueError, match="a policy name is required"):
        registry.register(policy_with(MemoryTieringSpec, ""), kind="BadPolicy")
    assert "bad" not in registry.names()


def test_a_policy_without_a_spec_class_takes_only_the_common_blocks() -> None:
    registry = PolicyRegistry()
    registry.register(policy_with(None, "plain"))
    config = load_policy_config("plain", "log: {debug: ['*']}\n", registry)
    assert config.log.debug == ("*",)
    with pytest.raises(ConfigError, match="cpus: unknown field"):
        load_policy_config("plain", "cpus: 1\n", registry)
