"""The ``agent`` block: what the node agent publishes to and reads from Kubernetes."""

from __future__ import annotations

import attrs

from nrirp.domain.config.keys import ref


@attrs.frozen(kw_only=True)
class AgentConfig:
    """``nodeResourceTopology`` exports NodeResourceTopology objects; ``podResourceAPI`` reads
    device assignments from the kubelet's pod-resources API."""

    node_resource_topology: bool = attrs.field(default=True, metadata=ref("nodeResourceTopology"))
    pod_resource_api: bool = attrs.field(default=False, metadata=ref("podResourceAPI"))
