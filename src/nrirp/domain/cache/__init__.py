"""The cache of pods, containers and policy state, and its persisted snapshot."""

from nrirp.domain.cache.series import SnapshotSeries
from nrirp.domain.cache.snapshot import (
    SNAPSHOT_VERSION,
    EncodedLater,
    Snapshot,
    SnapshotEncoder,
    SnapshotError,
    structure_snapshot,
    unstructure_snapshot,
)
from nrirp.domain.cache.store import Cache, CacheChanges, CacheCheckpoint, CacheError

__all__ = [
    "SNAPSHOT_VERSION",
    "Cache",
    "CacheChanges",
    "CacheCheckpoint",
    "CacheError",
    "EncodedLater",
    "Snapshot",
    "SnapshotEncoder",
    "SnapshotError",
    "SnapshotSeries",
    "structure_snapshot",
    "unstructure_snapshot",
]
