"""A policy's ``describe()`` as :class:`Group` values: the pools of ``topology-aware`` (a
tree), the balloons of ``balloons`` (composite balloons with their components), nothing for
policies without either."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.app.placement.model import Group
from nrirp.domain.cpuset import EMPTY, CPUSet


def _cpus(value: Any) -> CPUSet:
    return CPUSet.parse(value) if isinstance(value, str) and value else EMPTY


def groups_from_description(
    description: Mapping[str, Any],
) -> tuple[tuple[Group, ...], dict[str, str]]:
    """The groups a description lists, and which group holds each container id where the
    description says (pools list their grants by container id; balloons by label only)."""
    groups: list[Group] = []
    by_id: dict[str, str] = {}
    pools = description.get("pools")
    if isinstance(pools, list):
        for pool in pools:
            if isinstance(pool, Mapping):
                group, ids = _pool(pool)
                groups.append(group)
                by_id.update(dict.fromkeys(ids, group.name))
    balloons = description.get("balloons")
    if isinstance(balloons, list):
        for balloon in balloons:
            if isinstance(balloon, Mapping):
                groups += _balloon(balloon)
    return tuple(groups), by_id


def reserved_cpus(description: Mapping[str, Any], groups: tuple[Group, ...] = ()) -> CPUSet:
    """The CPUs a policy reserves for system work: ``reserved`` in its description, and the
    CPUs of its balloons of the ``reserved`` type."""
    reserved = _cpus(description.get("reserved"))
    for group in groups:
        if group.kind == "balloon" and group.type == "reserved":
            reserved |= group.cpus
    return reserved


def grant_label(container_id: Any, grant: Any) -> str:
    """``namespace/pod/container`` of a pool's grant (``describe()["pools"][i]["grants"]``,
    keyed by container id): from its ``namespace``, ``pod`` and ``container`` (the name), or,
    described before those keys, its ``container`` (then the label); the id when neither."""
    if not isinstance(grant, Mapping):
        return str(container_id)
    name = grant.get("container", container_id)
    if "pod" not in grant:  # the former form: "container" was the label
        return str(name)
    if not grant["pod"]:  # a container of no known pod: named by itself, as policies do
        return str(name)
    return f"{grant.get('namespace', '')}/{grant['pod']}/{name}"


def _pool(data: Mapping[str, Any]) -> tuple[Group, list[str]]:
    grants = data.get("grants")
    grants = grants if isinstance(grants, Mapping) else {}
    labels = [grant_label(cid, g) for cid, g in grants.items()]
    parent = data.get("parent")
    group = Group(
        name=str(data.get("name", "")),
        kind=str(data.get("kind", "pool")),
        cpus=_cpus(data.get("cpus")),
        mems=_cpus(data.get("mems")),
        shared_cpus=_cpus(data.get("shared")),
        reserved_cpus=_cpus(data.get("reserved")),
        parent=None if parent is None else str(parent),
        members=tuple(sorted(labels)),
        nested=True,
    )
    return group, [str(cid) for cid in grants]


def _balloon(data: Mapping[str, Any], parent: str | None = None) -> list[Group]:
    containers = data.get("containers")
    name = str(data.get("name", ""))
    group = Group(
        name=name,
        kind="balloon",
        cpus=_cpus(data.get("cpus")),
        mems=_cpus(data.get("mems")),
        shared_cpus=_cpus(data.get("shared_idle_cpus")),
        parent=parent,
        members=tuple(sorted(str(c) for c in containers)) if isinstance(containers, list) else (),
        type=str(data.get("type", "")),
    )
    out = [group]
    components = data.get("components")
    if isinstance(components, list):
        for component in components:
            if isinstance(component, Mapping):
                out += _balloon(component, name)
    return out
