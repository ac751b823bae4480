"""docs/simulated-runtime.md stays true: its example runs, its option table is complete."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from nrirp.simruntime import RuntimeOptions

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulated-runtime.md"


def test_the_quick_start_example_runs() -> None:
    text = DOC.read_text()
    quick_start = text.split("## Quick start", 1)[1]
    code = re.search(r"```python\n(.*?)```", quick_start, re.S)
    assert code is not None
    namespace: dict[str, object] = {"__name__": "quick_start"}
    exec(compile(code.group(1), str(DOC), "exec"), namespace)  # asserts inside the example


def test_every_option_is_documented() -> None:
    text = DOC.read_text()
    table = text.split("### Options", 1)[1].split("###", 1)[0]
    documented = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", table, re.M))
    names = {name for pair in documented for name in pair if name}
    assert names == {field.name for field in attrs.fields(RuntimeOptions)}
