"""Every YAML file under examples/ says what its text says: no value is cut short by a `` #``
that YAML reads as the start of a comment (``note: node #3 is left`` is the note "node")."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from nrirp.app.simulator.workload import load_workload

REPO = Path(__file__).parents[2]
EXAMPLES = sorted(p for p in (REPO / "examples").rglob("*") if p.suffix in {".yaml", ".yml"})
WORKLOADS = sorted(
    p for p in (REPO / "examples" / "workloads").rglob("*.yaml") if "\nsteps:" in p.read_text()
)
_GLUED_COMMENT = re.compile(r" #\S")  # "node #3": a word, not a comment someone meant
_NOTE_LINE = re.compile(r"^\s*(?:- )?note: (.*)$")


def _scalars(node: yaml.Node) -> Iterator[yaml.ScalarNode]:
    if isinstance(node, yaml.ScalarNode):
        yield node
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _scalars(item)
    elif isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield from _scalars(key)
            yield from _scalars(value)


def cut_values(text: str) -> list[str]:
    """Unquoted values followed on their line by a comment glued to a word (``#3``), as
    ``line: value | comment``."""
    lines = text.splitlines()
    found = []
    for document in yaml.compose_all(text, Loader=yaml.SafeLoader):
        if document is None:
            continue
        for scalar in _scalars(document):
            if scalar.style is not None:  # quoted or a block scalar: '#' is text there
                continue
            end = scalar.end_mark
            rest = lines[end.line][end.column :] if end.line < len(lines) else ""
            if _GLUED_COMMENT.match(rest):
                found.append(f"{end.line + 1}: {scalar.value} | {rest.strip()}")
    return found


def test_the_check_finds_a_cut_note() -> None:
    text = "steps:\n  - note: 3 CPUs - node #3 is left\n    deletePod: {name: x}\n"
    assert cut_values(text) == ["2: 3 CPUs - node | #3 is left"]
    assert cut_values(text.replace("note: 3 CPUs - node #3 is left", 'note: "node #3"')) == []
    assert cut_values("a: 1  # a comment\nb: {c: 2}  #tight\n") == []


def test_there_are_examples() -> None:
    assert len(EXAMPLES) > 20 and len(WORKLOADS) > 10


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_no_value_is_cut_by_a_comment(path: Path) -> None:
    assert cut_values(path.read_text()) == []


@pytest.mark.parametrize("path", WORKLOADS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_note_of_a_workload_reads_as_written(path: Path) -> None:
    notes = {step.note for step in load_workload(str(path)).steps}
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        match = _NOTE_LINE.match(line)
        if match is None or match.group(1).startswith((">", "|")):
            continue
        written = match.group(1).strip()
        if written.startswith(('"', "'")):
            written = yaml.safe_load(written)
        assert written in notes, f"{path.name}:{number}: the note reads {sorted(notes)}"
