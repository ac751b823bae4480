"""Every example workload that carries ``expect:`` checks passes them, replayed with the
command its header comment gives (``# nrirp simulate --machine ... --workload ...``)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from nrirp.app.cli import main
from nrirp.app.commands.simulate import EXIT_OK

REPO = Path(__file__).parents[2]
WORKLOADS = REPO / "examples" / "workloads"
_PATH_FLAGS = {"--machine", "--config", "--config-file", "--workload"}


def header_command(workload: Path) -> list[str]:
    """The arguments of the ``nrirp simulate`` command in the workload's first comment lines
    (continued with backslashes); paths made absolute (from the repository, else from the
    workload's directory)."""
    lines = []
    for line in workload.read_text().splitlines():
        if not line.startswith("#"):
            break
        lines.append(line.lstrip("#").strip())
    text = " ".join(lines).replace("\\ ", " ")
    start = text.index("nrirp simulate ") + len("nrirp simulate ")
    words = shlex.split(text[start:].split("#")[0])
    args = []
    for flag, value in zip(words[::2], words[1::2], strict=False):
        if not flag.startswith("--"):
            break
        if flag in _PATH_FLAGS and (value.endswith((".yaml", ".yml")) or "/" in value):
            from_repo, beside = REPO / value, workload.parent / value
            value = str(from_repo if from_repo.exists() else beside)
        args += [flag, value]
    return args


def checked_workloads() -> list[Path]:
    return sorted(p for p in WORKLOADS.rglob("*.yaml") if "\n    expect:" in p.read_text())


def test_there_are_checked_workloads() -> None:
    names = {p.name for p in checked_workloads()}
    assert {"core-kinds.yaml", "memory-equidistant.yaml", "no-numa.yaml"} <= names


@pytest.mark.parametrize("workload", checked_workloads(), ids=lambda p: p.name)
def test_the_checks_of_an_example_workload_hold(
    capsys: pytest.CaptureFixture[str], workload: Path
) -> None:
    args = header_command(workload)
    assert "--workload" in args and "--policy" in args, args
    code = main(["simulate", *args, "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    failed = [
        (step["number"], check["subject"], check["problems"])
        for step in doc["steps"]
        for check in step["checks"]
        if not check["ok"]
    ]
    assert failed == [], failed
    assert code == EXIT_OK, err
    assert sum(len(step["checks"]) for step in doc["steps"]) > 0
