"""Events a policy receives outside the container lifecycle."""

from __future__ import annotations

from typing import Any

import attrs

UPDATES_FAILED = "updates-failed"
"""The runtime refused updates; ``data`` is an :class:`UpdatesFailed`."""


@attrs.frozen
class PolicyEvent:
    """An event for the policy's ``handle_event``: a timer the policy set, a failed update, ...

    ``kind`` names the event, ``source`` who injected it, ``data`` is opaque to the pipeline.
    """

    kind: str
    source: str = ""
    data: Any = None


@attrs.frozen
class UpdatesFailed:
    container_ids: tuple[str, ...]
    reason: str
