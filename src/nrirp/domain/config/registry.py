"""Which spec class configures which policy; policies are pluggable, so specs register here."""

from __future__ import annotations

import attrs

from nrirp.domain.config.balloons import BalloonsPolicySpec
from nrirp.domain.config.keys import key_map
from nrirp.domain.config.template import NonePolicySpec, TemplatePolicySpec
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec

COMMON_BLOCK_KEYS = ("control", "log", "instrumentation", "agent")


@attrs.frozen
class SpecRegistration:
    """``policy`` is the policy name, ``kind`` the custom resource kind (``None``: the policy
    has no custom resource), ``spec_class`` the attrs class its spec structures into."""

    policy: str
    kind: str | None
    spec_class: type


_REGISTRY: dict[str, SpecRegistration] = {}


def register_spec(policy_name: str, kind: str | None, spec_class: type) -> None:
    """Register the spec class of a policy. Registering the same thing twice is harmless;
    registering a different class or kind under a taken name or kind is an error."""
    if not policy_name:
        raise ValueError("a policy name is required")
    if not attrs.has(spec_class):
        raise TypeError(
            f"spec class {spec_class!r} of policy {policy_name!r} is not an attrs class"
        )
    clashes = sorted(set(key_map(spec_class).values()) & set(COMMON_BLOCK_KEYS))
    if clashes:
        raise ValueError(
            f"spec class {spec_class.__name__} of policy {policy_name!r} uses keys reserved"
            f" for the common blocks: {', '.join(clashes)}"
        )
    entry = SpecRegistration(policy_name, kind, spec_class)
    existing = _REGISTRY.get(policy_name)
    if existing is not None and existing != entry:
        raise ValueError(f"policy {policy_name!r} is already registered with {existing}")
    for other in _REGISTRY.values():
        if kind is not None and other.kind == kind and other.policy != policy_name:
            raise ValueError(f"kind {kind!r} is already registered for policy {other.policy!r}")
    _REGISTRY[policy_name] = entry


def unregister_spec(policy_name: str) -> None:
    """Remove a registration (for plugins that go away, and for tests)."""
    _REGISTRY.pop(policy_name, None)


def spec_registration(policy_name: str) -> SpecRegistration | None:
    return _REGISTRY.get(policy_name)


def registered_policies() -> list[str]:
    """Names of the policies with a registered spec, sorted."""
    return sorted(_REGISTRY)


register_spec("topology-aware", "TopologyAwarePolicy", TopologyAwarePolicySpec)
register_spec("balloons", "BalloonsPolicy", BalloonsPolicySpec)
register_spec("template", "TemplatePolicy", TemplatePolicySpec)
register_spec("none", None, NonePolicySpec)
