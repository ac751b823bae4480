"""Port: topology hints for a container's devices and mounts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from nrirp.domain.model import Container
from nrirp.domain.topology.hints import TopologyHint


class TopologyHintSource(Protocol):
    """Finds where the devices a container was given sit (CPUs, NUMA nodes, sockets).

    Returns every hint found, keyed by provider, with ``origin`` and ``path`` set; the
    container's annotations are applied later (:func:`~nrirp.domain.topology.hints.select_hints`).
    Must not raise for odd or unreadable hardware information: such hints are skipped.
    """

    def hints(self, container: Container) -> Mapping[str, TopologyHint]: ...
