"""What pipeline operations return."""

from __future__ import annotations

import attrs

from nrirp.domain.model import Adjustment, Update


@attrs.frozen(hash=False)
class CreateResult:
    """The adjustment for the container being created and updates to other containers."""

    adjustment: Adjustment
    updates: tuple[Update, ...] = ()


@attrs.frozen
class ReconfigureOutcome:
    """Whether a new configuration took effect; when not, ``reason`` says why."""

    applied: bool
    reason: str = ""
    updates: int = 0
    """How many container updates the change caused (sent asynchronously)."""


@attrs.frozen
class StartOutcome:
    """What :meth:`ResourceManager.start` restored."""

    restored: bool
    pods: int = 0
    containers: int = 0
    policy_changed: bool = False
    """The saved state was written by another policy; its data was dropped and every
    surviving container is allocated anew at the next synchronize."""
