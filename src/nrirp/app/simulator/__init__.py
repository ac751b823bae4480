"""The simulator: replay a workload through the real pipeline and the simulated runtime.

- :func:`parse_workload` / :func:`load_workload`: the YAML workload (``docs/simulator.md``).
- :func:`build_simulator`: the :class:`SimulatorContainer` (``composition.py``) for a replay.
- :func:`replay`: run the steps; :func:`replay_result` bundles them with their setting.
- :func:`replay_table` / :func:`replay_document`: the table and the JSON document.
"""

from nrirp.app.simulator.composition import SimulatorAdapters, SimulatorContainer
from nrirp.app.simulator.replay import replay, replay_result
from nrirp.app.simulator.report import FORMAT, replay_document, replay_table
from nrirp.app.simulator.results import (
    Change,
    ContainerView,
    PodView,
    PoolView,
    ReplayResult,
    StepResult,
)
from nrirp.app.simulator.setup import build_simulator
from nrirp.app.simulator.updates import SettlingRuntimeUpdates
from nrirp.app.simulator.workload import Workload, WorkloadError, load_workload, parse_workload

__all__ = [
    "FORMAT",
    "Change",
    "ContainerView",
    "PodView",
    "PoolView",
    "ReplayResult",
    "SettlingRuntimeUpdates",
    "SimulatorAdapters",
    "SimulatorContainer",
    "StepResult",
    "Workload",
    "WorkloadError",
    "build_simulator",
    "load_workload",
    "parse_workload",
    "replay",
    "replay_document",
    "replay_result",
    "replay_table",
]
