"""Hardware topology model."""

from nrirp.domain.topology.memory import classify_memory_types
from nrirp.domain.topology.model import (
    CPU,
    CacheGroup,
    CacheType,
    Cluster,
    Core,
    CoreType,
    Die,
    Machine,
    MemoryType,
    NumaNode,
    Package,
    TopologyError,
)

__all__ = [
    "CPU",
    "CacheGroup",
    "CacheType",
    "Cluster",
    "Core",
    "CoreType",
    "Die",
    "Machine",
    "MemoryType",
    "NumaNode",
    "Package",
    "TopologyError",
    "classify_memory_types",
]
