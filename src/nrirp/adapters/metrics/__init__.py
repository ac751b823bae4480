"""Metrics: the recorder the pipeline writes to (no metrics library needed) and, in
:mod:`nrirp.adapters.metrics.prometheus` (imported only when metrics are exported), the
Prometheus exposition of what it recorded."""

from nrirp.adapters.metrics.histogram import Histogram, HistogramSnapshot
from nrirp.adapters.metrics.recorder import RELOAD_RESULTS, MetricsRecorder, RecorderSnapshot
from nrirp.adapters.metrics.system import system_samples

__all__ = [
    "RELOAD_RESULTS",
    "Histogram",
    "HistogramSnapshot",
    "MetricsRecorder",
    "RecorderSnapshot",
    "system_samples",
]
