"""How the active configuration is written into and read back from the snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from nrirp.domain.config import (
    PolicyConfig,
    PolicySpecs,
    SpecRegistration,
    load_policy_config,
    unstructure_policy_config,
)
from nrirp.domain.config.derived import PerConfig
from nrirp.domain.config.registry import builtin_specs
from nrirp.domain.policy import Policy


class ConfigCodec(Protocol):
    """Converts configurations to JSON-compatible documents and back."""

    def dump(self, config: PolicyConfig) -> Mapping[str, Any]: ...

    def load(self, policy: str, document: Mapping[str, Any]) -> PolicyConfig: ...


class DefaultConfigCodec:
    """The config package's own document form (the reference's key names), loaded with the
    spec classes of ``specs`` (the composition's policy registry; default: the built-ins)."""

    def __init__(self, specs: PolicySpecs | None = None) -> None:
        self._specs = specs
        self._dump = PerConfig(unstructure_policy_config)

    @classmethod
    def for_policy(cls, policy: Policy) -> DefaultConfigCodec:
        """The codec of a resource manager given none: ``policy``'s configurations load with
        its own ``config_type`` (it may be in no registry), other policies' with the
        built-ins'."""
        return cls(_PolicyFirst(policy))

    def dump(self, config: PolicyConfig) -> Mapping[str, Any]:
        """The document form of ``config``, made once per configuration (a dump made ahead,
        off the pipeline, is the one the reconfigure saves). Callers must not modify it."""
        return self._dump(config)

    def load(self, policy: str, document: Mapping[str, Any]) -> PolicyConfig:
        return load_policy_config(policy, document, self._specs)


class _PolicyFirst:
    """The spec registrations of the built-in policies, with ``policy``'s own in its name's
    place (the registration a policy registry would make of it, without a kind: snapshots
    hold bare specs)."""

    def __init__(self, policy: Policy) -> None:
        self._policy = policy
        self._name = policy.name

    def spec_registration(self, policy: str) -> SpecRegistration | None:
        if policy == self._name:
            # checked when first needed: a spec class no registry would take fails the load
            return SpecRegistration.checked(self._name, None, self._policy.config_type)
        return builtin_specs().spec_registration(policy)

    def names(self) -> list[str]:
        return sorted({self._name, *builtin_specs().names()})
