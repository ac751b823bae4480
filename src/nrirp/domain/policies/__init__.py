"""Built-in policies and the default registry."""

from nrirp.domain.policies.balloons import BalloonsPolicy
from nrirp.domain.policies.none import NonePolicy
from nrirp.domain.policies.template import TemplatePolicy
from nrirp.domain.policies.topology_aware import TopologyAwarePolicy
from nrirp.domain.policy import PolicyRegistry


def builtin_registry() -> PolicyRegistry:
    """A registry with the built-in policies (more are added as they are written)."""
    registry = PolicyRegistry()
    registry.register(TemplatePolicy, kind="TemplatePolicy")
    registry.register(NonePolicy)
    registry.register(TopologyAwarePolicy, kind="TopologyAwarePolicy")
    registry.register(BalloonsPolicy, kind="BalloonsPolicy")
    return registry


__all__ = [
    "BalloonsPolicy",
    "NonePolicy",
    "TemplatePolicy",
    "TopologyAwarePolicy",
    "builtin_registry",
]
