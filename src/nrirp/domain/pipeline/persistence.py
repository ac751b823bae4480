"""The pipeline's state on the :class:`StateStore` port: read and restored at start, saved
after every committed operation that changed something persistent."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from nrirp.domain.cache import (
    Cache,
    SnapshotError,
    SnapshotSeries,
    structure_snapshot,
)
from nrirp.domain.config import PolicyConfig
from nrirp.domain.model import Container, Pod
from nrirp.domain.pipeline.config_codec import ConfigCodec
from nrirp.domain.pipeline.errors import StateRestoreError
from nrirp.domain.pipeline.results import StartOutcome
from nrirp.domain.policy import Policy
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.ports.state_store import StateStore, StateStoreError

NotifyFn = Callable[[str, Severity, str | None], None]


@attrs.frozen
class SavedState:
    """The saved state as read and checked at start; the cache holds it only once
    :meth:`StatePersistence.restore` is called."""

    outcome: StartOutcome
    config: PolicyConfig | None = None
    """The saved configuration (``None`` when there is none, it is another policy's, or it
    does not load)."""
    pods: tuple[Pod, ...] = ()
    containers: tuple[Container, ...] = ()
    policy_data: Mapping[str, Any] = attrs.field(factory=dict)
    data: Mapping[str, Any] | None = None
    """The saved state as the store gave it (``None``: nothing saved)."""


class StatePersistence:
    """Reads the saved state, restores it into the cache and saves the cache.

    Each save's snapshot is made from the cache's changes since the previous save
    (:class:`SnapshotSeries`) and listed when the store reads it. The configuration is stored
    in its document form (``codec``), dumped once per configuration. With ``keep_latest``
    the snapshot last handed to the store is kept for :meth:`latest` (an inbound observer
    reads it where it wants the state; kept only then: the store's writer may let it go).
    """

    def __init__(
        self,
        *,
        cache: Cache,
        policy: Policy,
        store: StateStore | None,
        codec: ConfigCodec,
        notify: NotifyFn,
        keep_latest: bool = False,
    ) -> None:
        self._cache = cache
        self._keep_latest = keep_latest
        self._latest: Mapping[str, Any] | None = None
        self._policy = policy
        self._store = store
        self._codec = codec
        self._notify = notify
        self._snapshots = SnapshotSeries()
        self._config_dumped: tuple[PolicyConfig | None, dict[str, Any] | None] = (None, None)

    def read(self) -> SavedState:
        """The saved state, checked; nothing is changed.

        Raises :class:`StateRestoreError` when the store cannot be read or the state is not
        usable (every offending path named). State written by another policy loses its policy
        data and configuration, with a notice; a saved configuration that no longer loads is
        dropped with a notice.
        """
        if self._store is None:
            return SavedState(StartOutcome(restored=False))
        try:
            data = self._store.load()
        except StateStoreError as exc:
            raise StateRestoreError(f"cannot read saved state: {exc}") from exc
        if data is None:
            return SavedState(StartOutcome(restored=False))
        try:
            snapshot = structure_snapshot(data)
        except SnapshotError as exc:
            raise StateRestoreError(f"refusing saved state: {exc}") from exc
        name = self._policy.name
        policy_changed = snapshot.policy != name
        if policy_changed:
            self._notify(
                f"saved state was written by policy {snapshot.policy!r}; its policy data is "
                f"dropped and containers are allocated anew by {name!r}",
                Severity.WARNING,
                None,
            )
        config = None
        if snapshot.config is not None and not policy_changed:
            try:
                config = self._codec.load(snapshot.policy, snapshot.config)
            except Exception as exc:
                self._notify(f"saved configuration ignored: {exc}", Severity.WARNING, None)
        return SavedState(
            StartOutcome(
                restored=True,
                pods=len(snapshot.pods),
                containers=len(snapshot.containers),
                policy_changed=policy_changed,
            ),
            config,
            snapshot.pods,
            snapshot.containers,
            {} if policy_changed else snapshot.policy_data,
            data,
        )

    def restore(self, saved: SavedState) -> None:
        """Put the pods, containers and policy data of ``saved`` into the cache (no-op when
        nothing was saved)."""
        if saved.outcome.restored:
            self._cache.replace_all(saved.pods, saved.containers, saved.policy_data)

    def save(self) -> None:
        """Store the policy's exported data in the cache, then hand the store a snapshot if
        anything persistent changed. A failed save is reported and retried after the next
        operation."""
        cache = self._cache
        cache.set_policy_data(self._policy.name, self._policy.export_state())
        if self._store is None:
            cache.forget_changes()
            return
        if not cache.dirty:
            return
        # made from the changes since the last save, listed and unstructured when the store
        # reads it (its writer thread, a flush), not here
        snapshot = self._snapshots.save(
            cache.take_changes(),
            policy=self._policy.name,
            policy_data=cache.policy_data_view(),
            config=self._config_document(cache.config),
        )
        try:
            self._store.save(snapshot)
        except StateStoreError as exc:
            self._notify(f"state not saved (will retry): {exc}", Severity.ERROR, None)
            return
        cache.mark_clean()
        if self._keep_latest:
            self._latest = snapshot

    def latest(self) -> Mapping[str, Any] | None:
        """The snapshot last handed to the store (kept with ``keep_latest``), ``None`` before
        the first save."""
        return self._latest

    def _config_document(self, config: PolicyConfig | None) -> dict[str, Any] | None:
        """The document form of ``config``, dumped once per configuration (configs are
        immutable; snapshots share the document and nothing modifies it)."""
        if config is None:
            return None
        dumped_from, document = self._config_dumped
        if config is not dumped_from:
            document = dict(self._codec.dump(config))
            self._config_dumped = (config, document)
        return document
