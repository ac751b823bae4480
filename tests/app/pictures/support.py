"""Reading pictures back: the SVG as XML, what each CPU shows, the legend's colours."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator

import attrs

from nrirp.domain.cpuset import CPUSet

SVG = "{http://www.w3.org/2000/svg}"


def classes(element: ET.Element) -> set[str]:
    return set(element.get("class", "").split())


def elements(root: ET.Element, tag: str, cls: str) -> Iterator[ET.Element]:
    for e in root.iter(SVG + tag):
        if cls in classes(e):
            yield e


@attrs.frozen
class Cpu:
    """A ``g.cpu`` element: one CPU, or a run of CPUs in the same state (condensed)."""

    cpus: CPUSet
    group: str
    containers: tuple[str, ...]
    """Keys (``c1``, ...) of the containers that may run there."""
    classes: frozenset[str]
    fill: str
    stripes: tuple[tuple[str, str], ...]
    """``(container label, fill)`` of each band."""


@attrs.frozen
class Picture:
    root: ET.Element
    cpus: tuple[Cpu, ...]
    legend: dict[str, tuple[str, str]]
    """Container label -> (key, colour) from the legend."""
    groups: dict[str, str]
    """Group name -> colour from the legend."""

    def key(self, label: str) -> str:
        return self.legend[label][0]

    def colour(self, label: str) -> str:
        return self.legend[label][1]

    def cpus_of(self, label: str) -> CPUSet:
        """The CPUs whose element lists the container."""
        key = self.key(label)
        out = CPUSet()
        for cpu in self.cpus:
            if key in cpu.containers:
                out |= cpu.cpus
        return out

    def drawn(self) -> list[int]:
        """Every CPU drawn, as often as drawn."""
        return [c for cpu in self.cpus for c in cpu.cpus]

    def count(self, tag: str, cls: str) -> int:
        return sum(1 for _ in elements(self.root, tag, cls))


def read(svg: str) -> Picture:
    root = ET.fromstring(svg)
    assert root.tag == SVG + "svg" and "nrirp-cpu-map" in classes(root)
    cpus = []
    for g in elements(root, "g", "cpu"):
        cell = next(e for e in g if "cell" in classes(e))
        stripes = tuple(
            (s.get("data-container", "+"), s.get("fill", "")) for s in g if "stripe" in classes(s)
        )
        cpus.append(
            Cpu(
                cpus=CPUSet.parse(g.get("data-cpus", "")),
                group=g.get("data-group", ""),
                containers=tuple(g.get("data-containers", "").split()),
                classes=frozenset(classes(g)),
                fill=cell.get("fill", ""),
                stripes=stripes,
            )
        )
    legend = {
        g.get("data-container", ""): (g.get("data-key", ""), g.get("data-colour", ""))
        for g in elements(root, "g", "legend-container")
    }
    groups = {}
    for g in elements(root, "g", "legend-group"):
        swatch = next(g.iter(SVG + "rect"))
        groups[g.get("data-group", "")] = swatch.get("fill", "")
    return Picture(root, tuple(cpus), legend, groups)
