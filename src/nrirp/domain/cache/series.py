"""Snapshots saved one after another, each made from what changed since the previous one.

The resource manager saves after every operation that changed something. Listing every pod and
container for each save costs time in the size of the cache, on the request path; here a save
costs what changed (:meth:`~nrirp.domain.cache.store.Cache.take_changes`). The series keeps
its own copy of the tables, brought up to date with those changes; a snapshot is listed from
it only when it is first read (by the store's writer thread or flush).
"""

from __future__ import annotations

import threading
import weakref
from collections import deque
from collections.abc import Mapping
from typing import Any

from nrirp.domain.cache.snapshot import SNAPSHOT_VERSION, EncodedLater, Snapshot, SnapshotEncoder
from nrirp.domain.cache.store import CacheChanges


class SnapshotSeries:
    """Makes the snapshot of each save from the changes since the previous save.

    :meth:`save` returns a mapping that is the JSON-compatible snapshot of the cache as it was
    at that save (``version, policy, pods, containers, policy_data, config``, pods and
    containers in the cache's order), listed and unstructured when first read. Changes are
    applied in order, at the next save or up to a snapshot being read. A snapshot still
    referenced when a later change would be applied over it is listed first (cheap, at C
    speed), so every snapshot stays exact whatever the order it is read in, and one nobody
    keeps costs nothing. Thread-safe: saves come from the pipeline, reads from anywhere.
    """

    def __init__(self, encoder: SnapshotEncoder | None = None) -> None:
        self._encoder = encoder or SnapshotEncoder()
        self._lock = threading.Lock()
        self._pods = _Table()
        self._containers = _Table()
        self._queue: deque[tuple[int, CacheChanges, weakref.ref[_Saved]]] = deque()
        self._serial = 0
        self._applied = 0
        """Serial of the last save whose changes are in the tables."""
        self._current: weakref.ref[_Saved] | None = None
        """The save the tables are at."""

    def save(
        self,
        changes: CacheChanges,
        *,
        policy: str,
        policy_data: Mapping[str, Any],
        config: Mapping[str, Any] | None,
    ) -> EncodedLater:
        """The snapshot of the state after ``changes`` (the caller hands over
        ``policy_data`` and ``config`` and never modifies them)."""
        with self._lock:
            self._serial += 1
            saved = _Saved(self, self._serial, policy, policy_data, config)
            self._queue.append((self._serial, changes, weakref.ref(saved)))
            # the previous save's changes, now (a little work per save, not a pile once in a
            # while); not this one's: the store still holds the previous snapshot until it is
            # handed this one, and a snapshot still held is listed before changes go over it
            self._advance(self._serial - 1)
        return self._encoder.later(saved.snapshot)

    def _snapshot_of(self, saved: _Saved) -> Snapshot:
        with self._lock:
            snapshot = saved.made
            if snapshot is None:
                if saved.serial > self._applied:
                    self._advance(saved.serial)
                snapshot = saved.made = self._make(saved)
            return snapshot

    def _advance(self, serial: int) -> None:
        """Apply the queued changes up to those of save ``serial``."""
        queue = self._queue
        while queue and queue[0][0] <= serial:
            current = self._current() if self._current is not None else None
            if current is not None and current.made is None:
                current.made = self._make(current)  # still wanted: list it before it changes
            number, changes, ref = queue.popleft()
            if changes.full:
                self._pods = _Table()
                self._containers = _Table()
            self._pods.apply(changes.pods)
            self._containers.apply(changes.containers)
            self._applied, self._current = number, ref

    def _make(self, saved: _Saved) -> Snapshot:
        return Snapshot(
            version=SNAPSHOT_VERSION,
            policy=saved.policy,
            pods=tuple(self._pods.values.values()),
            containers=tuple(self._containers.values.values()),
            policy_data=saved.policy_data,
            config=saved.config,
        )


class _Saved:
    """One save: what it does not share with the tables, and its snapshot once listed."""

    __slots__ = ("__weakref__", "config", "made", "policy", "policy_data", "serial", "series")

    def __init__(
        self,
        series: SnapshotSeries,
        serial: int,
        policy: str,
        policy_data: Mapping[str, Any],
        config: Mapping[str, Any] | None,
    ) -> None:
        self.series = series
        self.serial = serial
        self.policy = policy
        self.policy_data = policy_data
        self.config = config
        self.made: Snapshot | None = None

    def snapshot(self) -> Snapshot:
        return self.series._snapshot_of(self)


class _Table:
    """Values by id in the cache's order, with their places in it."""

    def __init__(self) -> None:
        self.values: dict[str, Any] = {}
        self.places: dict[str, int] = {}
        self.top = -1

    def apply(self, changes: tuple[tuple[str, Any, int], ...]) -> None:
        values, places = self.values, self.places
        unordered = False
        for key, value, place in changes:
            if value is None:
                if values.pop(key, None) is not None:
                    del places[key]
                continue
            known = places.get(key)
            if known == place:
                values[key] = value  # in its place
                continue
            if known is not None:  # removed and put back: it moved
                del values[key]
            values[key] = value
            places[key] = place
            if place < self.top:
                unordered = True
            else:
                self.top = place
        if unordered:
            order = sorted(values, key=places.__getitem__)
            self.values = {key: values[key] for key in order}
            self.top = places[order[-1]]
