"""Pictures of where a policy put everything (``docs/pictures.md``): the machine's packages,
dies, NUMA nodes, cache groups, cores and threads, each CPU coloured by its pool or balloon
and by its containers, memory nodes with the memory placed on them, and what changed since
the previous picture outlined.

- :func:`render_svg`: one :class:`~nrirp.app.placement.Placement` as SVG text.
- :class:`Frame`, :func:`render_frames`, :func:`write_svg_files`, :func:`render_html`: a series
  (the steps of ``nrirp simulate``) as SVG files or one self-contained HTML page.
- :func:`nrirp.app.pictures.replay.replay_frames`: the frames of a simulator replay
  (imported from there: the simulator is not loaded otherwise).
"""

from nrirp.app.pictures.frames import Frame, render_frames, write_svg_files
from nrirp.app.pictures.html import render_html
from nrirp.app.pictures.palette import Palette
from nrirp.app.pictures.svg import render_svg

__all__ = ["Frame", "Palette", "render_frames", "render_html", "render_svg", "write_svg_files"]
