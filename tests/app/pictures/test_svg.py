"""The SVG picture of a placement, read back as XML: every part of the machine is drawn
once, each CPU shows its pool or balloon and exactly the containers that may run on it in
their legend colours, memory nodes show what is placed on them, changes are outlined, big
machines are condensed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from nrirp.app.pictures import Palette, render_svg
from nrirp.app.pictures.layout import CONDENSE_ABOVE
from nrirp.app.pictures.svg import MAX_BANDS
from nrirp.app.placement import Placement, placement_document, placement_from_document
from nrirp.app.placement.document import PlacementDocumentError
from nrirp.domain.cpuset import CPUSet
from nrirp.testing import (
    EngineHarness,
    besteffort,
    burstable,
    fake_machine,
    guaranteed,
    machine_names,
    pod,
)
from tests.app.pictures.support import SVG, Picture, elements, read

BALLOONS = {
    "reservedResources": {"cpu": 1},
    "balloonTypes": [
        {"name": "db", "namespaces": ["db"], "minCPUs": 2},
        {"name": "web", "namespaces": ["web"]},
    ],
}


def topology_aware() -> EngineHarness:
    h = EngineHarness.build("topology-aware", machine="box-16")
    h.run(pod("pg", guaranteed("pg", 2, "1Gi"), namespace="db"))
    h.run(
        pod("web", burstable("nginx", "500m", "256Mi"), burstable("log", "100m"), namespace="web")
    )
    return h


def check_every_container_in_its_colour(placement: Placement, picture: Picture) -> None:
    """Each container has its own colour; exactly its CPUs list it; a CPU shared by at
    most MAX_BANDS containers shows a band of each in its colour (more: the first ones and
    a "+N" band)."""
    colours = [picture.colour(c.label) for c in placement.containers]
    assert len(set(colours)) == len(colours)  # one colour per container
    for cpu in picture.cpus:
        labels = [label for label, _ in cpu.stripes if label != "+"]
        keys = [picture.key(label) for label in labels]
        assert keys == list(cpu.containers[: len(keys)])
        assert len(cpu.stripes) == min(len(cpu.containers), MAX_BANDS)
        for label, fill in cpu.stripes:
            assert label == "+" or fill == picture.colour(label)
    for c in placement.containers:
        assert picture.cpus_of(c.label) == placement.cpus_of(c), c.label


def test_the_machine_is_drawn_part_by_part() -> None:
    picture = read(render_svg(topology_aware().placement()))
    assert sorted(picture.drawn()) == list(range(16))  # each CPU once, each its own element
    assert all(len(cpu.cpus) == 1 for cpu in picture.cpus)
    assert picture.count("g", "package") == 2 and picture.count("g", "node") == 4
    assert picture.count("g", "cache") == 4  # L3 per package, one box per node's share
    assert picture.count("rect", "core") == 8
    assert picture.count("text", "cpu-id") == 16
    memory = list(elements(picture.root, "g", "memory"))
    assert [m.get("data-node") for m in memory] == ["0", "1", "2", "3"]
    assert {m.get("data-capacity") for m in memory} == {str(4 << 30)}


def test_each_cpu_shows_its_containers_in_their_colours() -> None:
    h = topology_aware()
    placement = h.placement()
    picture = read(render_svg(placement))
    check_every_container_in_its_colour(placement, picture)
    pg = placement.container("db/pg/pg")
    for cpu in picture.cpus:
        if cpu.cpus <= (pg.cpus or CPUSet()):
            assert cpu.stripes == (("db/pg/pg", picture.colour("db/pg/pg")),)  # only pg
            assert cpu.group == pg.group and cpu.fill == picture.groups[pg.group or ""]


def test_memory_nodes_show_the_memory_placed_on_them() -> None:
    h = topology_aware()
    placement = h.placement()
    picture = read(render_svg(placement))
    pg = placement.container("db/pg/pg")
    assert pg.mems is not None and len(pg.mems) == 1
    [node] = pg.mems
    for m in elements(picture.root, "g", "memory"):
        uses = [u for u in m.iter(SVG + "rect") if u.get("class") == "memory-use"]
        placed = {u.get("data-container"): int(u.get("data-bytes", "0")) for u in uses}
        if m.get("data-node") == str(node):
            assert placed["db/pg/pg"] == 1 << 30
            assert {u.get("fill") for u in uses if u.get("data-container") == "db/pg/pg"} == {
                picture.colour("db/pg/pg")
            }
        else:
            assert "db/pg/pg" not in placed
        assert int(m.get("data-used", "0")) == sum(placed.values())


def test_balloons_colour_their_cpus_and_reserved_cpus_are_marked() -> None:
    h = EngineHarness.build("balloons", machine="server-4s-144", config=BALLOONS)
    h.run(pod("pg", guaranteed("pg", 3, "8Gi"), namespace="db"))
    h.run(pod("web", burstable("nginx", "500m"), namespace="web"))
    placement = h.placement()
    picture = read(render_svg(placement))
    check_every_container_in_its_colour(placement, picture)
    by_cpu = {c: cpu for cpu in picture.cpus for c in cpu.cpus}
    for name in ("db[0]", "web[0]"):
        group = placement.group(name)
        assert group.cpus and all(by_cpu[c].group == name for c in group.cpus)
        assert {by_cpu[c].fill for c in group.cpus} == {picture.groups[name]}
    reserved = [c for c, cpu in by_cpu.items() if "reserved" in cpu.classes]
    assert reserved == list(placement.reserved) == list(placement.group("reserved[0]").cpus)
    free = [c for c, cpu in by_cpu.items() if not cpu.group]
    assert len(free) == 144 - len(placement.group("db[0]").cpus) - 1 - 1  # web[0] has one


def test_unrestricted_containers_may_run_everywhere() -> None:
    h = EngineHarness.build("template", machine="box-16")
    h.run(pod("a", besteffort("c")))
    h.run(pod("b", guaranteed("c", 1, "1Gi", cpuset_cpus="3")))  # kubelet's static CPU manager
    placement = h.placement()
    picture = read(render_svg(placement))
    assert picture.cpus_of("default/a/c") == CPUSet.parse("0-15")
    assert picture.cpus_of("default/b/c") == CPUSet.of(3)
    legend = {
        g.get("data-container"): "".join(g.itertext())
        for g in elements(picture.root, "g", "legend-container")
    }
    assert "any CPU" in legend["default/a/c"] and "cpus 3" in legend["default/b/c"]


def test_what_changed_since_the_previous_picture_is_outlined() -> None:
    h = topology_aware()
    before = h.placement()
    h.run(pod("cache", guaranteed("redis", 2, "2Gi"), namespace="db"))
    after = h.placement()
    picture = read(render_svg(after, previous=before))
    redis = after.container("db/cache/redis")
    changed = CPUSet.from_ids(
        c for cpu in picture.cpus if "changed" in cpu.classes for c in cpu.cpus
    )
    moved = CPUSet()
    for c in after.containers:  # CPUs that a moved shared container left or reached
        old = next((o for o in before.containers if o.label == c.label), None)
        if old is not None:
            moved |= before.cpus_of(old) ^ after.cpus_of(c)
    assert changed == (redis.cpus or CPUSet()) | moved
    assert redis.cpus and redis.cpus <= changed
    nodes = {
        m.get("data-node")
        for m in elements(picture.root, "g", "memory")
        if "changed" in (m.get("class") or "")
    }
    assert nodes == {str(n) for n in redis.mems or ()}
    text = " ".join("".join(g.itertext()) for g in elements(picture.root, "g", "legend-container"))
    assert "db/cache/redis (new)" in text
    # nothing to compare with: nothing outlined
    assert not any("changed" in cpu.classes for cpu in read(render_svg(after)).cpus)


def test_a_palette_keeps_colours_across_pictures() -> None:
    h = topology_aware()
    palette = Palette()
    first = read(render_svg(h.placement(), palette=palette))
    h.run(pod("zzz", burstable("first-now", "100m"), namespace="aaa"))
    second = read(render_svg(h.placement(), palette=palette))
    for label, (_, colour) in first.legend.items():
        assert second.colour(label) == colour


@pytest.mark.parametrize("name", machine_names())
def test_every_catalogue_machine_draws_each_cpu_and_node_once(name: str) -> None:
    machine = fake_machine(name)
    h = EngineHarness.build("topology-aware", machine=name)
    h.run(pod("pg", guaranteed("pg", 2, "1Gi")))
    svg = render_svg(h.placement())
    picture = read(svg)
    assert sorted(picture.drawn()) == sorted(machine.online)
    memory = [m.get("data-node") for m in elements(picture.root, "g", "memory")]
    assert sorted(memory, key=int) == [str(n) for n in machine.nodes]
    condensed = len(machine.online) > CONDENSE_ABOVE
    assert (picture.count("text", "cpu-id") == 0) is condensed
    assert "<script" not in svg and "href" not in svg  # nothing to run, nothing to fetch


def test_the_biggest_machine_is_condensed_into_runs() -> None:
    h = EngineHarness.build("topology-aware", machine="sparse-8s-4096")
    for i in range(40):
        h.run(pod(f"db{i}", guaranteed("pg", 4, "8Gi"), namespace="db"))
        h.run(pod(f"web{i}", burstable("nginx", "500m", "1Gi"), namespace="web"))
    placement = h.placement()
    svg = render_svg(placement)
    picture = read(svg)
    assert sorted(picture.drawn()) == sorted(placement.machine.online)
    assert len(picture.cpus) < len(placement.machine.online) / 4  # runs, not 4096 cells
    assert len(ET.fromstring(svg).findall(".//*")) < 10_000 and len(svg) < 2_000_000
    check_every_container_in_its_colour(placement, picture)


def test_placements_travel_as_json() -> None:
    for h in (topology_aware(), EngineHarness.build("balloons", config=BALLOONS)):
        placement = h.placement()
        document = json.loads(json.dumps(placement_document(placement)))
        assert placement_from_document(document) == placement
    good = placement_document(topology_aware().placement())
    for path, broken, message in [
        ("format", "x", r"\$\.format: expected 'nrirp.placement/v1'"),
        ("containers", [{"id": 1}], r"\$\.containers\[0\]\.id: expected a string, got 1"),
        ("machine", {"cpu_details": "x"}, r"\$\.machine\.cpu_details: expected a list"),
    ]:
        with pytest.raises(PlacementDocumentError, match=message):
            placement_from_document({**good, path: broken})


def test_a_balloon_sharing_idle_cpus_says_so_in_the_legend() -> None:
    """Its containers' bands on idle CPUs it does not hold are explained by its legend row."""
    from pathlib import Path

    config = Path(__file__).parents[3] / "examples/workloads/balloons/configs/sharing.yaml"
    h = EngineHarness.build("balloons", machine="box-16", config=config.read_text())
    h.run(pod("a", burstable("c", "500m"), namespace="numa"))
    placement = h.placement()
    numa = next(g for g in placement.groups if g.name.startswith("numa["))
    assert numa.shared_cpus
    root = read(render_svg(placement)).root
    texts = ["".join(g.itertext()) for g in root.iter() if g.get("data-group") == numa.name]
    assert any(f"also on idle cpus {numa.shared_cpus}" in t for t in texts), texts
