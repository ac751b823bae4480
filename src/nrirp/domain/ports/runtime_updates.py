"""Port: delivering policy-initiated container updates to the runtime."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from nrirp.domain.model import Update


class RuntimeUpdates(Protocol):
    """Sends updates the runtime did not ask for (policy events, reconfiguration, ...).

    Contract for adapters: :meth:`submit` must return at once without waiting for the runtime
    (the pipeline lock is held while it is called, and NRI runtimes block on their own lock while
    they call the plugin, so a synchronous send can deadlock). The adapter sends the batch
    later, in order, and reports the updates the runtime refused back through
    ``ResourceManager.updates_failed(updates, reason)``.
    """

    def submit(self, updates: Sequence[Update]) -> None:
        """Queue ``updates`` (never empty) for delivery."""
        ...
