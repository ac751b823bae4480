"""A histogram that records without a lock: for one writer thread and any readers."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

import attrs

OPERATION_BUCKETS = (
    0.00005,
    0.0001,
    0.00025,
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
)
"""Seconds: pipeline operations take tens of microseconds to tens of milliseconds."""

WRITE_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
"""Seconds: a state file write is an encode, a write, two fsyncs and a rename."""


@attrs.frozen
class HistogramSnapshot:
    """Counts per upper bound (the last one is +Inf), their total and the sum of values."""

    bounds: tuple[float, ...]
    counts: tuple[int, ...]
    total: float

    @property
    def count(self) -> int:
        return sum(self.counts)

    def cumulative(self) -> list[tuple[float, int]]:
        """``(upper bound, observations <= bound)``, +Inf last, as Prometheus exposes them."""
        out = []
        running = 0
        for bound, count in zip((*self.bounds, float("inf")), self.counts, strict=True):
            running += count
            out.append((bound, running))
        return out


class Histogram:
    """Observations counted per bucket. :meth:`observe` is a bisect and two additions, with
    no lock: the pipeline records from its one thread while an exporter reads from another,
    and a reader never waits for it nor holds it up. :meth:`snapshot` copies the counts in
    one step, so the buckets it returns agree with each other (the sum may trail by the
    observation being recorded at that instant)."""

    __slots__ = ("_bounds", "_counts", "_sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = tuple(bounds)
        self._counts = [0] * (len(self._bounds) + 1)
        self._sum = 0.0

    def observe(self, value: float) -> None:
        self._counts[bisect_left(self._bounds, value)] += 1
        self._sum += value

    def snapshot(self) -> HistogramSnapshot:
        return HistogramSnapshot(self._bounds, tuple(self._counts), self._sum)
