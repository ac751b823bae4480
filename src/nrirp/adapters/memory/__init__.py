"""In-memory adapters for the domain ports: for tests, the simulator and embedders."""

from nrirp.adapters.memory.clock import FakeClock
from nrirp.adapters.memory.decisions import RecordingDecisionLog, RecordingMetrics
from nrirp.adapters.memory.host_control import HostCall, InMemoryHostControl
from nrirp.adapters.memory.host_resources import (
    InMemoryCPUPower,
    InMemoryInterrupts,
    InMemoryResctrl,
    InMemoryResourceExport,
)
from nrirp.adapters.memory.last_decisions import LastDecisions
from nrirp.adapters.memory.runtime_updates import RecordingRuntimeUpdates
from nrirp.adapters.memory.state_store import InMemoryStateStore
from nrirp.adapters.memory.timers import ManualTimer, ManualTimers

__all__ = [
    "FakeClock",
    "HostCall",
    "InMemoryCPUPower",
    "InMemoryHostControl",
    "InMemoryInterrupts",
    "InMemoryResctrl",
    "InMemoryResourceExport",
    "InMemoryStateStore",
    "LastDecisions",
    "ManualTimer",
    "ManualTimers",
    "RecordingDecisionLog",
    "RecordingMetrics",
    "RecordingRuntimeUpdates",
]
