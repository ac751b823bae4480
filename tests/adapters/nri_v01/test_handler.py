"""V01Handler on an engine (topology-aware, box-16) with decisions written into a temporary
cgroup tree laid out like v1 (hybrid) and v2 hosts, cgroupfs and systemd paths."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.engine_api.updates import RoutedRuntimeUpdates
from nrirp.adapters.memory import RecordingDecisionLog
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer
from nrirp.adapters.nri_v01.handler import V01Handler
from nrirp.adapters.nri_v01.protocol import DELETE, PAUSE, RESUME, UPDATE
from nrirp.adapters.nri_v01.stale import CgroupPresence
from nrirp.app.embed import Engine
from nrirp.domain.model import CgroupDriver, Resources
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from tests.support.nri_v01 import CgroupTree, V01Pod

BOX16_CONFIG = {"reservedResources": {"cpu": "cpuset:0"}}


def guaranteed(name: str, cpus: str) -> PodSpec:
    res = Resources.of(
        requests={"cpu": cpus, "memory": "64Mi"}, limits={"cpu": cpus, "memory": "64Mi"}
    )
    return PodSpec(name, containers=(ContainerSpec("c", res),))


BESTEFFORT = PodSpec("be", containers=(ContainerSpec("c"),))


def make_handler(tree: CgroupTree, policy: str = "topology-aware") -> tuple[V01Handler, Engine]:
    host = CgroupfsHostControl(str(tree.root))
    updates = RoutedRuntimeUpdates()
    engine = Engine.build(
        policy,
        machine="box-16",
        config=BOX16_CONFIG if policy == "topology-aware" else None,
        runtime_updates=updates,
        host_control=host,
        decision_log=RecordingDecisionLog(),
    )
    engine.start()
    handler = V01Handler(
        engine.manager, CgroupEnforcer(host), CgroupPresence(host), updates.capture
    )
    return handler, engine


def start(handler: V01Handler, tree: CgroupTree, pod: V01Pod) -> dict[str, str]:
    tree.add_pod(pod)
    metadata: dict[str, str] = {}
    for request in pod.creates():
        outcome = handler.invoke(request.to_json())
        assert outcome.error == "", outcome
        metadata = outcome.metadata
    return metadata


@pytest.fixture(params=["v1", "v2"])
def tree(request: pytest.FixtureRequest, tmp_path: Path) -> CgroupTree:
    return CgroupTree(tmp_path / "cgroup", request.param)


@pytest.mark.parametrize("driver", [CgroupDriver.CGROUPFS, CgroupDriver.SYSTEMD])
def test_exclusive_pod_shrinks_the_shared_pool_in_the_cgroups(
    tree: CgroupTree, driver: CgroupDriver
) -> None:
    handler, engine = make_handler(tree)
    be = V01Pod.of(BESTEFFORT, 0, driver=driver)
    meta = start(handler, tree, be)
    shared_before = tree.cpus(be.cgroups_path("c"))
    assert meta["cpus"] == shared_before  # the result tells what was written
    g = V01Pod.of(guaranteed("g", "2"), 1, driver=driver)
    meta = start(handler, tree, g)
    exclusive = tree.cpus(g.cgroups_path("c"))
    assert meta["cpus"] == exclusive and len(exclusive.split("-")) == 2
    shared_after = tree.cpus(be.cgroups_path("c"))
    assert shared_after != shared_before  # the other container's cgroup was updated
    assert set(_ids(exclusive)).isdisjoint(_ids(shared_after))
    assert _ids(shared_after) < _ids(shared_before)
    assert engine.container_by_id(be.container_id("c")).cpus is not None  # type: ignore[union-attr]
    # deleting the exclusive pod gives its CPUs back to the shared pool, in the cgroup too
    for request in g.deletes():
        assert handler.invoke(request.to_json()).error == ""
    assert tree.cpus(be.cgroups_path("c")) == shared_before
    assert engine.container_by_id(g.container_id("c")) is None
    assert [p.name for p in engine.pods()] == ["be"]


def test_memory_nodes_are_written_too(tree: CgroupTree) -> None:
    handler, engine = make_handler(tree)
    g = V01Pod.of(guaranteed("g", "2"), 1)
    start(handler, tree, g)
    path = g.cgroups_path("c")
    decided = engine.container_by_id(g.container_id("c"))
    assert decided is not None and decided.mems is not None
    assert tree.read(path, "cpuset.mems") == str(decided.mems)  # written with the CPUs


def test_a_refusal_is_the_error_and_changes_nothing(tree: CgroupTree) -> None:
    handler, engine = make_handler(tree)
    huge = V01Pod.of(guaranteed("huge", "32"), 2)
    tree.add_pod(huge)
    assert handler.invoke(huge.sandbox().to_json()).error == ""
    outcome = handler.invoke(huge.container("c").to_json())
    assert "create-container" in outcome.error and "huge" in outcome.error
    assert engine.container_by_id(huge.container_id("c")) is None
    assert tree.cpus(huge.cgroups_path("c")) == ""  # nothing written


def test_containers_whose_cgroup_is_gone_are_released_before_the_next_create(
    tree: CgroupTree,
) -> None:
    handler, engine = make_handler(tree)
    g1 = V01Pod.of(guaranteed("g1", "6"), 1)
    start(handler, tree, g1)
    g2 = V01Pod.of(guaranteed("g2", "6"), 2)
    start(handler, tree, g2)
    g3 = V01Pod.of(guaranteed("g3", "6"), 3)
    tree.add_pod(g3)
    handler.invoke(g3.sandbox().to_json())
    assert "create-container" in handler.invoke(g3.container("c").to_json()).error
    tree.remove(g1.cgroups_path("c"))  # g1 vanished without a delete (runtime crash)
    outcome = handler.invoke(g3.container("c").to_json())
    assert outcome.error == "" and outcome.metadata["released"] == "1"
    assert engine.container_by_id(g1.container_id("c")) is None
    assert _ids(tree.cpus(g3.cgroups_path("c"))) & _ids(tree.cpus(g2.cgroups_path("c"))) == set()


def test_update_pause_resume_and_unknown_deletes(tree: CgroupTree) -> None:
    handler, engine = make_handler(tree)
    be = V01Pod.of(BESTEFFORT, 0)
    start(handler, tree, be)
    for state in (PAUSE, RESUME):
        outcome = handler.invoke(be.container("c", state).to_json())
        assert outcome.error == "" and outcome.metadata["action"] == "none"
    update = be.container("c", UPDATE)
    assert handler.invoke(update.to_json()).error == ""
    other = V01Pod.of(BESTEFFORT, 9)
    outcome = handler.invoke(other.container("c", DELETE).to_json())
    assert outcome.error == "" and outcome.metadata["reason"] == "not known"
    assert len(engine.containers()) == 1


def test_the_conf_policy_must_be_the_engines(tree: CgroupTree) -> None:
    handler, _ = make_handler(tree)
    pod = V01Pod.of(BESTEFFORT, 0, conf={"policy": "balloons"})
    outcome = handler.invoke(pod.sandbox().to_json())
    assert outcome.error == "conf.policy is 'balloons' but the engine runs policy 'topology-aware'"
    bad = V01Pod.of(BESTEFFORT, 0, conf={"polcy": "x"})
    assert handler.invoke(bad.sandbox().to_json()).error.startswith(
        "bad request: conf.polcy: unknown key"
    )


def test_garbage_and_bad_specs_are_errors_not_exceptions(tree: CgroupTree) -> None:
    handler, _ = make_handler(tree)
    assert handler.invoke(b"\xff").error.startswith("bad request: request is not UTF-8")
    pod = V01Pod.of(BESTEFFORT, 0)
    data = json.loads(pod.container("c").to_json())
    data["spec"]["resources"] = {"cpu": {"cpus": "x-y"}}
    outcome = handler.invoke(json.dumps(data))
    assert outcome.error.startswith("bad request: spec.resources.cpu.cpus:")


def _ids(cpus: str) -> set[int]:
    out: set[int] = set()
    for part in cpus.split(","):
        if "-" in part:
            lo, hi = part.split("-")
            out.update(range(int(lo), int(hi) + 1))
        elif part:
            out.add(int(part))
    return out
