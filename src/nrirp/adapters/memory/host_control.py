"""HostControl that records what it was asked to apply."""

from __future__ import annotations

import threading

import attrs

from nrirp.domain.model import HostChange
from nrirp.domain.ports.host_control import HostControlError, HostTarget


@attrs.frozen(hash=False)
class HostCall:
    action: str  # "apply" or "forget"
    target: HostTarget
    change: HostChange | None = None


class InMemoryHostControl:
    """Accumulates the settings applied per container; can be told to fail."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls: list[HostCall] = []
        self.settings: dict[str, HostChange] = {}
        self.fail_with: str | None = None

    def apply(self, target: HostTarget, change: HostChange) -> None:
        with self._lock:
            if self.fail_with is not None:
                raise HostControlError(self.fail_with)
            self.calls.append(HostCall("apply", target, change))
            prior = self.settings.get(target.container_id, HostChange())
            self.settings[target.container_id] = prior.merged(change)

    def forget(self, target: HostTarget) -> None:
        with self._lock:
            self.calls.append(HostCall("forget", target))
            self.settings.pop(target.container_id, None)
