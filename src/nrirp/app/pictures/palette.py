"""Colours: one per container and one per pool or balloon, stable across the steps of a
replay (a container keeps its colour from its first picture to its last)."""

from __future__ import annotations

import colorsys

# saturated, distinguishable on a pastel background (containers)
_CONTAINERS = (
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf",
    "#bcbd22", "#393b79", "#ad494a", "#637939", "#8c6d31", "#7b4173", "#3182bd", "#e6550d",
    "#31a354", "#756bb1", "#636363", "#843c39",
)  # fmt: skip
# light tints (pools and balloons: the background of their CPUs)
_GROUPS = (
    "#cfe3f7", "#fde0c5", "#d5f0d0", "#f3d4ea", "#fff3b0", "#dcd6f7", "#c9efec", "#f7d7d2",
    "#e6eec8", "#eadfd2",
)  # fmt: skip
RESERVED = "#d4d4d4"
"""The background of CPUs reserved for system work (and of a ``reserved`` balloon)."""
FREE = "#fafafa"
"""The background of CPUs no pool or balloon holds."""


def _generated(index: int, lightness: float, saturation: float) -> str:
    hue = (index * 0.618033988749895) % 1.0  # golden ratio: hues spread evenly, never repeat
    r, g, b = colorsys.hls_to_rgb(hue, lightness, saturation)
    return f"#{round(r * 255):02x}{round(g * 255):02x}{round(b * 255):02x}"


class Palette:
    """Hands out colours in order of first use; the same name always gets the same colour."""

    def __init__(self) -> None:
        self._containers: dict[str, str] = {}
        self._groups: dict[str, str] = {}

    def container(self, label: str) -> str:
        """The colour of container ``namespace/pod/name``."""
        colour = self._containers.get(label)
        if colour is None:
            n = len(self._containers)
            colour = _CONTAINERS[n] if n < len(_CONTAINERS) else _generated(n, 0.42, 0.7)
            self._containers[label] = colour
        return colour

    def group(self, name: str, *, reserved: bool = False) -> str:
        """The background colour of pool or balloon ``name`` (grey for a reserved one)."""
        if reserved:
            return RESERVED
        colour = self._groups.get(name)
        if colour is None:
            n = len(self._groups)
            colour = _GROUPS[n] if n < len(_GROUPS) else _generated(n, 0.88, 0.6)
            self._groups[name] = colour
        return colour
