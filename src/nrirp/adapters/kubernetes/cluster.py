"""The API-server operations the node agent needs, as a protocol over plain JSON objects.

Two implementations: :class:`~nrirp.adapters.kubernetes.lightkube_cluster.LightkubeCluster`
(a real API server, through lightkube) and :class:`~nrirp.adapters.kubernetes.fake.FakeCluster`
(in process, for tests and the simulator). Objects are the API's JSON as dicts. Failures are
:mod:`~nrirp.adapters.kubernetes.errors` exceptions: :class:`Unreachable` when nothing
answers, :class:`Gone` when a watch must be started again from a new list, :class:`Forbidden`
naming the verb and resource RBAC denied, :class:`NotFound`, :class:`Conflict`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping
from typing import Any, Protocol

import attrs

CONFIG_GROUP = "config.nri"
CONFIG_VERSION = "v1alpha1"
CONFIG_API_VERSION = f"{CONFIG_GROUP}/{CONFIG_VERSION}"
NRT_GROUP = "topology.node.k8s.io"
NRT_VERSION = "v1alpha2"
NRT_API_VERSION = f"{NRT_GROUP}/{NRT_VERSION}"
NRT_KIND = "NodeResourceTopology"
NRT_PLURAL = "noderesourcetopologies"
FIELD_MANAGER = "nri-resource-policy"

JsonObject = dict[str, Any]


def plural_of(kind: str) -> str:
    """The resource name of a kind, as the CRDs declare it (``TopologyAwarePolicy`` ->
    ``topologyawarepolicies``)."""
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + "s"


@attrs.frozen
class WatchEvent:
    """One event of a watch: ``ADDED``, ``MODIFIED``, ``DELETED`` or ``BOOKMARK`` (whose object
    carries only ``metadata.resourceVersion``)."""

    type: str
    object: JsonObject


@attrs.frozen
class ObjectList:
    """A list's items and the resource version to watch from."""

    items: tuple[JsonObject, ...]
    resource_version: str


class ClusterApi(Protocol):
    """Lists, watches and writes of the node agent. Watches yield events until the server
    ends them without error (then the caller watches again from the last version it saw) and
    raise :class:`~nrirp.adapters.kubernetes.errors.Gone` when that version expired."""

    async def list_configs(self, kind: str, namespace: str) -> ObjectList: ...

    def watch_configs(
        self, kind: str, namespace: str, resource_version: str
    ) -> AsyncGenerator[WatchEvent, None]: ...

    async def list_node(self, name: str) -> ObjectList:
        """The node ``name`` (a list of zero or one item, to watch from)."""
        ...

    def watch_node(self, name: str, resource_version: str) -> AsyncGenerator[WatchEvent, None]: ...

    async def patch_config_status(
        self, kind: str, namespace: str, name: str, patch: Mapping[str, Any]
    ) -> None:
        """A JSON merge patch of the resource's status subresource."""
        ...

    async def apply_topology(self, document: Mapping[str, Any]) -> None:
        """Create or update the NodeResourceTopology ``document`` (server-side apply)."""
        ...

    async def close(self) -> None: ...


def object_name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def resource_version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion", ""))
