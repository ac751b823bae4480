"""Restart, synchronize and reconfiguration (reference-balloons.md §1.5, §10)."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from nrirp.domain.config import PolicyConfig
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import ContainerState
from tests.domain.policies.balloons.support import (
    Rig,
    config,
    make_container,
    make_pod,
    make_rig,
)

TYPES = [
    {"name": "app", "namespaces": ["app"], "shareIdleCPUsInSame": "numa", "maxCPUs": 4},
    {"name": "db", "namespaces": ["db"], "minBalloons": 1, "minCPUs": 2},
]


def _workload(rig: Rig) -> None:
    rig.run("k", 100, namespace="kube-system")
    rig.pod("web", {"a": 1500, "b": 500}, namespace="app")
    rig.run("db", 2500, namespace="db", qos="Guaranteed")
    rig.run("x", 0, qos="BestEffort")
    pod, (gone,) = rig.pod("tmp", {"c": 900}, namespace="app")
    rig.stop(pod, gone)


def _state(rig: Rig) -> dict[str, Any]:
    """What the policy holds; memory order numbers as ranks (they only order allocations, and
    a restart goes on from the highest one saved)."""
    containers = rig.manager.containers()
    orders = sorted(
        int(t.split(":")[0]) for c in containers if (t := c.tags.get("balloons.memory"))
    )
    held = {}
    for c in containers:
        tags = dict(c.tags)
        if tags.get("balloons.memory"):
            order, rest = tags["balloons.memory"].split(":", 1)
            tags["balloons.memory"] = f"#{orders.index(int(order))}:{rest}"
        held[c.id] = (c.cpus, c.mems, tags)
    return {"describe": rig.manager.describe(), "containers": held}


@pytest.mark.parametrize("machine", ["box-16", "server-112-pmem"])
def test_restart_takes_everything_back_exactly(machine: str) -> None:
    cfg = config(balloonTypes=TYPES)
    rig = make_rig(machine, cfg)
    _workload(rig)
    before = _state(rig)
    again = make_rig(machine, cfg, store=rig.store, clock=rig.clock)
    assert _state(again) == before
    assert again.updates.updates == []
    # and goes on deciding as if it never restarted
    a = rig.run("next", 1200, namespace="app")[1]
    b = again.run("next", 1200, namespace="app")[1]
    assert rig.cpus(a) == again.cpus(b)
    assert _state(again) == _state(rig)


def test_restart_with_another_config_decides_afresh() -> None:
    rig = make_rig(cfg=config(balloonTypes=TYPES))
    _workload(rig)
    other = config(balloonTypes=[{"name": "app", "namespaces": ["app"], "maxCPUs": 1}])
    again = make_rig(cfg=other, store=rig.store, clock=rig.clock)
    names = {c.name: again.ctr(c).tags["balloons.balloon"] for c in again.manager.containers()}
    assert set(names.values()) <= {"reserved[0]", "default[0]", "app[0]", "app[1]", "app[2]"}
    assert not any(n.startswith("db") for n in again.names())


def test_restart_places_containers_whose_balloon_is_gone() -> None:
    rig = make_rig()
    _, c = rig.run("a", 500)
    broken = attrs.evolve(rig.ctr(c), tags={**rig.ctr(c).tags, "balloons.balloon": "gone[3]"})
    rig.manager.cache.put_container(broken)
    rig.manager._save()  # type: ignore[attr-defined]
    again = make_rig(store=rig.store, clock=rig.clock)
    assert again.where(c) == "default[0]"


def test_synchronize_allocates_new_and_releases_gone() -> None:
    rig = make_rig()
    _, a = rig.run("a", 2000)
    pod_b = make_pod("b")
    b = attrs.evolve(make_container(pod_b, cpu=1000), state=ContainerState.RUNNING)
    rig.manager.synchronize([pod_b], [b])
    assert a.id not in rig.engine.owner and rig.where(b) == "default[0]"
    assert rig.balloon("default[0]").cpus.bit_count() == 1


def test_reconfigure_moves_containers_to_their_new_types() -> None:
    rig = make_rig(cfg=config(balloonTypes=TYPES))
    _, web = rig.run("web", 1000, namespace="web")
    assert rig.where(web) == "default[0]"
    new_types = [*TYPES, {"name": "web", "namespaces": ["web"], "minCPUs": 2}]
    outcome = rig.manager.reconfigure(config(balloonTypes=new_types))
    assert outcome.applied, outcome.reason
    assert rig.where(web) == "web[0]"
    assert rig.cpus(web) == CPUSet(rig.balloon("web[0]").cpus)
    assert len(rig.cpus(web) or ()) == 2
    assert any(u.container_id == web.id for u in rig.updates.updates)


def test_a_refused_config_keeps_the_old_one() -> None:
    cfg = config(balloonTypes=TYPES)
    rig = make_rig(cfg=cfg)
    _workload(rig)
    before = _state(rig)
    # db needs 3 CPUs, the new type gives it one at most
    tight: PolicyConfig = config(
        balloonTypes=[{"name": "db", "namespaces": ["db"], "maxCPUs": 1, "maxBalloons": 1}]
    )
    outcome = rig.manager.reconfigure(tight)
    assert not outcome.applied
    assert "cannot keep db/db/c: no suitable db balloon instance" in (outcome.reason or "")
    assert (outcome.reason or "").count("db/db/c") == 1
    assert _state(rig) == before
    # the reserved cpuset must lie in the available CPUs
    outside = config(
        reservedResources={"cpu": "cpuset:15"}, availableResources={"cpu": "cpuset:0-7"}
    )
    outcome = rig.manager.reconfigure(outside)
    assert not outcome.applied and "reservedResources.cpu" in (outcome.reason or "")
    assert _state(rig) == before


def test_min_balloons_that_do_not_fit_are_refused() -> None:
    rig = make_rig()
    too_many = config(balloonTypes=[{"name": "big", "minBalloons": 3, "minCPUs": 6}])
    outcome = rig.manager.reconfigure(too_many)
    assert not outcome.applied
    assert "cannot create its minBalloons (3) with minCPUs (6)" in (outcome.reason or "")


def test_the_same_config_changes_nothing() -> None:
    cfg = config(balloonTypes=TYPES)
    rig = make_rig(cfg=cfg)
    _workload(rig)
    before = _state(rig)
    assert rig.manager.reconfigure(config(balloonTypes=TYPES)).applied
    assert _state(rig) == before and rig.updates.updates == []


def test_a_class_only_change_moves_nothing() -> None:
    classes = [{"name": "turbo"}, {"name": "eco"}]
    types = [{"name": "app", "namespaces": ["app"], "cpuClass": "turbo"}]
    rig = make_rig(cfg=config(balloonTypes=types, cpuClasses=classes))
    _workload(rig)
    _, c = rig.run("a", 1500, namespace="app")
    placed = {x.id: (x.cpus, x.mems) for x in rig.manager.containers()}
    recolored = [{"name": "app", "namespaces": ["app"], "cpuClass": "eco"}]
    outcome = rig.manager.reconfigure(
        config(balloonTypes=recolored, cpuClasses=classes, idleCPUClass="turbo")
    )
    assert outcome.applied
    assert {x.id: (x.cpus, x.mems) for x in rig.manager.containers()} == placed
    assert rig.ctr(c).tags["balloons.cpu-class"] == "eco"
    assert rig.manager.describe()["idle_cpu_class"] == "turbo"
