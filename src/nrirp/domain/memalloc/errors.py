"""The memory allocator's error: names the request and the capacity it found."""

from __future__ import annotations

from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.memalloc.request import MemoryRequest, human_bytes


class MemoryAllocationError(ValueError):
    """A request that cannot be placed (or restored); nothing was changed.

    The message names the request (owner, size, types, zone), the node set where the capacity
    ran out (``nodes``), its ``capacity`` and the ``demand`` it would have had.
    """

    def __init__(
        self,
        request: MemoryRequest,
        reason: str,
        *,
        nodes: CPUSet = EMPTY,
        capacity: int = 0,
        demand: int | None = None,
    ) -> None:
        self.request = request
        self.reason = reason
        self.nodes = nodes
        self.capacity = capacity
        self.demand = demand
        found = f"capacity found: {human_bytes(capacity)} ({capacity} bytes)"
        if nodes:
            found += f" on nodes {nodes}"
        if demand is not None:
            found += f", demand there would be {human_bytes(demand)} ({demand} bytes)"
        super().__init__(f"cannot allocate memory for {request.describe()}: {reason}; {found}")
