"""Port: the Kubernetes side, as the resource manager sees it (the node agent).

The agent (``nrirp.adapters.kubernetes``) does three things for a node: it follows the
configuration custom resource that applies to the node and hands it to the daemon's reload
path, it writes back on that resource whether the node took it (:class:`ConfigStatus`), and it
publishes the policy's topology zones as the node's NodeResourceTopology object. Only the last
one involves the pipeline: after every operation that changed something, the manager tells the
agent (:meth:`Kubernetes.topology_changed`), and the agent reads the zones later, off the
request path, at the rate it allows itself.
"""

from __future__ import annotations

from typing import Protocol

import attrs

SUCCESS = "Success"
FAILURE = "Failure"


@attrs.frozen
class ConfigStatus:
    """Outcome of applying a configuration on this node, written on the custom resource as
    ``status.nodes[<node>]``: ``errors`` are the config loader's problems (``path: reason``)
    or the policy's refusal; ``generation`` is the resource's ``metadata.generation``;
    ``timestamp`` is seconds since the epoch."""

    success: bool
    generation: int | None = None
    errors: tuple[str, ...] = ()
    timestamp: float = 0.0

    @property
    def text(self) -> str:
        return SUCCESS if self.success else FAILURE


class Kubernetes(Protocol):
    """What the resource manager tells the node agent."""

    def topology_changed(self) -> None:
        """Allocations changed: publish the zones again soon.

        Called after every committed operation that changed the cache, with the pipeline
        held: it must not block, do I/O or call back into the manager. The agent reads
        :meth:`ResourceManager.topology_zones` later, from its own task."""
        ...
