"""Strict topology hints (``strict.topologyhints``): where a grant's CPUs and memory may lie.

As the reference's ``verifyStrictTopologyHints`` checks, the CPUs granted and the memory nodes
must lie inside every hint, not merely in a pool that contains it. A hint that gives CPUs
limits the CPUs to those; one that gives only NUMA nodes (or sockets) limits them to the CPUs
of those nodes (sockets). A hint that gives NUMA nodes limits the memory to those nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine
from nrirp.domain.topology.hints import TopologyHint


@attrs.frozen
class HintLimits:
    """The CPUs (``None``: any) and memory nodes (``None``: any) a grant may have."""

    cpus: CPUSet | None
    nodes: CPUSet | None
    text: str
    """The hints, for messages."""

    def holds(self, cpus: CPUSet, mems: CPUSet | None) -> bool:
        """Do ``cpus`` and the memory nodes ``mems`` (``None``: memory left alone) lie inside?"""
        if self.cpus is not None and not cpus.issubset(self.cpus):
            return False
        return self.nodes is None or mems is None or mems.issubset(self.nodes)


def hint_limits(hints: Sequence[TopologyHint], machine: Machine) -> HintLimits | None:
    """The limits of ``hints`` (``None`` without hints)."""
    if not hints:
        return None
    cpus: CPUSet | None = None
    nodes: CPUSet | None = None
    for hint in hints:
        if hint.cpus:
            allowed = hint.cpus
        elif hint.nodes:
            allowed = CPUSet().union(
                *(machine.node_cpus(n) for n in hint.nodes if n in machine.nodes)
            )
        elif hint.sockets:
            allowed = CPUSet().union(
                *(machine.package_cpus(s) for s in hint.sockets if s in machine.packages)
            )
        else:
            continue
        cpus = allowed if cpus is None else cpus & allowed
        if hint.nodes:
            nodes = hint.nodes if nodes is None else nodes & hint.nodes
    return HintLimits(cpus, nodes, ", ".join(str(h) for h in hints))
