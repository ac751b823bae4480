"""Port: metrics sink."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from nrirp.domain.policy.zones import MetricSample


class Metrics(Protocol):
    """Receives pipeline measurements and policy metric samples.

    The resource manager calls it from inside the pipeline, on the thread serving the
    request, so an adapter must not block: record and return (an exporter reads what was
    recorded on its own thread, at its own pace)."""

    def observe_operation(self, operation: str, seconds: float, ok: bool) -> None:
        """One pipeline operation finished after ``seconds`` (clock time), successfully or not."""
        ...

    def observe_decisions(self, operation: str, count: int) -> None:
        """A committed ``operation`` decided the resources of ``count`` containers."""
        ...

    def observe_refusal(self, operation: str, reason: str) -> None:
        """``operation`` was refused; ``reason`` is a short class out of a small fixed set
        (see :func:`nrirp.domain.pipeline.unit_of_work.refusal_class`), never free text, so
        that it can be a metric label."""
        ...

    def publish(self, samples: Sequence[MetricSample]) -> None:
        """The policy's current samples (they replace the previous ones)."""
        ...
