"""Pluggable policies register their spec class and get the same loading and errors."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import pytest

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import (
    ConfigError,
    Quantity,
    register_spec,
    registered_policies,
    spec_registration,
    unregister_spec,
    unstructure_policy_config,
)
from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.validation import check_range


@attrs.frozen(kw_only=True)
class MemoryTieringSpec:
    """A made-up policy spec, as a plugin would define it."""

    demote_after_seconds: int = attrs.field(default=60, metadata=ref("demoteAfterSeconds"))
    max_pmem: Quantity | None = attrs.field(default=None, metadata=ref("maxPMEM"))
    enable_numa_balancing: bool = False  # no explicit key: lowerCamelCase of the name

    def config_problems(self) -> Iterator[Issue]:
        yield from check_range(self, "demote_after_seconds", 1)


@pytest.fixture
def tiering() -> Iterator[None]:
    register_spec("memory-tiering", "MemoryTieringPolicy", MemoryTieringSpec)
    try:
        yield
    finally:
        unregister_spec("memory-tiering")


def test_builtin_policies_are_registered() -> None:
    assert {"topology-aware", "balloons", "template", "none"} <= set(registered_policies())
    registration = spec_registration("balloons")
    assert registration is not None and registration.kind == "BalloonsPolicy"


@pytest.mark.usefixtures("tiering")
def test_registered_spec_loads_bare_and_as_custom_resource() -> None:
    bare = load_policy_config(
        "memory-tiering", "demoteAfterSeconds: 30\nmaxPMEM: 64Gi\nenableNumaBalancing: true\n"
    )
    assert bare.spec == MemoryTieringSpec(
        demote_after_seconds=30, max_pmem=Quantity.parse("64Gi"), enable_numa_balancing=True
    )
    document = unstructure_policy_config(bare, as_document=True)
    assert document["kind"] == "MemoryTieringPolicy"
    assert document["spec"]["enableNumaBalancing"] is True
    assert load_policy_config("memory-tiering", document) == bare


@pytest.mark.usefixtures("tiering")
def test_registered_spec_gets_the_same_error_reporting() -> None:
    with pytest.raises(ConfigError) as info:
        load_policy_config("memory-tiering", "demoteAfterSeconds: 0\nmaxPMEM: lots\nfoo: 1\n")
    assert [(p.path, p.message) for p in info.value.problems] == [
        (
            "maxPMEM",
            "invalid value 'lots': expected a quantity such as '750m', '2', '1.5' or '2Gi'",
        ),
        ("foo", "unknown field"),
    ]
    with pytest.raises(ConfigError) as info:
        load_policy_config("memory-tiering", "demoteAfterSeconds: 0\n")
    assert [(p.path, p.message) for p in info.value.problems] == [
        ("demoteAfterSeconds", "invalid value 0: must be at least 1"),
    ]


@pytest.mark.usefixtures("tiering")
def test_conflicting_registrations_are_refused() -> None:
    register_spec("memory-tiering", "MemoryTieringPolicy", MemoryTieringSpec)  # same: harmless
    with pytest.raises(ValueError, match="already registered"):
        register_spec("memory-tiering", "OtherKind", MemoryTieringSpec)
    with pytest.raises(ValueError, match="kind 'BalloonsPolicy' is already registered"):
        register_spec("other", "BalloonsPolicy", MemoryTieringSpec)


def test_invalid_spec_classes_are_refused() -> None:
    @attrs.frozen
    class UsesCommonKey:
        log: bool = False

    with pytest.raises(ValueError, match="keys reserved for the common blocks: log"):
        register_spec("bad", "BadPolicy", UsesCommonKey)
    with pytest.raises(TypeError, match="not an attrs class"):
        register_spec("bad", "BadPolicy", dict)
    with pytest.raises(ValueError, match="a policy name is required"):
        register_spec("", "BadPolicy", MemoryTieringSpec)
    assert "bad" not in registered_policies()
