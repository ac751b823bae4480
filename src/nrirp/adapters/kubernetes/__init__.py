"""The node agent's side of Kubernetes: configuration custom resources, their status, the
node's NodeResourceTopology (``agent.py``), over a :class:`ClusterApi`: a real API server
through lightkube (``lightkube_cluster.py``, imported only when the agent runs) or the
in-process :class:`FakeCluster` (``fake.py``). See docs/kubernetes.md."""

from nrirp.adapters.kubernetes.agent import (
    AgentStats,
    ConfigChoice,
    ConfigHandler,
    NodeAgent,
    Retry,
    clear_patch,
    status_patch,
)
from nrirp.adapters.kubernetes.cluster import (
    CONFIG_API_VERSION,
    CONFIG_GROUP,
    NRT_API_VERSION,
    NRT_PLURAL,
    ClusterApi,
    ObjectList,
    WatchEvent,
    plural_of,
)
from nrirp.adapters.kubernetes.errors import (
    ApiFailure,
    ClusterError,
    Conflict,
    Forbidden,
    Gone,
    NotFound,
    Unreachable,
)
from nrirp.adapters.kubernetes.fake import FakeCluster, merge_patch
from nrirp.adapters.kubernetes.nrt import topology_document

__all__ = [
    "CONFIG_API_VERSION",
    "CONFIG_GROUP",
    "NRT_API_VERSION",
    "NRT_PLURAL",
    "AgentStats",
    "ApiFailure",
    "ClusterApi",
    "ClusterError",
    "ConfigChoice",
    "ConfigHandler",
    "Conflict",
    "FakeCluster",
    "Forbidden",
    "Gone",
    "NodeAgent",
    "NotFound",
    "ObjectList",
    "Retry",
    "Unreachable",
    "WatchEvent",
    "clear_patch",
    "merge_patch",
    "plural_of",
    "status_patch",
    "topology_document",
]
