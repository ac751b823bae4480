"""The kubelet's pod-resources API: a gRPC client (``client.py``, messages generated from
``proto/podresources_v1.proto`` into ``gen/``) and the topology hints it gives
(``hints.py``). See docs/topology-hints.md and docs/kubernetes.md."""

from nrirp.adapters.podresources.client import (
    DEFAULT_SOCKET,
    PodResourcesClient,
    PodResourcesError,
)
from nrirp.adapters.podresources.hints import CombinedHints, PodResourceHints

__all__ = [
    "DEFAULT_SOCKET",
    "CombinedHints",
    "PodResourceHints",
    "PodResourcesClient",
    "PodResourcesError",
]
