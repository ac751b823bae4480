"""Port: persisting the resource manager's state snapshot."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class StateStoreError(Exception):
    """The state could not be read or written; the message says where and why."""


class StateStore(Protocol):
    """Keeps the latest state snapshot (a JSON-compatible mapping) across restarts.

    Contract for adapters:

    * :meth:`save` replaces the stored snapshot atomically: a crash at any point leaves either
      the previous or the new snapshot, never a mix (file adapters write a temporary file,
      fsync it, rename it over the old one and fsync the directory).
    * :meth:`load` returns ``None`` when nothing was ever saved, and raises
      :class:`StateStoreError` when the stored state cannot be trusted: unreadable, not JSON,
      or (for files) writable by group or others, so that another user could have planted it.
    * Both raise :class:`StateStoreError` for I/O failures, naming the path and the cause.
    * The mapping given to :meth:`save` is handed over: the caller never modifies it, nor any
      part of it, afterwards (the resource manager builds a fresh one for every save and
      shares only unchanged parts between them), so a store may keep it and encode it later,
      e.g. on a writer thread. The store must not modify it either.
    * The resource manager's snapshot is a read-only ``Mapping`` that is made and unstructured
      when first read (:class:`~nrirp.domain.cache.EncodedLater`), not a ``dict``: read it
      through the mapping interface (``.items()``, ``dict(snapshot)``, ``json`` after ``dict``).

    The domain validates the content itself (version, keys, types) when it restores.
    """

    def load(self) -> Mapping[str, Any] | None: ...

    def save(self, snapshot: Mapping[str, Any]) -> None: ...
