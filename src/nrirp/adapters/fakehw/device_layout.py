"""Resolving the spec's PCI devices (topology hints) against the resolved CPUs and nodes."""

from __future__ import annotations

import re

from nrirp.adapters.fakehw.records import DeviceLayout, NodeLayout, Problems
from nrirp.adapters.fakehw.spec import DeviceSpec
from nrirp.domain.cpuset import CPUSet

_PCI = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")


def device_layout(
    devices: tuple[DeviceSpec, ...],
    nodes: list[NodeLayout],
    online: CPUSet,
    problems: Problems,
) -> list[DeviceLayout]:
    out: list[DeviceLayout] = []
    node_cpus = {n.id: n.cpus & online for n in nodes if n.cpus & online}
    seen_pci: dict[str, str] = {}
    seen_number: dict[tuple[str, int, int], str] = {}
    for index, d in enumerate(devices):
        path = f"$.devices[{index}]"
        before = len(problems.items)
        if not _PCI.fullmatch(d.pci):
            problems.add(f"{path}.pci", f"expected a PCI address like 0000:3b:00.0, got {d.pci!r}")
        elif d.pci in seen_pci:
            problems.add(f"{path}.pci", f"{d.pci} is already defined at {seen_pci[d.pci]}")
        seen_pci.setdefault(d.pci, path)
        if d.node != -1 and d.node not in node_cpus:
            problems.add(f"{path}.node", f"{d.node} is not a node with online CPUs (or -1)")
        cpus = d.cpus
        if cpus is None:
            cpus = node_cpus.get(d.node, online) if d.node != -1 else online
        elif not cpus or not cpus.issubset(online):
            problems.add(f"{path}.cpus", f"must be online CPUs, got {str(cpus)!r}")
        if d.path:
            if not d.path.startswith("/dev/") or d.path.endswith("/"):
                problems.add(f"{path}.path", f"expected a device node under /dev/, got {d.path!r}")
            if d.type not in ("c", "b"):
                problems.add(f"{path}.type", f"expected 'c' or 'b', got {d.type!r}")
            if d.major <= 0 or d.minor < 0:
                problems.add(
                    f"{path}.major", f"need major > 0 and minor >= 0, got {d.major}:{d.minor}"
                )
            number = (d.type, d.major, d.minor)
            if number in seen_number:
                problems.add(
                    f"{path}.minor", f"{d.major}:{d.minor} is already used at {seen_number[number]}"
                )
            seen_number.setdefault(number, path)
        elif (d.major, d.minor) != (0, 0):
            problems.add(f"{path}.path", "a device number needs the device node's path")
        if len(problems.items) == before:
            out.append(
                DeviceLayout(
                    pci=d.pci,
                    sysfs_dir=f"/devices/pci{d.pci[:7]}/{d.pci}",
                    node=d.node,
                    cpus=cpus,
                    path=d.path,
                    type=d.type,
                    major=d.major,
                    minor=d.minor,
                )
            )
    return out
