"""Recording what the resource manager handles (``nrirp run --record``) in the simulator's
workload format, so that ``nrirp simulate`` replays a node (``docs/simulator.md``)."""

from nrirp.adapters.recording.files import RecordingError, RecordingLimits
from nrirp.adapters.recording.format import FORMAT
from nrirp.adapters.recording.recorder import Recorder

__all__ = ["FORMAT", "Recorder", "RecordingError", "RecordingLimits"]
