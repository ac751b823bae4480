"""The ``agent`` block: what the node agent publishes to and reads from Kubernetes."""

from __future__ import annotations

import attrs

from nrirp.domain.config.keys import ref


@attrs.frozen(kw_only=True)
class AgentConfig:
    """``nodeResourceTopology`` exports NodeResourceTopology objects (``None``: not given, which
    exports them, as ``true`` does; kept apart so that a configuration that asks for the export
    where no agent runs can be told from one that says nothing); ``podResourceAPI`` reads
    device assignments from the kubelet's pod-resources API."""

    node_resource_topology: bool | None = attrs.field(
        default=None, metadata=ref("nodeResourceTopology")
    )
    pod_resource_api: bool = attrs.field(default=False, metadata=ref("podResourceAPI"))

    @property
    def exports_topology(self) -> bool:
        """Whether NodeResourceTopology is exported (the default unless set to ``false``)."""
        return self.node_resource_topology is not False
