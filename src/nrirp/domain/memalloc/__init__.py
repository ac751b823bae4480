"""Memory zone allocator: NUMA node zones per owner, widened on overcommit (libmem's role)."""

from nrirp.domain.memalloc.allocator import MemoryAllocator
from nrirp.domain.memalloc.errors import MemoryAllocationError
from nrirp.domain.memalloc.request import (
    MemoryAllocation,
    MemoryOffer,
    MemoryRequest,
    human_bytes,
)

__all__ = [
    "MemoryAllocation",
    "MemoryAllocationError",
    "MemoryAllocator",
    "MemoryOffer",
    "MemoryRequest",
    "human_bytes",
]
