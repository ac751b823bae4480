"""``MetricsRecorder``: the :class:`~nrirp.domain.ports.metrics.Metrics` port, plus what the
daemon itself reports (runtime connection, configuration, state writes).

Recording is plain Python bookkeeping with no lock and no import of a metrics library: the
pipeline records on its own thread and never waits for an exporter. An exporter
(:mod:`nrirp.adapters.metrics.prometheus`, imported only when metrics are exported) reads a
:meth:`MetricsRecorder.snapshot` on its own thread. Each kind of event has one writer thread
(the pipeline's, or the state writer's for :meth:`state_written`), so counters need no lock.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

import attrs

from nrirp.adapters.metrics.histogram import (
    OPERATION_BUCKETS,
    WRITE_BUCKETS,
    Histogram,
    HistogramSnapshot,
)
from nrirp.domain.policy import MetricSample

RELOAD_RESULTS = ("applied", "invalid", "refused", "failed")
"""``applied``, ``invalid`` (did not parse or validate), ``refused`` (by the policy), ``failed``
(an internal error), whatever the configuration's source (the config file, a custom resource)."""


@attrs.frozen
class RecorderSnapshot:
    """A copy of everything recorded, for an exporter."""

    operations: Mapping[str, HistogramSnapshot]
    outcomes: Mapping[tuple[str, bool], int]
    decisions: Mapping[str, int]
    refusals: Mapping[tuple[str, str], int]
    samples: tuple[MetricSample, ...]
    samples_at: float
    runtime_connected: bool
    runtime_connections: int
    runtime_synchronizations: int
    reloads: Mapping[str, int]
    config_generation: int
    state_writes: Mapping[bool, int]
    state_write_seconds: HistogramSnapshot


class MetricsRecorder:
    """Counts and histograms of pipeline operations, decisions and refusals, the policy's
    latest samples (:meth:`publish`), and the daemon's own events."""

    def __init__(self) -> None:
        self._operations: dict[str, Histogram] = {}
        self._outcomes: dict[tuple[str, bool], int] = {}
        self._decisions: dict[str, int] = {}
        self._refusals: dict[tuple[str, str], int] = {}
        self._samples: tuple[MetricSample, ...] = ()
        self._samples_at = 0.0
        self.generation = 0
        """Operations recorded so far: a sample taken at an older generation may be stale."""
        self._connected = False
        self._connections = 0
        self._synchronizations = 0
        self._reloads = dict.fromkeys(RELOAD_RESULTS, 0)
        self._config_generation = 0
        self._writes = {True: 0, False: 0}
        self._write_seconds = Histogram(WRITE_BUCKETS)

    # ------------------------------------------------------------------ the Metrics port
    def observe_operation(self, operation: str, seconds: float, ok: bool) -> None:
        histogram = self._operations.get(operation)
        if histogram is None:
            histogram = self._operations[operation] = Histogram(OPERATION_BUCKETS)
        histogram.observe(seconds)
        key = (operation, ok)
        self._outcomes[key] = self._outcomes.get(key, 0) + 1
        self.generation += 1

    def observe_decisions(self, operation: str, count: int) -> None:
        self._decisions[operation] = self._decisions.get(operation, 0) + count

    def observe_refusal(self, operation: str, reason: str) -> None:
        key = (operation, reason)
        self._refusals[key] = self._refusals.get(key, 0) + 1

    def publish(self, samples: Sequence[MetricSample]) -> None:
        self._samples = tuple(samples)
        self._samples_at = time.monotonic()

    # ------------------------------------------------------------------ the daemon's events
    def runtime_connected(self) -> None:
        """A connection to the runtime was registered and configured."""
        self._connected = True
        self._connections += 1

    def runtime_synchronized(self) -> None:
        self._synchronizations += 1

    def runtime_disconnected(self) -> None:
        self._connected = False

    def config_reloaded(self, result: str, generation: int) -> None:
        """A reload ended with ``result`` (one of :data:`RELOAD_RESULTS`); ``generation`` is
        the configuration in force afterwards."""
        self._reloads[result] = self._reloads.get(result, 0) + 1
        self._config_generation = generation

    def config_loaded(self, generation: int) -> None:
        """The configuration in force is now ``generation`` (at start)."""
        self._config_generation = generation

    def state_written(self, seconds: float, ok: bool) -> None:
        """The state writer wrote the state file (or failed to) in ``seconds``."""
        self._writes[ok] += 1
        self._write_seconds.observe(seconds)

    # ------------------------------------------------------------------ reading
    @property
    def samples_at(self) -> float:
        """When the policy's samples were last published (``time.monotonic``; 0: never)."""
        return self._samples_at

    def snapshot(self) -> RecorderSnapshot:
        # dict(...) and list(...) of built-in containers copy in one step under the GIL
        operations = {name: h.snapshot() for name, h in list(self._operations.items())}
        return RecorderSnapshot(
            operations=operations,
            outcomes=dict(self._outcomes),
            decisions=dict(self._decisions),
            refusals=dict(self._refusals),
            samples=self._samples,
            samples_at=self._samples_at,
            runtime_connected=self._connected,
            runtime_connections=self._connections,
            runtime_synchronizations=self._synchronizations,
            reloads=dict(self._reloads),
            config_generation=self._config_generation,
            state_writes=dict(self._writes),
            state_write_seconds=self._write_seconds.snapshot(),
        )
