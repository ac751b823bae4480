"""The node agent's side of Kubernetes: configuration custom resources, their status, the
node's NodeResourceTopology (``agent.py``), over a :class:`ClusterApi`: a real API server
through lightkube (``lightkube_cluster.py``, imported only when the agent runs) or the
in-process :class:`FakeCluster` (``fake.py``). See docs/kubernetes.md.

The names below are imported on first use (PEP 562), so that importing one module of the
package (``errors``) does not load the agent, the fake cluster and what they use: a daemon
without the agent loads none of it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_MODULES = {
    "agent": (
        "AgentStats",
        "ConfigChoice",
        "ConfigHandler",
        "NodeAgent",
        "Retry",
        "clear_patch",
        "status_patch",
    ),
    "cluster": (
        "CONFIG_API_VERSION",
        "CONFIG_GROUP",
        "NRT_API_VERSION",
        "NRT_PLURAL",
        "ClusterApi",
        "ObjectList",
        "WatchEvent",
        "plural_of",
    ),
    "errors": (
        "ApiFailure",
        "ClusterError",
        "Conflict",
        "Forbidden",
        "Gone",
        "NotFound",
        "Unreachable",
    ),
    "fake": ("FakeCluster", "merge_patch"),
    "nrt": ("topology_document",),
}
_HOME = {name: module for module, names in _MODULES.items() for name in names}

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


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME])
