"""``nrirp explain --workload``: replay a workload (up to ``--step``), then explain one
container: the table and the JSON document, both policies, refusals, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nrirp.app.cli import main
from nrirp.app.commands.explain import EXIT_INPUT, EXIT_OK, EXIT_UNKNOWN
from nrirp.app.explain import EXPLAIN_FORMAT

WORKLOADS = Path(__file__).parents[2] / "examples" / "workloads"
TA = WORKLOADS / "topology-aware"
AFFINITY = [
    "--machine", "box-16", "--policy", "topology-aware",
    "--config", str(TA / "configs" / "box16-colocate-pods.yaml"),
    "--workload", str(TA / "affinity.yaml"),
]  # fmt: skip


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["explain", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def document(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == EXIT_OK, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_affinity_workload_explained_after_step_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, *AFFINITY, "--step", "2", "default/web/nginx")
    assert code == EXIT_OK, err
    lines = out.splitlines()
    assert lines[0] == f"after step 2 of 6 of {TA / 'affinity.yaml'}"
    assert "verdict:    placed: shared 200m in NUMA node #1" in out
    assert "won on item 2 (affinity) over socket #0" in out
    assert "pool: NUMA node #1: item 2 (affinity) 10 against 7.5 for socket #0" in out
    [decided] = [line for line in lines if line.startswith("  >")]
    assert decided.split()[1:3] == ["2", "affinity"] and "10" in decided.split()
    header = next(line for line in lines if "ITEM" in line)
    assert header.split()[:2] == ["ITEM", "BETTER"]  # which value wins each item
    assert header.split("BETTER")[1].split()[:3] == ["NUMA", "node", "#1"]  # the winner first
    assert decided.split()[3] == "higher"  # the higher affinity wins


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    data = document(capsys, *AFFINITY, "--step", "2", "web/nginx")
    assert data["format"] == EXPLAIN_FORMAT
    assert data["simulation"] == {"workload": str(TA / "affinity.yaml"), "step": 2, "steps": 6}
    # named as everywhere (docs/core.md): the container's namespace, pod and name
    assert (data["namespace"], data["pod"], data["container"]) == ("default", "web", "nginx")
    assert (data["policy"], data["verdict"]) == ("topology-aware", "placed")
    pool = next(s for s in data["stages"] if s["name"] == "pool")
    assert pool["winner"] == "NUMA node #1"
    assert pool["deciding"]["item"] == {
        "number": 2,
        "name": "affinity",
        "value": 10,
        "better": "higher",
    }
    assert pool["deciding"]["runner_up"] == "socket #0"
    chosen = [c for c in pool["candidates"] if c["standing"] == "chosen"]
    assert [c["name"] for c in chosen] == ["NUMA node #1"]
    assert [i["number"] for i in chosen[0]["items"]] == sorted(
        i["number"] for i in chosen[0]["items"]
    )


def first_container(workload: Path, *, refused: bool = False) -> tuple[int, str]:
    """The step and ``namespace/pod/name`` of the workload's first created container (of
    the first creation expected to fail, with ``refused``)."""
    from nrirp.app.simulator import load_workload

    for step in load_workload(str(workload)).steps:
        if step.kind == "createPod" and (not refused or step.expected_error):
            action: Any = step.action
            return step.number, f"{action.namespace}/{action.name}/{action.containers[0].name}"
    raise AssertionError(f"no such creation in {workload}")


def test_a_refused_container_in_a_workload(capsys: pytest.CaptureFixture[str]) -> None:
    """basics.yaml's refused creation: the explanation names what was short."""
    basics = TA / "basics.yaml"
    argv = ["--machine", "box-16", "--policy", "topology-aware"]
    argv += ["--config", str(TA / "configs" / "box16.yaml"), "--workload", str(basics)]
    step, name = first_container(basics, refused=True)
    data = document(capsys, *argv, "--step", str(step), name)
    assert data["verdict"] == "refused"
    assert data["shortage"].startswith("no pool has 14 exclusive CPUs")
    assert data["refusal"].startswith("create-container: no pool has 14")
    code, out, _ = run(capsys, *argv, "--step", str(step), name)
    assert code == EXIT_OK
    assert "verdict:    refused: no pool has 14 exclusive CPUs" in out
    assert "refused:    " in out


def test_balloons_workload(capsys: pytest.CaptureFixture[str]) -> None:
    workload = WORKLOADS / "balloons" / "basics.yaml"
    argv = ["--machine", "box-16", "--policy", "balloons", "--workload", str(workload)]
    argv += ["--config", str(WORKLOADS / "balloons" / "configs" / "basics.yaml")]
    step, name = first_container(workload)
    data = document(capsys, *argv, "--step", str(step), name)
    assert data["policy"] == "balloons" and data["verdict"] == "placed"
    names = [s["name"] for s in data["stages"]]
    assert names[:2] == ["request", "balloon type"]
    assert any(n.startswith("fill: ") for n in names) and names[-1] == "sizing"
    found = [s["winner"] for s in data["stages"] if s["name"].startswith("fill: ") and s["winner"]]
    assert len(found) == 1 and data["summary"].startswith(f"balloon {found[0]} of type ")


def test_a_balloons_fill_outcome_says_yes_and_no(capsys: pytest.CaptureFixture[str]) -> None:
    """A yes/no item that decided reads as the tables say it, not as Python's True/False."""
    argv = ["--machine", "box-16", "--policy", "balloons"]
    argv += ["--workload", str(WORKLOADS / "balloons" / "basics.yaml")]
    argv += ["--config", str(WORKLOADS / "balloons" / "configs" / "basics.yaml")]
    code, out, err = run(capsys, *argv, "--step", "5", "web/extra/app")
    assert code == 0, err
    outcome = "fill: balanced-inflate: web[1]: max free mCPU covers the request yes against no"
    assert f"{outcome} for web[0]" in out
    assert "True" not in out and "False" not in out


def test_unknown_container_and_bad_step(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, *AFFINITY, "--step", "1", "default/web/nginx")
    assert code == EXIT_UNKNOWN
    assert "no container 'default/web/nginx'" in err  # created at step 2
    code, _, err = run(capsys, *AFFINITY, "--step", "9", "x")
    assert code == EXIT_INPUT and "--step 9: the workload has steps 1 to 6" in err
    code, _, err = run(capsys, "--workload", str(TA / "affinity.yaml"), "x")
    assert code == EXIT_INPUT and "--policy is required" in err


def test_template_policy_decides_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    workload = WORKLOADS / "template-box16.yaml"
    argv = ["--machine", "box-16", "--policy", "template", "--workload", str(workload)]
    step, name = first_container(workload)
    data = document(capsys, *argv, "--step", str(step), name)
    assert data["verdict"] == "not-decided"
    assert data["summary"].startswith("the template policy decides nothing")


def test_a_template_subclass_that_places_is_not_explained_as_deciding_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = Path(__file__).parents[2] / "examples" / "policy_authoring"
    argv = [
        "--machine", "box-16", "--policy", "node-pin",
        "--policy-module", str(example / "node_pin.py"),
        "--workload", str(example / "workload.yaml"),
    ]  # fmt: skip
    data = document(capsys, *argv, "db/postgres")
    assert data["verdict"] == "not-explained"
    assert data["summary"] == "policy node-pin does not explain its decisions"


def test_a_failing_register_policies_exits_2_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    module = tmp_path / "boom.py"
    module.write_text("def register_policies(registry):\n    raise RuntimeError('boom')\n")
    workload = WORKLOADS / "template-box16.yaml"
    argv = ["--policy", "template", "--policy-module", str(module), "--workload", str(workload)]
    code, out, err = run(capsys, *argv, "x")
    assert code == EXIT_INPUT and out == ""
    assert err == f"nrirp explain: policy module {str(module)!r}: register_policies failed: boom\n"


def test_simulation_flags_without_a_workload_are_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = run(capsys, "--state-dir", str(tmp_path), "--step", "0", "x")
    assert (code, out) == (EXIT_INPUT, "")
    assert err == "nrirp explain: --step needs --workload (a daemon is asked about its state now)\n"
    code, _, err = run(capsys, "--policy", "template", "--machine", "box-16", "x")
    assert code == EXIT_INPUT
    assert err.startswith("nrirp explain: --policy, --machine need --workload")
