"""The topology-aware policy: pools that follow the hardware topology (see
docs/topology-aware.md)."""

from nrirp.domain.policies.topology_aware.policy import (
    COLD_START_DONE,
    TopologyAwarePolicy,
    default_spec,
)

__all__ = ["COLD_START_DONE", "TopologyAwarePolicy", "default_spec"]
