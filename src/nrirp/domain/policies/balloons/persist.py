"""What survives a restart: the balloons (policy data) and each container's place (tags).

The reference keeps no balloon state and decides every container afresh after a restart;
here the balloons are saved with the snapshot, so a restart with the same configuration takes
every balloon and container back exactly, and sends no update. Saved state that does not fit
(another configuration, CPUs gone) is dropped and everything is decided afresh, as the
reference does.

Policy data: ``{"version": 1, "config": <digest>, "initially_free": <cpus>, "balloons":
[{"type", "index", "cpus", "components": [...]}, ...]}`` (it changes only when balloons do).
Tags: ``balloons.balloon`` (the balloon's name), ``balloons.memory``
(``<order>:<preferred nodes>:<zone>`` of accounted memory), ``balloons.cpu-class`` (the CPU
class last asked of the host controller).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from typing import Any

from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.policies.balloons.balloon import Balloon
from nrirp.domain.policies.balloons.engine import Engine
from nrirp.domain.policies.balloons.pinning import MemoryRecord

TAG_BALLOON = "balloons.balloon"
TAG_MEMORY = "balloons.memory"
TAG_CPU_CLASS = "balloons.cpu-class"
VERSION = 1


class SavedStateError(Exception):
    """Saved balloons that cannot be taken back (the message says why)."""


def digest(config_text: str) -> str:
    """A short, stable fingerprint of a configuration's text form."""
    return hashlib.sha256(config_text.encode()).hexdigest()[:20]


def export(engine: Engine, config: str) -> dict[str, Any]:
    return {
        "version": VERSION,
        "config": config,
        "initially_free": str(CPUSet(engine.initially_free)),
        "balloons": [_balloon(b) for b in engine.balloons],
    }


def _balloon(balloon: Balloon) -> dict[str, Any]:
    out: dict[str, Any] = {"type": balloon.kind.name, "index": balloon.index}
    if balloon.components:
        out["components"] = [_balloon(c) for c in balloon.components]
    else:
        out["cpus"] = str(CPUSet(balloon.cpus))
    return out


def restore(engine: Engine, data: Any, config: str) -> None:
    """Rebuild the saved balloons in ``engine`` (which must have none); raises
    :class:`SavedStateError` when they do not fit its configuration and CPUs."""
    if not isinstance(data, Mapping) or data.get("version") != VERSION:
        raise SavedStateError("no saved balloons of this version")
    if data.get("config") != config:
        raise SavedStateError("the saved balloons are of another configuration")
    items = data.get("balloons")
    if not isinstance(items, list):
        raise SavedStateError("no list of balloons")
    used = 0
    balloons: list[Balloon] = []
    for item in items:
        balloon = _restore_one(engine, item, None)
        if any(b.kind is balloon.kind and b.index == balloon.index for b in balloons):
            raise SavedStateError(f"balloon {balloon.name} is saved twice")
        for leaf in balloon.leaves():
            if leaf.cpus & used:
                raise SavedStateError(f"balloon {balloon.name} shares CPUs with another")
            used |= leaf.cpus
        balloons.append(balloon)
    if used & ~engine.catalog.allowed:
        raise SavedStateError(f"CPUs {CPUSet(used & ~engine.catalog.allowed)} are not available")
    for kind in engine.catalog.kinds:
        count = sum(1 for b in balloons if b.kind is kind)
        if count < kind.min_balloons or (kind.max_balloons and count > kind.max_balloons):
            raise SavedStateError(f"{count} balloons of type {kind.name}")
    try:
        initially_free = CPUSet.parse(str(data.get("initially_free", ""))).bits
    except CPUSetError as exc:
        raise SavedStateError(str(exc)) from None
    engine.balloons = balloons
    engine.free = engine.catalog.allowed & ~used
    engine.initially_free = initially_free & engine.catalog.allowed
    for balloon in balloons:
        engine.dirty[balloon] = "restored"


def _restore_one(engine: Engine, item: Any, parent: Balloon | None) -> Balloon:
    if not isinstance(item, Mapping):
        raise SavedStateError("a saved balloon is not a mapping")
    kind = engine.catalog.by_name.get(str(item.get("type")))
    index = item.get("index")
    if kind is None or not isinstance(index, int) or index < 0:
        raise SavedStateError(f"unknown balloon {item.get('type')!r}[{index!r}]")
    balloon = Balloon(kind, index, parent=parent)
    components = item.get("components")
    if kind.components:
        if not isinstance(components, list) or not components:
            raise SavedStateError(f"composite balloon {balloon.name} saved without components")
        for part in components:
            component = _restore_one(engine, part, balloon)
            if component.kind.name not in kind.components:
                raise SavedStateError(f"{component.name} is no component of {kind.name}")
            balloon.components.append(component)
        for leaf in balloon.leaves():
            balloon.cpus |= leaf.cpus
        for part in balloon.walk():
            if part.components:
                part.cpus = 0
                for leaf in part.leaves():
                    part.cpus |= leaf.cpus
        return balloon
    try:
        balloon.cpus = CPUSet.parse(str(item.get("cpus", ""))).bits
    except CPUSetError as exc:
        raise SavedStateError(str(exc)) from None
    size = balloon.cpus.bit_count()
    if size < kind.min_cpus or (kind.max_cpus > 0 and size > kind.max_cpus):
        raise SavedStateError(f"balloon {balloon.name} has {size} CPUs")
    return balloon


def memory_tag(record: MemoryRecord | None) -> str:
    if record is None:
        return ""
    return f"{record.order}:{_nodes_text(record.preferred)}:{_nodes_text(record.zone)}"


@functools.lru_cache(maxsize=1024)
def _nodes_text(bits: int) -> str:
    """A node set's text (a handful of distinct zones, rendered once)."""
    return str(CPUSet(bits))


def parse_memory_tag(text: str) -> MemoryRecord | None:
    parts = text.split(":")
    if len(parts) != 3:
        return None
    try:
        order = int(parts[0])
        preferred = CPUSet.parse(parts[1]).bits
        zone = CPUSet.parse(parts[2]).bits
    except (ValueError, CPUSetError):
        return None
    if not zone or not preferred:
        return None
    return MemoryRecord(zone=zone, preferred=preferred, order=order)


def find_balloon(engine: Engine, name: str) -> Balloon | None:
    for balloon in engine.balloons:
        if balloon.name == name:
            return balloon
    return None
