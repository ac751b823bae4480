"""A series of pictures (the steps of a replay): each frame's SVG drawn against the one
before it with one palette, as files in a directory or one HTML page."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence

import attrs

from nrirp.app.pictures.layout import machine_layout
from nrirp.app.pictures.palette import Palette
from nrirp.app.pictures.svg import render_svg
from nrirp.app.placement import Placement


@attrs.frozen
class Frame:
    """One picture of a series: what it shows, a title and a caption, and whether its step
    went as expected (with the errors when not)."""

    title: str
    caption: str
    placement: Placement
    ok: bool = True
    errors: tuple[str, ...] = ()


def render_frames(frames: Sequence[Frame]) -> list[str]:
    """Each frame's SVG: what changed since the frame before is outlined, and a container
    keeps its colour through the series."""
    palette = Palette()
    out: list[str] = []
    layout = None
    previous: Placement | None = None
    for number, frame in enumerate(frames, start=1):
        if layout is None or previous is None or previous.machine != frame.placement.machine:
            layout = machine_layout(frame.placement.machine)
        out.append(
            render_svg(
                frame.placement,
                previous=previous,
                palette=palette,
                title=frame.title,
                subtitle=frame.caption,
                layout=layout,
                ids=f"step-{number}-",
            )
        )
        previous = frame.placement
    return out


def frame_file_names(count: int) -> list[str]:
    """``step-001.svg``, ... (numbers wide enough for ``count`` and sorted as text)."""
    width = max(3, len(str(count)))
    return [f"step-{n:0{width}d}.svg" for n in range(1, count + 1)]


_FRAME_FILE = re.compile(r"step-\d{3,}\.svg")


def write_svg_files(frames: Sequence[Frame], directory: str) -> list[str]:
    """One SVG file per frame in ``directory`` (created if missing); the paths written.
    Frames of an earlier series in the directory (``step-NNN.svg`` files not written now,
    e.g. a longer replay's) are removed, so the directory holds this series only."""
    os.makedirs(directory, exist_ok=True)
    names = frame_file_names(len(frames))
    paths = []
    for name, svg in zip(names, render_frames(frames), strict=True):
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as out:
            out.write(svg)
        paths.append(path)
    for stale in sorted(set(os.listdir(directory)) - set(names)):
        if _FRAME_FILE.fullmatch(stale) and os.path.isfile(os.path.join(directory, stale)):
            os.unlink(os.path.join(directory, stale))
    return paths
