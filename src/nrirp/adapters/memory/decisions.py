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
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.operations: list[tuple[str, float, bool]] = []
        self.samples: list[MetricSample] = []

    def observe_operation(self, operation: str, seconds: float, ok: bool) -> None:
        with self._lock:
            self.operations.append((operation, seconds, ok))

    def publish(self, samples: Sequence[MetricSample]) -> None:
        with self._lock:
            self.samples.extend(samples)
