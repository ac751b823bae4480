"""What the policy shows (``reference-balloons.md`` §9): a NodeResourceTopology zone per
balloon (and per container with ``showContainersInNrt``), the ``nri_policy_balloons_cores``
samples, and a description for status and the simulator."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container
from nrirp.domain.policies.balloons.balloon import Balloon
from nrirp.domain.policies.balloons.cputree import Level
from nrirp.domain.policies.balloons.engine import Engine, Plan
from nrirp.domain.policies.balloons.memory import MemoryPlacer
from nrirp.domain.policy import MetricSample, TopologyZone, ZoneAttribute, ZoneResource

METRIC = "nri_policy_balloons_cores"
ZONE_TYPE = "balloon"
CONTAINER_ZONE_TYPE = "allocation for container"
_HELP = "CPUs of a balloon (labels: its type, CPUs, shared idle CPUs, memory, containers)"


def _text(bits: int) -> str:
    return str(CPUSet(bits))


def component_cpusets(balloon: Balloon) -> str:
    """``{0-1}`` for one component, ``{{0-1}, {2-3}}`` for several (nested as they nest)."""
    parts = [
        component_cpusets(c) if c.components else f"{{{_text(c.cpus)}}}" for c in balloon.components
    ]
    return parts[0] if len(parts) == 1 else "{" + ", ".join(parts) + "}"


def topology_zones(
    engine: Engine, containers: Callable[[str], Container | None]
) -> list[TopologyZone]:
    capacity = 1000 * engine.resizer.tree.root.bits.bit_count()
    now = Plan(engine.free)
    zones: list[TopologyZone] = []
    initially = engine.initially_free.bit_count()
    for balloon in engine.balloons:
        kind = balloon.kind
        size = initially + (kind.min_cpus if kind.min_balloons > 0 else 0)
        if kind.max_cpus != 0 and kind.max_cpus <= size:
            size = kind.max_cpus
        available = engine.max_avail(balloon, now) - balloon.requested
        attributes = [
            ZoneAttribute("cpuset", _text(balloon.cpus)),
            ZoneAttribute("shared cpuset", _text(balloon.shared)),
            ZoneAttribute("excess cpus", f"{balloon.cpus.bit_count() * 1000 - balloon.requested}m"),
        ]
        if balloon.components:
            attributes.append(ZoneAttribute("component cpusets", component_cpusets(balloon)))
        zones.append(
            TopologyZone(
                name=balloon.name,
                type=ZONE_TYPE,
                resources=(ZoneResource("cpu", capacity, 1000 * size, available),),
                attributes=tuple(attributes),
            )
        )
        if kind.show_in_nrt:
            zones += _container_zones(engine, balloon, containers)
    return zones


def _container_zones(
    engine: Engine, balloon: Balloon, containers: Callable[[str], Container | None]
) -> list[TopologyZone]:
    out = []
    all_cpus = engine.resizer.tree.root.bits.bit_count()
    for member in balloon.members.values():
        ctr = containers(member.container_id)
        cpus = ctr.cpus if ctr is not None else None
        limit = ctr.requirements.cpu_limit if ctr is not None else None
        count = len(cpus) if cpus else all_cpus
        capacity = limit if limit and limit < 1000 * count else 1000 * count
        out.append(
            TopologyZone(
                name=member.label,
                type=CONTAINER_ZONE_TYPE,
                parent=balloon.name,
                resources=(ZoneResource("cpu", capacity, member.request, 0),),
                attributes=(
                    ZoneAttribute("cpuset", "" if cpus is None else str(cpus)),
                    ZoneAttribute(
                        "memory set", "" if ctr is None or ctr.mems is None else str(ctr.mems)
                    ),
                ),
            )
        )
    return out


def metrics(engine: Engine, memory: MemoryPlacer) -> list[MetricSample]:
    tree = engine.resizer.tree
    out = []
    for balloon in engine.balloons:
        kind = balloon.kind
        cpus = balloon.cpus
        allowed = cpus | balloon.shared
        numas = tree.names_at(Level.NUMA, cpus)
        dies = tree.names_at(Level.DIE, cpus)
        packages = tree.names_at(Level.PACKAGE, cpus)
        labels = {
            "balloon_type": kind.name,
            "cpu_class": kind.source.cpu_class or "",
            "cpus_min": str(kind.min_cpus),
            "cpus_max": str(kind.max_cpus),
            "balloon": balloon.name,
            "groups": ",".join(sorted(balloon.groups)),
            "cpus": _text(cpus),
            "cpus_count": str(cpus.bit_count()),
            "numas": ",".join(numas),
            "numas_count": str(len(numas)),
            "dies": ",".join(dies),
            "dies_count": str(len(dies)),
            "packages": ",".join(packages),
            "packages_count": str(len(packages)),
            "sharedidlecpus": _text(balloon.shared),
            "sharedidlecpus_count": str(balloon.shared.bit_count()),
            "cpus_allowed": _text(allowed),
            "cpus_allowed_count": str(allowed.bit_count()),
            "mems": _text(memory.nodes_of(allowed)),
            "containers": ",".join(sorted(m.label for m in balloon.members.values())),
            "tot_req_millicpu": str(balloon.requested),
        }
        out.append(MetricSample(METRIC, float(cpus.bit_count()), tuple(labels.items()), _HELP))
    return out


def describe_balloon(balloon: Balloon, memory: MemoryPlacer) -> dict[str, Any]:
    allowed = balloon.cpus | balloon.shared
    out: dict[str, Any] = {
        "name": balloon.name,
        "type": balloon.kind.name,
        "cpus": _text(balloon.cpus),
        "shared_idle_cpus": _text(balloon.shared),
        "mems": _text(memory.nodes_of(allowed)),
        "cpu_class": balloon.kind.cpu_class,
        "requested_mcpu": balloon.requested,
        "containers": sorted(m.label for m in balloon.members.values()),
    }
    if balloon.groups:
        out["groups"] = dict(sorted(balloon.groups.items()))
    if balloon.components:
        out["components"] = [describe_balloon(c, memory) for c in balloon.components]
    return out


def describe(engine: Engine, memory: MemoryPlacer, preserved: Mapping[str, str]) -> dict[str, Any]:
    catalog = engine.catalog
    return {
        "policy": "balloons",
        "allowed": _text(catalog.allowed),
        "reserved": _text(catalog.reserved),
        "free": _text(engine.free),
        "idle_cpu_class": catalog.idle_cpu_class,
        "balloons": [describe_balloon(b, memory) for b in engine.balloons],
        "preserved": sorted(preserved.values()),
    }
