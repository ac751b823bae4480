"""Where each part of the machine goes in a picture: packages, dies, NUMA nodes (their share
of a die), last-level cache groups, clusters of cores sharing a mid-level cache, cores and
their threads, as nested boxes with positions. Pure geometry; nothing is drawn here.

Big machines are drawn condensed: smaller cells without CPU numbers (``Scale``).
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheGroup, CacheType, Core, Machine

CONDENSE_ABOVE = 512
"""Machines with more CPUs than this are drawn condensed."""
MAX_WIDTH = 1400.0
"""Packages go side by side while the row stays narrower than this."""


@attrs.frozen
class Scale:
    """The sizes of one drawing mode (pixels)."""

    condensed: bool
    thread_w: float
    thread_h: float
    core_gap: float
    pad: float
    caption: float
    cores_per_row: int
    font: float
    memory_bar: float


NORMAL = Scale(False, 24, 28, 4, 6, 15, 8, 10, 9)
CONDENSED = Scale(True, 6, 10, 2, 4, 12, 8, 9, 6)


def scale_for(machine: Machine) -> Scale:
    return CONDENSED if len(machine.online) > CONDENSE_ABOVE else NORMAL


@attrs.define
class CoreCell:
    """A core: its threads side by side, in id order."""

    core: Core
    cpus: tuple[int, ...]
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0


@attrs.define
class Box:
    """A framed part of the machine with a caption, holding boxes or cores in rows."""

    kind: str
    """``package``, ``die``, ``node``, ``cache``, ``cluster``, ``memory-node`` or ``group``."""
    caption: str
    data: dict[str, str]
    children: list[Box | CoreCell] = attrs.field(factory=list)
    per_row: int = 0
    """Children per row (0: all in one row)."""
    node: int | None = None
    """The NUMA node whose memory bar this box shows, if any."""
    framed: bool = True
    x: float = 0
    y: float = 0
    w: float = 0
    h: float = 0

    def walk(self) -> list[Box | CoreCell]:
        out: list[Box | CoreCell] = [self]
        for child in self.children:
            out += child.walk() if isinstance(child, Box) else [child]
        return out


@attrs.define
class MachineLayout:
    """The machine's boxes, top-level first, and the whole drawing's size."""

    scale: Scale
    boxes: list[Box]
    w: float
    h: float

    def cores(self) -> list[CoreCell]:
        return [c for box in self.boxes for c in box.walk() if isinstance(c, CoreCell)]

    def all_boxes(self) -> list[Box]:
        return [b for box in self.boxes for b in box.walk() if isinstance(b, Box)]


def _size(value: int | None) -> str:
    if not value:
        return ""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if value >= factor:
            return f" · {value / factor:g} {unit}"
    return f" · {value} B"


def _last_level(machine: Machine) -> int:
    levels = [g.level for g in machine.caches if g.type is CacheType.UNIFIED]
    return max(levels, default=0)


def _cache_key(machine: Machine, cpu: int, level: int) -> CacheGroup | None:
    return machine.cache_of(cpu, level) if level else None


def _clusters(machine: Machine, cores: Sequence[Core], llc: int) -> list[list[Core]]:
    """Cores grouped by a cache below the last level that several of them share (hybrid
    parts' E-core clusters); other cores stand alone."""
    groups: dict[object, list[Core]] = {}
    for core in cores:
        key: object = ("core", core.package_id, core.id)
        first = core.cpus.min()
        for g in machine.caches_of_cpu(first):
            if g.type is CacheType.UNIFIED and 1 < g.level < llc and not g.cpus <= core.cpus:
                key = (g.level, g.id)
                break
        groups.setdefault(key, []).append(core)
    return list(groups.values())


def _core_cell(machine: Machine, core: Core) -> CoreCell:
    return CoreCell(core, tuple(core.cpus))


def _cache_box(
    machine: Machine, scale: Scale, group: CacheGroup | None, cores: Sequence[Core], llc: int
) -> Box:
    children: list[Box | CoreCell] = []
    for cluster in _clusters(machine, cores, llc):
        if len(cluster) > 1:
            g = next(
                g
                for g in machine.caches_of_cpu(cluster[0].cpus.min())
                if g.type is CacheType.UNIFIED and 1 < g.level < llc
            )
            children.append(
                Box(
                    "cluster",
                    "" if scale.condensed else f"L{g.level}",
                    {"level": str(g.level), "cache": str(g.id)},
                    [_core_cell(machine, c) for c in cluster],
                    per_row=scale.cores_per_row,
                )
            )
        else:
            children.append(_core_cell(machine, cluster[0]))
    if group is None:
        return Box("cache", "", {}, children, per_row=scale.cores_per_row, framed=False)
    caption = f"L{group.level} #{group.id}" + ("" if scale.condensed else _size(group.size_bytes))
    return Box(
        "cache",
        caption,
        {"level": str(group.level), "cache": str(group.id)},
        children,
        per_row=scale.cores_per_row,
    )


def _section(
    machine: Machine, scale: Scale, cpus: CPUSet, node_id: int, first: bool, llc: int
) -> Box:
    """The part of NUMA node ``node_id`` in one die: its cache groups and, once per node,
    its memory."""
    node = machine.nodes[node_id]
    by_cache: dict[object, tuple[CacheGroup | None, list[Core]]] = {}
    seen: set[tuple[int, int]] = set()
    for cpu in cpus:
        core = machine.core_of(cpu)
        key = (core.package_id, core.id)
        if key in seen:
            continue
        seen.add(key)
        cache = _cache_key(machine, cpu, llc)
        entry = by_cache.setdefault(None if cache is None else (cache.level, cache.id), (cache, []))
        entry[1].append(core)
    caches = [_cache_box(machine, scale, g, cores, llc) for g, cores in by_cache.values()]
    caption = f"node {node_id}" + ("" if first else " (continued)")
    if first and not scale.condensed:
        caption += f" · {node.memory_type.value.upper()}{_size(node.memory_bytes)}"
    return Box(
        "node",
        caption,
        {"node": str(node_id), "cpus": str(cpus)},
        list(caches),
        per_row=2 if len(caches) > 2 else 0,
        node=node_id if first else None,
    )


def machine_layout(machine: Machine, scale: Scale | None = None) -> MachineLayout:
    """The boxes of ``machine``, placed."""
    scale = scale or scale_for(machine)
    llc = _last_level(machine)
    drawn_nodes: set[int] = set()
    packages: list[Box] = []
    for package in machine.packages.values():
        dies: list[Box | CoreCell] = []
        for die in machine.dies_of_package(package.id):
            sections: list[Box | CoreCell] = []
            for node_id in sorted({machine.node_of(c) for c in die.cpus}):
                cpus = die.cpus & machine.node_cpus(node_id)
                sections.append(
                    _section(machine, scale, cpus, node_id, node_id not in drawn_nodes, llc)
                )
                drawn_nodes.add(node_id)
            several = len(package.dies) > 1
            dies.append(
                Box(
                    "die",
                    f"die {die.id}" if several else "",
                    {"die": str(die.id)},
                    sections,
                    framed=several,
                )
            )
        packages.append(
            Box(
                "package",
                f"package {package.id} · CPUs {package.cpus}",
                {"package": str(package.id)},
                dies,
            )
        )
    boxes = list(packages)
    memory_only = [
        Box(
            "memory-node",
            f"node {n.id}" + (f" · {n.memory_type.value.upper()}{_size(n.memory_bytes)}"),
            {"node": str(n.id)},
            node=n.id,
        )
        for n in machine.nodes.values()
        if not n.cpus
    ]
    for package_box in packages:
        _measure(package_box, scale)
    widest = max((b.w for b in packages), default=1.0)
    per_row = max(1, min(len(packages), int(MAX_WIDTH // (widest + scale.pad))))
    if per_row > 2 and len(packages) > per_row:
        per_row = 2 if len(packages) % 2 == 0 else per_row  # an even grid where one fits
    rows: list[Box | CoreCell] = [
        Box("packages", "", {}, list(packages), per_row=per_row, framed=False)
    ]
    if memory_only:
        group = Box("group", "memory-only nodes", {}, list(memory_only), per_row=6)
        boxes.append(group)
        rows.append(group)
    top = Box("machine", "", {}, rows, per_row=1, framed=False)
    _measure(top, scale)
    _place(top, scale, 0, 0)
    return MachineLayout(scale, boxes, top.w, top.h)


def _measure(item: Box | CoreCell, scale: Scale) -> None:
    if isinstance(item, CoreCell):
        item.w = len(item.cpus) * scale.thread_w + 2
        item.h = scale.thread_h + 2
        return
    for child in item.children:
        _measure(child, scale)
    gap = scale.core_gap if _holds_cores(item) else scale.pad
    rows = _rows(item)
    inner_w = max((sum(c.w for c in row) + gap * (len(row) - 1) for row in rows), default=0)
    inner_h = sum(max(c.h for c in row) for row in rows) + gap * max(len(rows) - 1, 0)
    pad = scale.pad if item.framed else 0
    caption = scale.caption if item.caption else 0
    memory = (scale.memory_bar + scale.font + 4) if item.node is not None else 0
    item.w = max(inner_w + 2 * pad, _caption_width(item.caption, scale) + 2 * pad)
    item.h = caption + inner_h + memory + 2 * pad


def _caption_width(text: str, scale: Scale) -> float:
    return len(text) * scale.font * 0.6


def _holds_cores(box: Box) -> bool:
    return any(isinstance(c, CoreCell) for c in box.children)


def _rows(box: Box) -> list[list[Box | CoreCell]]:
    per_row = box.per_row or max(len(box.children), 1)
    return [box.children[i : i + per_row] for i in range(0, len(box.children), per_row)]


def _place(item: Box | CoreCell, scale: Scale, x: float, y: float) -> None:
    if isinstance(item, CoreCell):
        item.x, item.y = x, y
        return
    item.x, item.y = x, y
    pad = scale.pad if item.framed else 0
    gap = scale.core_gap if _holds_cores(item) else scale.pad
    cy = y + pad + (scale.caption if item.caption else 0)
    for row in _rows(item):
        cx = x + pad
        for child in row:
            _place(child, scale, cx, cy)
            cx += child.w + gap
        cy += max(c.h for c in row) + gap
