"""A placement as JSON-ready data and back, e.g. for a status endpoint whose client draws it.

The machine is the ``nrirp hardware --json`` document (``nrirp.hardware/v1``); the rest is the
policy, its reserved CPUs, its groups and the containers, CPU sets in Linux list syntax.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.app.commands.common.hardware_report import machine_document
from nrirp.app.placement.model import Group, PlacedContainer, Placement
from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.topology import (
    CPU,
    CacheGroup,
    CacheType,
    CoreType,
    Machine,
    MemoryType,
    NumaNode,
    TopologyError,
)

FORMAT = "nrirp.placement/v1"


class PlacementDocumentError(ValueError):
    """A placement document that cannot be read; the message names the path."""


def _set(value: CPUSet | None) -> str | None:
    return None if value is None else str(value)


def placement_document(placement: Placement, source: str = "") -> dict[str, Any]:
    """``placement`` as JSON-ready data (``source``: where the machine came from)."""
    return {
        "format": FORMAT,
        "policy": placement.policy,
        "reserved": str(placement.reserved),
        "machine": _machine_document(placement.machine, source),
        "groups": [
            {
                "name": g.name,
                "kind": g.kind,
                "type": g.type,
                "cpus": str(g.cpus),
                "mems": str(g.mems),
                "shared_cpus": str(g.shared_cpus),
                "reserved_cpus": str(g.reserved_cpus),
                "parent": g.parent,
                "members": list(g.members),
                "nested": g.nested,
            }
            for g in placement.groups
        ],
        "containers": [
            {
                "id": c.id,
                "namespace": c.namespace,
                "pod": c.pod,
                "name": c.name,
                "cpus": _set(c.cpus),
                "mems": _set(c.mems),
                "memory": c.memory,
                "group": c.group,
                "qos": c.qos,
            }
            for c in placement.containers
        ],
    }


_last_machine: tuple[Machine, str, dict[str, Any]] | None = None


def _machine_document(machine: Machine, source: str) -> dict[str, Any]:
    """The machine's document, made once for the machine last asked about (a daemon asks
    about one machine all its life; a big one takes tens of milliseconds to describe)."""
    global _last_machine
    last = _last_machine
    if last is not None and last[0] is machine and last[1] == source:
        return last[2]
    document = machine_document(machine, source)
    _last_machine = (machine, source, document)
    return document


class _Reader:
    """Typed access to a JSON document, failing with the path of a bad value."""

    def __init__(self, data: Any, path: str) -> None:
        if not isinstance(data, Mapping):
            raise PlacementDocumentError(f"{path}: expected an object")
        self.data, self.path = data, path

    def _get(self, key: str, kinds: tuple[type, ...], what: str, optional: bool) -> Any:
        value = self.data.get(key)
        if value is None and optional:
            return None
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise PlacementDocumentError(f"{self.path}.{key}: expected {what}, got {value!r}")
        return value

    def text(self, key: str, optional: bool = False) -> Any:
        return self._get(key, (str,), "a string", optional)

    def number(self, key: str, optional: bool = False) -> Any:
        return self._get(key, (int,), "an integer", optional)

    def flag(self, key: str) -> bool:
        return bool(self._get(key, (bool,), "true or false", True))

    def cpus(self, key: str, optional: bool = False) -> CPUSet | None:
        text = self.text(key, optional)
        if text is None:
            return None
        try:
            return CPUSet.parse(text)
        except ValueError as exc:
            raise PlacementDocumentError(f"{self.path}.{key}: {exc}") from None

    def items(self, key: str) -> list[_Reader]:
        value = self._get(key, (list,), "a list", True) or []
        return [_Reader(v, f"{self.path}.{key}[{i}]") for i, v in enumerate(value)]

    def strings(self, key: str) -> tuple[str, ...]:
        value = self._get(key, (list,), "a list", True) or []
        if not all(isinstance(v, str) for v in value):
            raise PlacementDocumentError(f"{self.path}.{key}: expected a list of strings")
        return tuple(value)


def placement_from_document(data: Any) -> Placement:
    """The placement :func:`placement_document` wrote. Raises
    :class:`PlacementDocumentError` naming the path of the first bad value."""
    doc = _Reader(data, "$")
    if doc.text("format") != FORMAT:
        raise PlacementDocumentError(f"$.format: expected {FORMAT!r}, got {doc.data['format']!r}")
    groups = tuple(
        Group(
            name=g.text("name"),
            kind=g.text("kind"),
            type=g.text("type", True) or "",
            cpus=g.cpus("cpus") or EMPTY,
            mems=g.cpus("mems", True) or EMPTY,
            shared_cpus=g.cpus("shared_cpus", True) or EMPTY,
            reserved_cpus=g.cpus("reserved_cpus", True) or EMPTY,
            parent=g.text("parent", True),
            members=g.strings("members"),
            nested=g.flag("nested"),
        )
        for g in doc.items("groups")
    )
    containers = tuple(
        PlacedContainer(
            id=c.text("id"),
            namespace=c.text("namespace"),
            pod=c.text("pod"),
            name=c.text("name"),
            cpus=c.cpus("cpus", True),
            mems=c.cpus("mems", True),
            memory=c.number("memory", True),
            group=c.text("group", True),
            qos=c.text("qos", True) or "",
        )
        for c in doc.items("containers")
    )
    return Placement(
        machine=machine_from_document(doc.data.get("machine")),
        policy=doc.text("policy"),
        groups=groups,
        containers=containers,
        reserved=doc.cpus("reserved", True) or EMPTY,
    )


def machine_from_document(data: Any) -> Machine:
    """The machine of an ``nrirp hardware --json`` document (``nrirp.hardware/v1``)."""
    doc = _Reader(data, "$.machine")
    try:
        cpus = [
            CPU(
                id=c.number("id"),
                package_id=c.number("package"),
                die_id=c.number("die"),
                cluster_id=c.number("cluster"),
                core_id=c.number("core"),
                node_id=c.number("node"),
                core_type=CoreType(c.text("core_type")),
                base_frequency_khz=c.number("base_frequency_khz", True),
                max_frequency_khz=c.number("max_frequency_khz", True),
                epp=c.text("epp", True),
            )
            for c in doc.items("cpu_details")
        ]
        nodes = []
        for n in doc.items("nodes"):
            distances = n.data.get("distances") or {}
            nodes.append(
                NumaNode(
                    id=n.number("id"),
                    cpus=n.cpus("cpus") or EMPTY,
                    memory_bytes=n.number("memory_bytes"),
                    memory_type=MemoryType(n.text("memory_type")),
                    distances={int(k): int(v) for k, v in distances.items()},
                )
            )
        caches = [
            CacheGroup(
                level=g.number("level"),
                type=CacheType(g.text("type")),
                id=g.number("id"),
                cpus=g.cpus("cpus") or EMPTY,
                size_bytes=g.number("size_bytes", True),
            )
            for g in doc.items("caches")
        ]
        return Machine.build(cpus, nodes, caches, doc.cpus("isolated", True) or EMPTY)
    except (TopologyError, ValueError, AttributeError) as exc:
        if isinstance(exc, PlacementDocumentError):
            raise
        raise PlacementDocumentError(f"$.machine: {exc}") from None
