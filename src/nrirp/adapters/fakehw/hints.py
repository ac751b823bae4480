"""Topology hints without sysfs: a fixed table, or the devices of a machine spec."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from nrirp.adapters.fakehw.records import Layout
from nrirp.domain.cpuset import EMPTY, CPUSet
from nrirp.domain.model import Container
from nrirp.domain.topology.hints import HintOrigin, TopologyHint


class FakeTopologyHints:
    """The ``TopologyHintSource`` port from a table ``path -> hint``.

    A container gets the hint of each device whose ``path`` and each mount whose ``source``
    is in the table, keyed by the hint's provider, with ``origin`` and ``path`` filled in.
    Mounts are looked at before devices and the first hint of a provider is kept, as
    :class:`~nrirp.adapters.sysfs.SysfsTopologyHints` does.
    """

    def __init__(self, table: Mapping[str, TopologyHint] | None = None) -> None:
        self.table = dict(table or {})

    @classmethod
    def from_layout(cls, layout: Layout) -> FakeTopologyHints:
        """What :class:`~nrirp.adapters.sysfs.SysfsTopologyHints` finds in the tree
        ``write_sysfs(layout, ...)`` writes: each device under its node path and its sysfs
        directory (``/sys/devices/pci0000:3b/0000:3b:00.0``)."""
        return cls(device_hints(layout))

    def hints(self, container: Container) -> dict[str, TopologyHint]:
        found: dict[str, TopologyHint] = {}
        for mount in container.mounts:
            self._add(found, mount.source, HintOrigin.MOUNTS)
        for device in container.devices:
            self._add(found, device.path, HintOrigin.DEVICES)
        return found

    def _add(self, found: dict[str, TopologyHint], path: str, origin: HintOrigin) -> None:
        hint = self.table.get(path)
        if hint is not None and hint.provider not in found:
            found[hint.provider] = attrs.evolve(hint, origin=origin, path=path)


def device_hints(layout: Layout) -> dict[str, TopologyHint]:
    """``path -> hint`` for the layout's devices (by node path and by sysfs directory)."""
    table: dict[str, TopologyHint] = {}
    for d in layout.devices:
        provider = "/sys" + d.sysfs_dir
        nodes = CPUSet.of(d.node) if d.node >= 0 else EMPTY
        hint = TopologyHint(provider, cpus=d.cpus, nodes=nodes)
        table[provider] = hint
        if d.path:
            table[d.path] = hint
    return table
