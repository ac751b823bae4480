"""One self-contained HTML page with every picture of a series: a slider (and the arrow
keys) steps through them, a list of the steps jumps to one; without scripts the pictures are
simply listed one after the other. Nothing is loaded from anywhere: styles, script and
pictures (inline SVG) are all in the page."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from nrirp.app.pictures.frames import Frame, render_frames

_STYLE = """
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 0; color: #222; }
header { position: sticky; top: 0; background: #f3f5f8; border-bottom: 1px solid #c8ced6;
  padding: 8px 14px; z-index: 1; }
header h1 { font-size: 17px; margin: 0 0 6px 0; }
.controls { display: flex; align-items: center; gap: 8px; }
.controls input[type=range] { flex: 1; max-width: 640px; }
.controls .position { min-width: 90px; font-size: 13px; }
main { display: flex; align-items: flex-start; }
nav { width: 300px; flex: none; font-size: 12px; padding: 8px; max-height: calc(100vh - 80px);
  overflow-y: auto; position: sticky; top: 70px; }
nav ol { padding-left: 30px; margin: 0; }
nav li { margin: 2px 0; }
nav a { color: #1f4e8c; text-decoration: none; }
nav li.current a { font-weight: bold; color: #000; }
nav li.unexpected a { color: #b00020; }
.frames { flex: 1; padding: 8px; overflow-x: auto; }
figure { margin: 0 0 24px 0; }
figcaption { font-size: 13px; margin-bottom: 4px; }
figcaption .errors { color: #b00020; }
.js figure { display: none; }
.js figure.current { display: block; }
.controls button { display: none; }
.js .controls button { display: inline-block; }
.controls input { display: none; }
.js .controls input { display: inline-block; }
"""

_SCRIPT = """
(function () {
  document.body.classList.add("js");
  var frames = document.querySelectorAll("figure.frame");
  var items = document.querySelectorAll("nav li");
  var slider = document.getElementById("step");
  var position = document.getElementById("position");
  function show(n) {
    n = Math.max(1, Math.min(frames.length, n));
    for (var i = 0; i < frames.length; i++) {
      frames[i].classList.toggle("current", i === n - 1);
      items[i].classList.toggle("current", i === n - 1);
    }
    slider.value = n;
    position.textContent = "step " + n + " of " + frames.length;
    if (history.replaceState) { history.replaceState(null, "", "#step-" + n); }
  }
  slider.addEventListener("input", function () { show(parseInt(slider.value, 10)); });
  document.getElementById("prev").addEventListener("click", function () {
    show(parseInt(slider.value, 10) - 1);
  });
  document.getElementById("next").addEventListener("click", function () {
    show(parseInt(slider.value, 10) + 1);
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "ArrowLeft") { show(parseInt(slider.value, 10) - 1); }
    if (event.key === "ArrowRight") { show(parseInt(slider.value, 10) + 1); }
  });
  for (var i = 0; i < items.length; i++) {
    items[i].querySelector("a").addEventListener("click", (function (n) {
      return function (event) { event.preventDefault(); show(n); };
    })(i + 1));
  }
  var start = /^#step-(\\d+)$/.exec(location.hash);
  show(start ? parseInt(start[1], 10) : 1);
})();
"""


def render_html(frames: Sequence[Frame], title: str) -> str:
    """The page of ``frames`` (at least one), titled ``title``."""
    if not frames:
        raise ValueError("a page needs at least one picture")
    pictures = render_frames(frames)
    items = []
    figures = []
    for n, (frame, svg) in enumerate(zip(frames, pictures, strict=True), start=1):
        state = "" if frame.ok else ' class="unexpected"'
        items.append(f'<li{state}><a href="#step-{n}">{escape(frame.title)}</a></li>')
        errors = "".join(f'<div class="errors">{escape(e)}</div>' for e in frame.errors)
        caption = f"<figcaption>{errors}</figcaption>" if errors else ""
        figures.append(
            f'<figure class="frame" id="step-{n}" data-step="{n}">{caption}\n{svg}</figure>'
        )
    count = len(frames)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>",
            f'<header><h1>{escape(title)}</h1><div class="controls">',
            '<button id="prev" type="button" title="previous step (left arrow)">&#9664;</button>',
            f'<input id="step" type="range" min="1" max="{count}" value="1" aria-label="step">',
            '<button id="next" type="button" title="next step (right arrow)">&#9654;</button>',
            f'<span class="position" id="position">{count} steps</span></div></header>',
            f"<main><nav><ol>{''.join(items)}</ol></nav>",
            f'<section class="frames">{"".join(figures)}</section></main>',
            f"<script>{_SCRIPT}</script></body></html>",
            "",
        ]
    )
