"""Port: the Kubernetes side (configuration source, status, node resource topology)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import attrs

from nrirp.domain.policy.zones import TopologyZone


@attrs.frozen
class ConfigStatus:
    """Outcome of applying a configuration, reported back on the config resource."""

    success: bool
    generation: int | None = None
    errors: tuple[str, ...] = ()
    timestamp: float = 0.0


class Kubernetes(Protocol):
    """What the node agent does for the resource manager."""

    def node_config(self) -> Mapping[str, Any] | None:
        """The configuration document that applies to this node now, if any."""
        ...

    def report_config_status(self, status: ConfigStatus) -> None: ...

    def export_topology(self, policy: str, zones: Sequence[TopologyZone]) -> None:
        """Publish the policy's zones (NodeResourceTopology); asynchronous in adapters."""
        ...
