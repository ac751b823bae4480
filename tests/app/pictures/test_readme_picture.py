"""The README's picture is what the code draws now (``tools/readme_picture.py`` redraws it)."""

from __future__ import annotations

import runpy
from pathlib import Path

ROOT = Path(__file__).parents[3]


def test_the_readme_picture_is_current() -> None:
    tool = runpy.run_path(str(ROOT / "tools" / "readme_picture.py"))
    assert tool["main"](["--check"]) == 0, "run: .venv/bin/python tools/readme_picture.py"
    readme = (ROOT / "README.md").read_text()
    assert "](docs/pictures/topology-aware-basics.svg)" in readme
