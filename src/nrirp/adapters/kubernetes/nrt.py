"""The policy's topology zones as the node's NodeResourceTopology object (v1alpha2)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nrirp.adapters.kubernetes.cluster import NRT_API_VERSION, NRT_KIND, JsonObject
from nrirp.domain.policy import TopologyZone, ZoneResource

TOPOLOGY_POLICY_ATTRIBUTE = "TopologyPolicy"


def cpu_quantity(millis: int) -> str:
    """Millicores as a Kubernetes quantity (``2``, ``1500m``)."""
    return str(millis // 1000) if millis % 1000 == 0 else f"{millis}m"


def _quantity(resource: ZoneResource, value: int) -> str:
    return cpu_quantity(value) if resource.name == "cpu" else str(value)


def zone_document(zone: TopologyZone) -> JsonObject:
    doc: JsonObject = {"name": zone.name, "type": zone.type}
    if zone.parent:
        doc["parent"] = zone.parent
    if zone.resources:
        doc["resources"] = [
            {
                "name": r.name,
                "capacity": _quantity(r, r.capacity),
                "allocatable": _quantity(r, r.allocatable),
                "available": _quantity(r, max(r.available, 0)),
            }
            for r in zone.resources
        ]
    if zone.attributes:
        doc["attributes"] = [{"name": a.name, "value": a.value} for a in zone.attributes]
    return doc


def topology_document(
    node: str,
    policy: str,
    zones: Sequence[TopologyZone],
    owner: Mapping[str, Any] | None = None,
) -> JsonObject:
    """The NodeResourceTopology named after ``node`` with ``zones`` and the policy's name
    (``topologyPolicies`` and the ``TopologyPolicy`` attribute). ``owner``: the Node object,
    if known, made the owner so that the object goes when the node does."""
    metadata: JsonObject = {"name": node}
    uid = (owner or {}).get("metadata", {}).get("uid") if owner else None
    if uid:
        metadata["ownerReferences"] = [
            {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
        ]
    return {
        "apiVersion": NRT_API_VERSION,
        "kind": NRT_KIND,
        "metadata": metadata,
        "topologyPolicies": [policy],
        "attributes": [{"name": TOPOLOGY_POLICY_ATTRIBUTE, "value": policy}],
        "zones": [zone_document(z) for z in zones],
    }
