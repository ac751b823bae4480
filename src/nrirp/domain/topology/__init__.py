"""Hardware topology model."""

from nrirp.domain.topology.hints import (
    HintOrigin,
    TopologyHint,
    hint_score,
    select_hints,
)
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
    "HintOrigin",
    "Machine",
    "MemoryType",
    "NumaNode",
    "Package",
    "TopologyError",
    "TopologyHint",
    "classify_memory_types",
    "hint_score",
    "select_hints",
]
