"""The simulator shows the balloons of the balloons policy after every step (table and JSON)."""

from __future__ import annotations

import asyncio

from nrirp.app.simulator import (
    ReplayResult,
    build_simulator,
    parse_workload,
    replay,
    replay_document,
    replay_result,
    replay_table,
)
from nrirp.app.simulator.replay import balloon_views
from nrirp.app.simulator.results import BalloonView

WORKLOAD = """
steps:
  - createPod:
      name: a
      namespace: kube-system
      containers: [{name: c, resources: {requests: {cpu: 100m}}}]
  - createPod:
      name: b
      containers:
        - {name: one, resources: {requests: {cpu: 1500m}}}
        - {name: two}
  - deletePod: {name: b}
"""


def simulate(policy: str) -> ReplayResult:
    workload = parse_workload(WORKLOAD, name="test", base_dir=".")
    container = build_simulator(policy, machine="box-16")
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(asyncio.wait_for(replay(container, workload), 60))
    return replay_result(container, workload, steps, hardware="box-16", config_file=None)


def test_every_step_lists_every_balloon() -> None:
    result = simulate("balloons")
    first, second, third = result.steps
    assert [b.name for b in first.balloons] == ["reserved[0]", "default[0]"]
    reserved = first.balloons[0]
    assert reserved.type == "reserved" and reserved.containers == ("kube-system/a/c",)
    default = second.balloons[1]
    assert default.containers == ("default/b/one", "default/b/two")
    assert len(default.cpus.split(",")) >= 1 and default.cpus  # 2 CPUs for 1500m
    assert default.mems and default.cpu_class is None
    assert third.balloons[1].containers == () and third.balloons[1].cpus == ""

    document = replay_document(result)
    step = document["steps"][1]
    (listed,) = [b for b in step["balloons"] if b["name"] == "default[0]"]
    assert set(listed) == {
        "name",
        "type",
        "cpus",
        "shared_idle_cpus",
        "mems",
        "cpu_class",
        "containers",
    }
    assert listed["containers"] == ["default/b/one", "default/b/two"]

    table = replay_table(result)
    assert "BALLOON" in table and "SHARED IDLE" in table
    step_two = table.split("Step 2:")[1].split("Step 3:")[0]
    line = next(x for x in step_two.splitlines() if x.strip().startswith("default[0]"))
    assert "default/b/one, default/b/two" in line


def test_policies_without_balloons_show_none() -> None:
    result = simulate("template")
    assert all(step.balloons == () for step in result.steps)
    assert all(step["balloons"] == [] for step in replay_document(result)["steps"])
    assert "BALLOON" not in replay_table(result)


def test_composite_balloons_show_their_components() -> None:
    views = balloon_views(
        {
            "balloons": [
                {
                    "name": "both[0]",
                    "type": "both",
                    "cpus": "0-3",
                    "shared_idle_cpus": "",
                    "mems": "0",
                    "cpu_class": None,
                    "containers": ["ns/p/c"],
                    "components": [
                        {"name": "a[0]", "type": "a", "cpus": "0-1", "containers": []},
                        {"name": "b[0]", "type": "b", "cpus": "2-3", "containers": []},
                    ],
                }
            ]
        }
    )
    (both,) = views
    assert [c.name for c in both.components] == ["a[0]", "b[0]"]
    assert isinstance(both.components[0], BalloonView) and both.components[1].cpus == "2-3"
    assert balloon_views({"pools": []}) == ()
