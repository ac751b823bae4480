"""Built-in policies and the default registry.

The registry knows the built-ins by name and imports a policy's package only when it is
first used (``PolicyRegistry.register_lazy``); the classes are importable from here as before
(``from nrirp.domain.policies import BalloonsPolicy``), each also imported on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from nrirp.domain.config import NonePolicySpec, TemplatePolicySpec, TopologyAwarePolicySpec
from nrirp.domain.config.balloons import BalloonsPolicySpec
from nrirp.domain.policy import Policy, PolicyRegistry

if TYPE_CHECKING:
    from nrirp.domain.policies.balloons import BalloonsPolicy
    from nrirp.domain.policies.none import NonePolicy
    from nrirp.domain.policies.template import TemplatePolicy
    from nrirp.domain.policies.topology_aware import TopologyAwarePolicy


def _template() -> type[Policy]:
    from nrirp.domain.policies.template import TemplatePolicy

    return TemplatePolicy


def _none() -> type[Policy]:
    from nrirp.domain.policies.none import NonePolicy

    return NonePolicy


def _topology_aware() -> type[Policy]:
    from nrirp.domain.policies.topology_aware import TopologyAwarePolicy

    return TopologyAwarePolicy


def _balloons() -> type[Policy]:
    from nrirp.domain.policies.balloons import BalloonsPolicy

    return BalloonsPolicy


def builtin_registry() -> PolicyRegistry:
    """A registry with the built-in policies (more are added as they are written)."""
    registry = PolicyRegistry()
    registry.register_lazy(
        "template", _template, kind="TemplatePolicy", config_type=TemplatePolicySpec
    )
    registry.register_lazy("none", _none, config_type=NonePolicySpec)
    registry.register_lazy(
        "topology-aware",
        _topology_aware,
        kind="TopologyAwarePolicy",
        config_type=TopologyAwarePolicySpec,
    )
    registry.register_lazy(
        "balloons", _balloons, kind="BalloonsPolicy", config_type=BalloonsPolicySpec
    )
    return registry


_CLASSES = {
    "BalloonsPolicy": _balloons,
    "NonePolicy": _none,
    "TemplatePolicy": _template,
    "TopologyAwarePolicy": _topology_aware,
}


def __getattr__(name: str) -> Any:
    load = _CLASSES.get(name)
    if load is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return load()


__all__ = [
    "BalloonsPolicy",
    "NonePolicy",
    "TemplatePolicy",
    "TopologyAwarePolicy",
    "builtin_registry",
]
