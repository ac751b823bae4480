"""The picture of a placement as SVG text: the machine's boxes, each CPU coloured by its pool
or balloon (background) and by the containers that may run on it (bands), memory nodes with
the memory placed on them, a legend, and what changed since the previous picture outlined.

The document is plain SVG 1.1 with no scripts and no external references. Elements carry
classes and ``data-*`` attributes (``g.cpu[data-cpus][data-containers]``,
``rect.stripe[data-container]``, ``g.memory[data-node]``, ``g.legend-container``) so that
tests and tools can read it back.
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from nrirp.app.pictures.layout import Box, CoreCell, MachineLayout, Scale, machine_layout
from nrirp.app.pictures.palette import FREE, Palette
from nrirp.app.pictures.scene import Changes, CpuState, MemoryUse, Scene, changes_between, scene_of
from nrirp.app.placement import Placement
from nrirp.domain.cpuset import CPUSet

MARGIN = 12.0
CHANGED = "#e4007c"
"""The outline of what changed since the previous picture."""
MAX_BANDS = 4
"""Container bands drawn in one CPU; more show as a grey "+N" band."""
LEGEND_ROWS = 150
"""Containers listed in the legend; the rest are counted."""
TOOLTIP_NAMES = 4
"""Containers named in a CPU's tooltip; the rest are counted."""
LEGEND_SET = 44
"""Longest CPU list shown in the legend (longer ones are cut with an ellipsis)."""
MORE = "#8a8a8a"


def _gib(size: int) -> str:
    value = size / (1 << 30)
    return f"{value:.2f}".rstrip("0").rstrip(".") + " GiB"


def memory_text(used: int, capacity: int) -> str:
    """``1.5 / 4 GiB``: the memory placed on a node and its size."""
    return f"{_gib(used).removesuffix(' GiB')} / {_gib(capacity)}"


def _attr(name: str, value: object) -> str:
    return f" {name}={quoteattr(str(value))}"


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


class _Svg:
    def __init__(self) -> None:
        self.parts: list[str] = []

    def add(self, text: str) -> None:
        self.parts.append(text)

    def rect(self, x: float, y: float, w: float, h: float, **attrs: object) -> None:
        extra = "".join(_attr(k.rstrip("_").replace("_", "-"), v) for k, v in attrs.items())
        self.add(f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}"{extra}/>')

    def text(self, x: float, y: float, content: str, **attrs: object) -> None:
        extra = "".join(_attr(k.rstrip("_").replace("_", "-"), v) for k, v in attrs.items())
        self.add(f'<text x="{_num(x)}" y="{_num(y)}"{extra}>{escape(content)}</text>')


def render_svg(
    placement: Placement,
    *,
    previous: Placement | None = None,
    palette: Palette | None = None,
    title: str = "",
    subtitle: str = "",
    layout: MachineLayout | None = None,
    ids: str = "",
) -> str:
    """The picture of ``placement`` (with ``previous``: what changed is outlined). Give the
    same ``palette`` to every picture of a series so that colours stay with their
    containers; ``layout`` may be reused for pictures of the same machine; ``ids`` prefixes
    the document's element ids (pictures sharing one HTML page need their own)."""
    palette = palette or Palette()
    layout = layout or machine_layout(placement.machine)
    scene = scene_of(placement)
    changes = changes_between(
        previous, scene_of(previous) if previous is not None else None, placement, scene
    )
    for c in placement.containers:  # colours in placement order, whatever is drawn first
        palette.container(c.label)
    picture = _Picture(placement, scene, changes, palette, layout, title, subtitle)
    picture.hatch = f"{ids}reserved-hatch"
    return picture.draw()


class _Picture:
    def __init__(
        self,
        placement: Placement,
        scene: Scene,
        changes: Changes,
        palette: Palette,
        layout: MachineLayout,
        title: str,
        subtitle: str,
    ) -> None:
        self.placement, self.scene, self.changes = placement, scene, changes
        self.palette, self.layout, self.scale = palette, layout, layout.scale
        self.title, self.subtitle = title, subtitle
        self.svg = _Svg()
        self.keys = {c.label: f"c{i}" for i, c in enumerate(placement.containers, start=1)}
        self.hatch = "reserved-hatch"
        """A short key per container: CPUs list the keys, the legend says whose they are."""

    # ------------------------------------------------------------------ the document
    def draw(self) -> str:
        header = 22.0 + (16.0 if self.subtitle else 0.0)
        width = max(self.layout.w, 760.0) + 2 * MARGIN
        body = _Svg()
        self.svg = body
        self._machine(MARGIN, header)
        legend_h = self._legend(MARGIN, header + self.layout.h + 14, width - 2 * MARGIN)
        height = header + self.layout.h + 14 + legend_h + MARGIN
        head = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" '
            f'height="{_num(height)}" viewBox="0 0 {_num(width)} {_num(height)}"'
            f"{_attr('class', 'nrirp-cpu-map')}{_attr('data-policy', self.placement.policy)}"
            f' font-family="DejaVu Sans, Verdana, sans-serif">',
            "<defs>"
            f'<pattern id="{self.hatch}" width="5" height="5" patternUnits="userSpaceOnUse" '
            'patternTransform="rotate(45)"><rect width="2" height="5" fill="#6b6b6b" '
            'fill-opacity="0.45"/></pattern></defs>',
            f'<rect class="background" width="{_num(width)}" height="{_num(height)}" '
            'fill="#ffffff"/>',
        ]
        title = _Svg()
        title.text(MARGIN, 17, self.title or f"policy {self.placement.policy}", **{
            "class": "title", "font_size": 15, "font_weight": "bold"
        })  # fmt: skip
        if self.subtitle:
            title.text(MARGIN, 33, self.subtitle, **{"class": "subtitle", "font_size": 11})
        return "\n".join([*head, *title.parts, *body.parts, "</svg>"]) + "\n"

    # ------------------------------------------------------------------ the machine
    def _machine(self, x0: float, y0: float) -> None:
        svg = self.svg
        svg.add(f'<g class="machine" transform="translate({_num(x0)},{_num(y0)})">')
        for top in self.layout.boxes:
            self._box(top)
        svg.add("</g>")

    def _box(self, box: Box) -> None:
        svg, scale = self.svg, self.scale
        data = "".join(_attr(f"data-{k}", v) for k, v in box.data.items())
        svg.add(f"<g{_attr('class', box.kind)}{data}>")
        if box.framed:
            fill = {"package": "#ffffff", "die": "#fbfbfb", "node": "#f7f9fc"}.get(
                box.kind, "#ffffff"
            )
            stroke = {"package": "#444444", "node": "#5a7fa8"}.get(box.kind, "#9a9a9a")
            svg.rect(box.x, box.y, box.w, box.h, **{
                "class": "frame", "fill": fill, "stroke": stroke, "stroke_width": 1, "rx": 3
            })  # fmt: skip
        if box.caption:
            svg.text(
                box.x + (scale.pad if box.framed else 0),
                box.y + (scale.pad if box.framed else 0) + scale.font,
                box.caption,
                **{"class": "caption", "font_size": scale.font, "fill": "#333333"},
            )
        cells = [c for c in box.children if isinstance(c, CoreCell)]
        if cells:
            self._cores(cells)
        for child in box.children:
            if isinstance(child, Box):
                self._box(child)
        if box.node is not None:
            self._memory(box)
        svg.add("</g>")

    def _cores(self, cores: Sequence[CoreCell]) -> None:
        scale, svg = self.scale, self.svg
        for core in cores:
            svg.rect(core.x, core.y, core.w, core.h, **{
                "class": "core", "fill": "none", "stroke": "#b5b5b5", "stroke_width": 0.6
            })  # fmt: skip
        if not scale.condensed:
            for core in cores:
                for i, cpu in enumerate(core.cpus):
                    x = core.x + 1 + i * scale.thread_w
                    self._cell(CPUSet.of(cpu), x, core.y + 1, scale.thread_w, label=str(cpu))
            return
        for run in _runs(cores, self.scene, self.changes):
            first, last = run[0], run[-1]
            if len(run) == 1 and len({self.scene.cpus[c] for c in first.cpus}) > 1:
                for i, cpu in enumerate(first.cpus):  # threads that differ: one cell each
                    x = first.x + 1 + i * scale.thread_w
                    self._cell(CPUSet.of(cpu), x, first.y + 1, scale.thread_w)
                continue
            cpus = CPUSet.from_ids(cpu for core in run for cpu in core.cpus)
            width = last.x + last.w - first.x - 2
            self._cell(cpus, first.x + 1, first.y + 1, width, joints=[c.x for c in run[1:]])

    def _cell(
        self,
        cpus: CPUSet,
        x: float,
        y: float,
        w: float,
        *,
        label: str = "",
        joints: Sequence[float] = (),
    ) -> None:
        """One CPU, or a run of CPUs in the same state (condensed pictures)."""
        svg, scale = self.svg, self.scale
        state = self.scene.cpus[cpus.min()]
        h = scale.thread_h
        classes = ["cpu"]
        changed = bool(cpus & self.changes.cpus)
        if changed:
            classes.append("changed")
        if state.reserved:
            classes.append("reserved")
        if state.isolated:
            classes.append("isolated")
        keys = " ".join(self.keys[label] for label in state.containers)
        svg.add(
            f"<g{_attr('class', ' '.join(classes))}{_attr('data-cpus', cpus)}"
            f"{_attr('data-group', state.group or '')}{_attr('data-containers', keys)}>"
        )
        svg.add(f"<title>{escape(self._tooltip(cpus, state))}</title>")
        fill = self._background(state)
        svg.rect(x, y, w, h, **{
            "class": "cell", "fill": fill, "stroke": "#8c8c8c", "stroke_width": 0.5
        })  # fmt: skip
        if state.reserved:
            svg.rect(x, y, w, h, **{"class": "reserved-mark", "fill": f"url(#{self.hatch})"})
        top = y + (11 if label else 2)
        self._bands(state.containers, x + 2, top, w - 4, y + h - 2 - top)
        if joints:
            path = "".join(f"M{_num(j - 1)},{_num(y)}v{_num(h)}" for j in joints)
            svg.add(f'<path class="joints" d="{path}" stroke="#ffffff" stroke-width="1"/>')
        if label:
            svg.text(x + w / 2, y + 9, label, **{
                "class": "cpu-id", "font_size": 8, "text_anchor": "middle", "fill": "#222222"
            })  # fmt: skip
        if state.isolated:
            svg.text(x + w - 2, y + h - 2, "i", **{
                "class": "isolated-mark", "font_size": 7, "text_anchor": "end", "fill": "#000000"
            })  # fmt: skip
        if changed:
            svg.rect(x - 1, y - 1, w + 2, h + 2, **{
                "class": "change", "fill": "none", "stroke": CHANGED, "stroke_width": 2
            })  # fmt: skip
        svg.add("</g>")

    def _background(self, state: CpuState) -> str:
        if state.group is None:
            return self.palette.group("", reserved=True) if state.reserved else FREE
        return self.palette.group(state.group, reserved=state.reserved)

    def _bands(self, labels: Sequence[str], x: float, y: float, w: float, h: float) -> None:
        if not labels or h <= 0:
            return
        shown = list(labels) if len(labels) <= MAX_BANDS else list(labels[: MAX_BANDS - 1])
        more = len(labels) - len(shown)
        count = len(shown) + (1 if more else 0)
        band = h / count
        for i, label in enumerate(shown):
            self.svg.rect(x, y + i * band, w, band, **{
                "class": "stripe", "data_container": label, "fill": self.palette.container(label)
            })  # fmt: skip
        if more:
            self.svg.rect(x, y + len(shown) * band, w, band, **{
                "class": "stripe more", "data_more": more, "fill": MORE
            })  # fmt: skip

    def _tooltip(self, cpus: CPUSet, state: CpuState) -> str:
        what = f"CPU {cpus}" if len(cpus) == 1 else f"CPUs {cpus}"
        parts = [what, state.group or ("reserved" if state.reserved else "free")]
        if state.isolated:
            parts.append("isolated")
        if state.containers:
            names = ", ".join(state.containers[:TOOLTIP_NAMES])
            more = len(state.containers) - TOOLTIP_NAMES
            parts.append(names + (f" and {more} more" if more > 0 else ""))
        return " · ".join(parts)

    # ------------------------------------------------------------------ memory
    def _memory(self, box: Box) -> None:
        assert box.node is not None
        svg, scale = self.svg, self.scale
        node = box.node
        use = self.scene.memory[node]
        pad = scale.pad
        x, w = box.x + pad, box.w - 2 * pad
        y = box.y + box.h - pad - scale.memory_bar - scale.font - 2
        changed = node in self.changes.nodes
        svg.add(
            f"<g{_attr('class', 'memory changed' if changed else 'memory')}"
            f"{_attr('data-node', node)}{_attr('data-capacity', use.capacity)}"
            f"{_attr('data-used', use.used)}>"
        )
        svg.add(f"<title>{escape(self._memory_tooltip(node, use))}</title>")
        svg.rect(x, y, w, scale.memory_bar, **{
            "class": "memory-bar", "fill": "#ececec", "stroke": "#8c8c8c", "stroke_width": 0.5
        })  # fmt: skip
        cursor = x
        for label, size in use.by_container:
            part = w * min(size / use.capacity, 1.0) if use.capacity else 0.0
            part = min(part, x + w - cursor)
            if part > 0:
                svg.rect(cursor, y, part, scale.memory_bar, **{
                    "class": "memory-use",
                    "data_container": label,
                    "data_bytes": size,
                    "fill": self.palette.container(label),
                })  # fmt: skip
            cursor += part
        text = memory_text(use.used, use.capacity)
        svg.text(x, y + scale.memory_bar + scale.font, text, **{
            "class": "memory-text", "font_size": scale.font - 1, "fill": "#333333"
        })  # fmt: skip
        if changed:
            svg.rect(x - 1, y - 1, w + 2, scale.memory_bar + 2, **{
                "class": "change", "fill": "none", "stroke": CHANGED, "stroke_width": 2
            })  # fmt: skip
        svg.add("</g>")

    def _memory_tooltip(self, node: int, use: MemoryUse) -> str:
        placed = ", ".join(f"{label} {_gib(size)}" for label, size in use.by_container)
        return f"node {node}: {_gib(use.used)} of {_gib(use.capacity)}" + (
            f" · {placed}" if placed else ""
        )

    # ------------------------------------------------------------------ legend
    def _legend(self, x0: float, y0: float, width: float) -> float:
        svg = self.svg
        placement, changes = self.placement, self.changes
        rows: list[tuple[str, str, str, dict[str, str]]] = []
        shown_groups = {s.group for s in self.scene.cpus.values() if s.group}
        for g in placement.groups:
            if g.name not in shown_groups and not g.members:
                continue
            colour = self.palette.group(g.name, reserved=g.type == "reserved")
            text = (
                f"{g.name} ({g.type or g.kind}) · cpus {_cut(g.cpus)} · mems {_cut(g.mems)}"
                f" · {len(g.members)} container{'s' if len(g.members) != 1 else ''}"
            )
            if g.kind == "balloon" and g.shared_cpus:  # its bands on CPUs it does not hold
                text += f" · also on idle cpus {_cut(g.shared_cpus)}"
            rows.append(("legend-group", colour, text, {"data-group": g.name}))
        if any(s.reserved for s in self.scene.cpus.values()):
            rows.append(("legend-key", f"url(#{self.hatch})", "reserved CPUs", {}))
        listed = placement.containers[:LEGEND_ROWS]
        for c in listed:
            mark = " (new)" if c.label in changes.new else ""
            mark = " (moved)" if c.label in changes.moved else mark
            cpus = "any CPU" if c.cpus is None else f"cpus {_cut(c.cpus)}"
            mems = "any node" if c.mems is None else f"mems {_cut(c.mems)}"
            memory = f" · memory {_gib(c.memory)}" if c.memory else ""
            group = f" · in {c.group}" if c.group else ""
            text = f"{c.label}{mark} · {cpus} · {mems}{memory}{group}"
            colour = self.palette.container(c.label)
            extra = {
                "data-container": c.label,
                "data-key": self.keys[c.label],
                "data-colour": colour,
            }
            rows.append(("legend-container", colour, text, extra))
        if len(placement.containers) > len(listed):
            rest = len(placement.containers) - len(listed)
            rows.append(("legend-more", MORE, f"... and {rest} more containers", {}))
        if changes.gone:
            rows.append(("legend-gone", "#ffffff", "removed: " + ", ".join(changes.gone), {}))
        if changes.cpus or changes.nodes:
            rows.append(("legend-key", CHANGED, "outlined: changed since the previous step", {}))
        columns = 2 if width >= 900 and len(rows) > 8 else 1
        per_column = -(-len(rows) // columns) if rows else 0
        column_w = width / columns
        fits = max(int((column_w - 24) / (10.5 * 0.6)), 20)  # characters of a row's text
        rows = [(k, c, t if len(t) <= fits else t[: fits - 1] + "…", e) for k, c, t, e in rows]
        svg.add('<g class="legend">')
        for i, (kind, colour, text, extra) in enumerate(rows):
            x = x0 + (i // per_column) * column_w if per_column else x0
            y = y0 + (i % per_column) * 16 if per_column else y0
            data = "".join(_attr(k, v) for k, v in extra.items())
            svg.add(f"<g{_attr('class', kind)}{data}>")
            stroke = "#666666" if kind != "legend-key" or colour != CHANGED else CHANGED
            fill = colour if kind != "legend-key" or colour != CHANGED else "none"
            svg.rect(x, y, 12, 12, **{"fill": fill, "stroke": stroke, "stroke_width": 1})
            svg.text(x + 17, y + 10, text, **{"font_size": 10.5, "fill": "#222222"})
            svg.add("</g>")
        svg.add("</g>")
        return per_column * 16.0


def _cut(cpus: CPUSet) -> str:
    text = str(cpus) or "(empty)"
    return text if len(text) <= LEGEND_SET else text[: LEGEND_SET - 1] + "…"


def _runs(cores: Sequence[CoreCell], scene: Scene, changes: Changes) -> list[list[CoreCell]]:
    """Consecutive cores of one row whose threads all show the same, merged (condensed)."""

    def state(core: CoreCell) -> object:
        states = {scene.cpus[c] for c in core.cpus}
        changed = {c in changes.cpus for c in core.cpus}
        return (tuple(states), tuple(changed)) if len(states) == 1 and len(changed) == 1 else None

    runs: list[list[CoreCell]] = []
    for core in cores:
        if runs:
            last = runs[-1][-1]
            key = state(core)
            if key is not None and last.y == core.y and key == state(last):
                runs[-1].append(core)
                continue
        runs.append([core])
    return runs


__all__ = ["Scale", "render_svg"]
