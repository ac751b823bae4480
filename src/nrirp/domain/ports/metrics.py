"""Port: metrics sink."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from nrirp.domain.policy.zones import MetricSample


class Metrics(Protocol):
    """Receives pipeline measurements and policy metric samples."""

    def observe_operation(self, operation: str, seconds: float, ok: bool) -> None:
        """One pipeline operation finished after ``seconds`` (clock time), successfully or not."""
        ...

    def publish(self, samples: Sequence[MetricSample]) -> None: ...
