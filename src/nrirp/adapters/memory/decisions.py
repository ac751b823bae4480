"""Decision log and metrics sinks that keep what they receive."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from nrirp.domain.policy import MetricSample
from nrirp.domain.ports.decisions import Decision, DecisionLog, Notice


class RecordingDecisionLog(DecisionLog):
    """Keeps every decision and notice, in order (``decisions``, ``notices``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.decisions: list[Decision] = []
        self.notices: list[Notice] = []

    def decision(self, decision: Decision) -> None:
        with self._lock:
            self.decisions.append(decision)

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        with self._lock:
            self.decisions.extend(decisions)

    def notice(self, notice: Notice) -> None:
        with self._lock:
            self.notices.append(notice)


class RecordingMetrics:
    """Keeps every measurement: ``operations`` (operation, seconds, ok), ``decisions``
    (operation, count), ``refusals`` (operation, reason class) and the published ``samples``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.operations: list[tuple[str, float, bool]] = []
        self.decisions: list[tuple[str, int]] = []
        self.refusals: list[tuple[str, str]] = []
        self.samples: list[MetricSample] = []

    def observe_operation(self, operation: str, seconds: float, ok: bool) -> None:
        with self._lock:
            self.operations.append((operation, seconds, ok))

    def observe_decisions(self, operation: str, count: int) -> None:
        with self._lock:
            self.decisions.append((operation, count))

    def observe_refusal(self, operation: str, reason: str) -> None:
        with self._lock:
            self.refusals.append((operation, reason))

    def publish(self, samples: Sequence[MetricSample]) -> None:
        with self._lock:
            self.samples.extend(samples)
