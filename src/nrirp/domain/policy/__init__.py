"""The policy port, the context policies get, events, exports and the policy registry."""

from nrirp.domain.policy.context import NoTimersError, PolicyContext
from nrirp.domain.policy.events import UPDATES_FAILED, PolicyEvent, UpdatesFailed
from nrirp.domain.policy.port import Policy, PolicyError
from nrirp.domain.policy.registry import (
    PolicyEntry,
    PolicyFactory,
    PolicyRegistry,
    UnknownPolicyError,
)
from nrirp.domain.policy.zones import MetricSample, TopologyZone, ZoneAttribute, ZoneResource

__all__ = [
    "UPDATES_FAILED",
    "MetricSample",
    "NoTimersError",
    "Policy",
    "PolicyContext",
    "PolicyEntry",
    "PolicyError",
    "PolicyEvent",
    "PolicyFactory",
    "PolicyRegistry",
    "TopologyZone",
    "UnknownPolicyError",
    "UpdatesFailed",
    "ZoneAttribute",
    "ZoneResource",
]
