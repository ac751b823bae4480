"""Zones, metric samples and the description (reference-balloons.md §9)."""

from __future__ import annotations

from nrirp.domain.cpuset import CPUSet
from tests.domain.policies.balloons.support import config, make_rig

TYPES = [
    {
        "name": "app",
        "namespaces": ["app"],
        "maxCPUs": 4,
        "shareIdleCPUsInSame": "numa",
        "groupBy": "${pod/labels/team}",
        "cpuClass": "turbo",
    },
    {"name": "x"},
    {"name": "y"},
    {
        "name": "xy",
        "namespaces": ["xy"],
        "components": [{"balloonType": "x"}, {"balloonType": "y"}],
    },
]


def test_one_zone_per_balloon() -> None:
    rig = make_rig(cfg=config(balloonTypes=TYPES, cpuClasses=[{"name": "turbo"}]))
    rig.run("a", 1500, namespace="app", labels={"team": "red"})
    rig.run("c", 1000, namespace="xy")
    zones = {z.name: z for z in rig.manager.topology_zones()}
    assert set(zones) == {"reserved[0]", "default[0]", "app[0]", "xy[0]"}
    app = zones["app[0]"]
    assert app.type == "balloon" and app.parent == ""
    (cpu,) = app.resources
    balloon = rig.balloon("app[0]")
    assert cpu.name == "cpu" and cpu.capacity == 16_000
    assert cpu.allocatable == 4_000  # maxCPUs caps |initially free|
    assert cpu.available == 4_000 - 1500  # what it could reach minus its requests
    attributes = {a.name: a.value for a in app.attributes}
    assert attributes == {
        "cpuset": str(CPUSet(balloon.cpus)),
        "shared cpuset": str(CPUSet(balloon.shared)),
        "excess cpus": "500m",
    }
    xy = {a.name: a.value for a in zones["xy[0]"].attributes}
    left, right = rig.balloon("xy[0]").components
    assert xy["component cpusets"] == f"{{{{{CPUSet(left.cpus)}}}, {{{CPUSet(right.cpus)}}}}}"
    assert zones["default[0]"].resources[0].allocatable == 15_000  # 16 CPUs, one reserved


def test_container_zones_with_show_containers_in_nrt() -> None:
    rig = make_rig(cfg=config(showContainersInNrt=True))
    _, c = rig.run("a", 1500)
    zones = {z.name: z for z in rig.manager.topology_zones()}
    zone = zones["default/a/c"]
    assert zone.type == "allocation for container" and zone.parent == "default[0]"
    (cpu,) = zone.resources
    assert (cpu.capacity, cpu.allocatable, cpu.available) == (2000, 1500, 0)
    attributes = {a.name: a.value for a in zone.attributes}
    assert attributes["cpuset"] == str(rig.cpus(c))


def test_metric_samples() -> None:
    rig = make_rig(cfg=config(balloonTypes=TYPES, cpuClasses=[{"name": "turbo"}]))
    rig.run("a", 1500, namespace="app", labels={"team": "red"})
    samples = {dict(s.labels)["balloon"]: s for s in rig.manager.policy_metrics()}
    sample = samples["app[0]"]
    assert sample.name == "nri_policy_balloons_cores" and sample.value == 2.0
    labels = dict(sample.labels)
    balloon = rig.balloon("app[0]")
    assert labels["balloon_type"] == "app" and labels["cpu_class"] == "turbo"
    assert (labels["cpus_min"], labels["cpus_max"]) == ("0", "4")
    assert labels["groups"] == "red"
    assert labels["cpus"] == str(CPUSet(balloon.cpus)) and labels["cpus_count"] == "2"
    assert labels["numas"] == "p0d0n0" and labels["numas_count"] == "1"
    assert labels["dies"] == "p0d0" and labels["packages"] == "p0"
    assert labels["sharedidlecpus"] == str(CPUSet(balloon.shared))
    assert labels["cpus_allowed"] == str(CPUSet(balloon.cpus | balloon.shared))
    assert labels["mems"] == "0"
    assert labels["containers"] == "app/a/c" and labels["tot_req_millicpu"] == "1500"


def test_describe_lists_every_balloon() -> None:
    rig = make_rig(cfg=config(balloonTypes=TYPES, cpuClasses=[{"name": "turbo"}]))
    rig.run("a", 1500, namespace="app", labels={"team": "red"})
    view = rig.manager.describe()
    assert view["policy"] == "balloons"
    app = next(b for b in view["balloons"] if b["name"] == "app[0]")
    assert app["type"] == "app" and app["containers"] == ["app/a/c"]
    assert app["cpu_class"] == "turbo" and app["requested_mcpu"] == 1500
    assert app["cpus"] == str(CPUSet(rig.balloon("app[0]").cpus)) and app["mems"] == "0"
