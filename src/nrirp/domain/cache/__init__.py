"""The cache of pods, containers and policy state, and its persisted snapshot."""

from nrirp.domain.cache.snapshot import (
    SNAPSHOT_VERSION,
    EncodedLater,
    Snapshot,
    SnapshotEncoder,
    SnapshotError,
    structure_snapshot,
    unstructure_snapshot,
)
from nrirp.domain.cache.store import Cache, CacheCheckpoint, CacheError

__all__ = [
    "SNAPSHOT_VERSION",
    "Cache",
    "CacheCheckpoint",
    "CacheError",
    "EncodedLater",
    "Snapshot",
    "SnapshotEncoder",
    "SnapshotError",
    "structure_snapshot",
    "unstructure_snapshot",
]
