"""One-line step descriptions read as English at any count."""

from __future__ import annotations

import pytest

from nrirp.adapters.recording.format import RecordedContainer, RecordedPod, Synchronize
from nrirp.app.simulator.describe import describe_step
from nrirp.app.simulator.workload import Step


@pytest.mark.parametrize(
    ("pods", "containers", "said"),
    [
        (0, 0, "0 pods, 0 containers"),
        (1, 1, "1 pod, 1 container"),
        (1, 2, "1 pod, 2 containers"),
        (2, 3, "2 pods, 3 containers"),
    ],
)
def test_a_synchronize_counts_its_pods_and_containers(
    pods: int, containers: int, said: str
) -> None:
    action = Synchronize(
        pods=tuple(RecordedPod(id=f"p{n}") for n in range(pods)),
        containers=tuple(RecordedContainer(id=f"c{n}", pod="p0") for n in range(containers)),
    )
    step = Step(number=1, kind="synchronize", action=action)
    assert describe_step(step) == f"synchronize: the runtime runs {said}"
