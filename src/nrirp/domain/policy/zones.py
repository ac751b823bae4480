"""What policies export: topology zones (NodeResourceTopology) and metric samples."""

from __future__ import annotations

import attrs


@attrs.frozen
class ZoneResource:
    """A resource in a zone; CPU in millicores, memory in bytes."""

    name: str
    capacity: int
    allocatable: int
    available: int


@attrs.frozen
class ZoneAttribute:
    name: str
    value: str


@attrs.frozen
class TopologyZone:
    """One zone of the node's resource topology (a pool, a balloon, a NUMA node, ...)."""

    name: str
    type: str
    parent: str = ""
    resources: tuple[ZoneResource, ...] = ()
    attributes: tuple[ZoneAttribute, ...] = ()


@attrs.frozen
class MetricSample:
    """One gauge value with its labels, e.g. ``nri_policy_cpu_allocation``."""

    name: str
    value: float
    labels: tuple[tuple[str, str], ...] = ()
    help: str = ""
