"""docs/policy-authoring.md stays true: its snippets are the example's code, the example's own
tests pass when run as a policy author runs them (pytest with the installed plugin), and its
workload replays with every check holding."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from nrirp.app.cli import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "policy_authoring"
DOC = REPO / "docs" / "policy-authoring.md"


def test_every_snippet_is_the_examples_code() -> None:
    sources = "\n".join(p.read_text() for p in sorted(EXAMPLE.glob("*.py")))
    snippets = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.DOTALL)
    assert len(snippets) >= 8
    for snippet in snippets:
        assert snippet in sources, snippet


def test_the_examples_tests_pass_as_an_author_runs_them(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(EXAMPLE)],
        cwd=tmp_path,  # outside the repository: the fixtures come from the installed plugin
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "7 passed" in done.stdout


def test_the_examples_workload_replays_as_expected(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "simulate", "--machine", "box-16", "--policy", "node-pin",
            "--policy-module", str(EXAMPLE / "node_pin.py"),
            "--workload", str(EXAMPLE / "workload.yaml"),
        ]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert out.count("expect: ") == 4 and "EXPECT FAILED" not in out
    # each decision gives its real reason: kube-system's node is the system node
    assert "(node 0: the system node, for namespace kube-system)" in out
    assert "(node 1: the least loaded allowed node)" in out


def test_the_docstring_loads_the_example_for_nrirp_run_as_it_can() -> None:
    doc = (EXAMPLE / "node_pin.py").read_text().split('"""')[1]
    assert "``NRIRP_POLICY_MODULES=examples/policy_authoring/node_pin.py``" in doc
    assert "(``nrirp run``, which has no ``--policy-module``)" in doc
    with pytest.raises(SystemExit) as info:  # indeed it has none
        main(["run", "--policy", "node-pin", "--policy-module", "node_pin.py"])
    assert info.value.code == 2
