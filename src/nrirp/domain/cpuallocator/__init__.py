"""Topology-aware CPU allocation: which CPUs of a set to give a request, and which to give back.

Pure domain code. See ``docs/cpu-allocator.md`` for how it picks.
"""

from nrirp.domain.cpuallocator.allocator import CPUAllocator
from nrirp.domain.cpuallocator.errors import CPUAllocationError
from nrirp.domain.cpuallocator.priorities import classify_priorities, epp_value

__all__ = ["CPUAllocationError", "CPUAllocator", "classify_priorities", "epp_value"]
