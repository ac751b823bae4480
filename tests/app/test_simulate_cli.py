"""``nrirp simulate`` through the CLI: the example workloads, the table, the JSON document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nrirp.app.cli import main
from nrirp.app.commands.simulate import (
    EXIT_HARDWARE,
    EXIT_INPUT,
    EXIT_OK,
    EXIT_START,
    EXIT_STEPS,
)
from nrirp.domain.cpuset import CPUSet

EXAMPLES = Path(__file__).parents[2] / "examples"
WORKLOADS = EXAMPLES / "workloads"
EXCLUSIVE = str(EXAMPLES / "policies" / "exclusive_cpus.py")
TEMPLATE_WORKLOAD = str(WORKLOADS / "template-box16.yaml")
EXCLUSIVE_WORKLOAD = str(WORKLOADS / "exclusive-cpus.yaml")
EXCLUSIVE_ARGS = ["--policy", "exclusive-cpus", "--policy-module", EXCLUSIVE]


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def document(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, *argv, "--json")
    assert code == EXIT_OK, err
    data: dict[str, Any] = json.loads(out)
    return data


def table_rows(block: str) -> dict[str, list[str]]:
    """``namespace/pod/container`` -> the table cells after the marker, from one step's block."""
    rows: dict[str, list[str]] = {}
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("POD "))
    for line in lines[start + 1 :]:
        if not line.startswith("  ") or not line.strip():
            break
        cells = line[6:].split()
        rows[f"{cells[0]}/{cells[1]}"] = cells[2:]
    return rows


def step_blocks(out: str) -> list[str]:
    return out.split("\nStep ")[1:]


def test_template_on_box16_shows_what_kubelet_asked(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys, "--machine", "box-16", "--policy", "template", "--workload", TEMPLATE_WORKLOAD
    )
    assert code == EXIT_OK
    header = out.splitlines()[:3]
    assert header[0].startswith(f"Workload {TEMPLATE_WORKLOAD}: three QoS classes")
    assert header[1] == (
        "Policy template (default config) on fake machine box-16 (cpus 0-15, nodes 0-3); "
        "simulated runtime NRI v0.12.2"
    )
    blocks = step_blocks(out)
    assert len(blocks) == 6
    assert "decision:" not in out  # the template policy decides nothing
    rows = table_rows(blocks[2])  # after the three pods
    #                      STATE      QOS           CPUS   MEMS SHARES  QUOTA            MEMORY
    assert rows == {
        "prod/web/app": ["running", "Burstable", "-", "-", "512", "100000/100000", "256", "MiB"],
        "prod/web/log-shipper": ["running", "Burstable", "-", "-", "102", "-", "-"],
        "prod/db/postgres": [
            *("running", "Guaranteed", "2-3", "-", "2048", "200000/100000", "1", "GiB"),
        ],
        "default/scratch/shell": ["running", "BestEffort", "-", "-", "2", "-", "-"],
    }
    resized = table_rows(blocks[3])["prod/web/app"]
    assert resized[4:] == ["1024", "200000/100000", "512", "MiB"]
    assert "\n  *   prod/web" in blocks[3]  # marked as changed
    assert "default/scratch/shell" in table_rows(blocks[4])
    assert "default/scratch/shell" not in table_rows(blocks[5])
    assert out.rstrip().endswith("6 steps: 0 failed")


def test_exclusive_example_table(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(
        capsys, "--machine", "box-16", *EXCLUSIVE_ARGS, "--workload", EXCLUSIVE_WORKLOAD
    )
    assert code == EXIT_OK, err
    blocks = step_blocks(out)
    assert table_rows(blocks[1])["shop/db/postgres"][:4] == ["running", "Guaranteed", "0-3", "0"]
    assert table_rows(blocks[1])["shop/frontend/nginx"][2] == "4-15"
    assert "  decision: shop/db/postgres cpus=0-3 mems=0 (4 exclusive CPUs)" in blocks[1]
    assert "  result: FAILED (as expected)\n" in blocks[3]
    assert "  result: FAILED (as expected)\n    reservedResources.cpus: unknown field" in blocks[6]
    assert out.rstrip().endswith("11 steps: 3 failed (steps 4, 7, 8); all as expected")
    assert err == ""  # component logs stay quiet at the default level


def test_json_document_schema(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(capsys, "--machine", "box-16", *EXCLUSIVE_ARGS, "--workload", EXCLUSIVE_WORKLOAD)
    assert list(doc) == [
        "format",
        "workload",
        "policy",
        "config_file",
        "hardware",
        "nri_version",
        "start_notices",
        "steps",
        "summary",
    ]
    assert doc["format"] == "nrirp.simulate/v1" and doc["policy"] == "exclusive-cpus"
    assert doc["workload"]["source"] == EXCLUSIVE_WORKLOAD
    assert doc["hardware"] == {"source": "fake machine box-16", "cpus": "0-15", "nodes": "0-3"}
    assert doc["summary"] == {"steps": 11, "failed": 3, "unexpected": 0}
    step = doc["steps"][1]
    assert list(step) == [
        "number",
        "kind",
        "description",
        "note",
        "ok",
        "errors",
        "expected_error",
        "as_expected",
        "unmet_expectation",
        "decisions",
        "notices",
        "pods",
        "containers",
        "balloons",
        "pools",
        "checks",
        "state_shown",
        "host",
    ]
    assert step["balloons"] == [] and step["pools"] == []  # the policy has neither
    assert step["host"]["cpu_classes"] == [] and step["host"]["files"] == {}  # none here
    assert step["checks"] == []  # the step has no expect checks
    assert (step["number"], step["kind"], step["ok"]) == (2, "createPod", True)
    assert step["description"] == "create pod shop/db (Guaranteed; container postgres)"
    assert step["decisions"][0] == {
        "operation": "create-container",
        "namespace": "shop",
        "pod": "db",
        "container": "postgres",
        "container_id": step["containers"][2]["id"],
        "cpus": "0-3",
        "mems": "0",
        "reason": "4 exclusive CPUs",
        "ok": True,
    }
    pod = step["pods"][1]
    assert set(pod) == {"namespace", "name", "uid", "id", "qos", "cgroup_parent", "state"}
    assert pod["cgroup_parent"] == f"/kubepods/pod{pod['uid']}" and pod["state"] == "ready"
    postgres = step["containers"][2]
    assert postgres == {
        "namespace": "shop",
        "pod": "db",
        "name": "postgres",
        "id": postgres["id"],
        "state": "running",
        "qos": "Guaranteed",
        "cpus": "0-3",
        "mems": "0",
        "cpu_shares": 4096,
        "cpu_quota": 400000,
        "cpu_period": 100000,
        "memory_limit": 2 << 30,
        "oom_score_adj": -997,
        "change": "new",
        "decided": {"cpus": "0-3", "mems": "0"},
        "matches_decision": True,
        "pool": None,
        "scheduling": None,
        "io_priority": None,
        "applied_by": None,
        "rdt_class": None,
        "blockio_class": None,
    }
    assert len(postgres["id"]) == 64
    refused = doc["steps"][3]
    assert refused["ok"] is False and refused["as_expected"] is True
    assert refused["expected_error"] == "cannot give crunch 12 exclusive CPUs"
    assert refused["notices"][0]["severity"] == "error"
    assert set(refused["notices"][0]) == {"source", "severity", "message", "container_id"}
    # the same workload gives the same document (ids and uids are deterministic)
    again = document(
        capsys, "--machine", "box-16", *EXCLUSIVE_ARGS, "--workload", EXCLUSIVE_WORKLOAD
    )
    assert again == doc


def test_unexpected_failures_exit_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text("- deletePod: {name: nope}\n- sleep: 0s\n")
    code, out, _ = run(
        capsys, "--machine", "box-16", "--policy", "none", "--workload", str(workload)
    )
    assert code == EXIT_STEPS
    assert "result: FAILED\n    no pod sandbox default/nope" in out
    assert out.rstrip().endswith("2 steps: 1 failed (step 1); 1 not as expected (step 1)")


SMALL = "- createPod: {name: p, containers: [{name: c}]}\n"


def test_a_check_that_does_not_hold_exits_1_with_the_difference(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        SMALL
        + "  expect:\n    - {container: p/c, cpus: 0-3}\n    - {container: p/c, state: running}\n"
    )
    argv = ["--machine", "box-16", "--policy", "template", "--workload", str(workload)]
    code, out, _ = run(capsys, *argv)
    assert code == EXIT_STEPS
    assert "  EXPECT FAILED: 1 of 2 checks\n" in out
    assert "    [1] container default/p/c cpus: not restricted (all), expected 0-3\n" in out
    assert out.rstrip().endswith("1 step: 0 failed; 1 not as expected (step 1)")
    workload.write_text(SMALL + "  expect: [{container: p/c, state: running}]\n")
    code, out, _ = run(capsys, *argv)
    assert code == EXIT_OK and "  expect: 1 check held\n" in out


def test_config_file_and_sysfs_root(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("reservedResources: {cpu: 'cpuset:0'}\n")
    workload = tmp_path / "w.yaml"
    workload.write_text(SMALL)
    doc = document(
        capsys,
        "--sysfs-root",
        "/sys",
        *EXCLUSIVE_ARGS,
        "--config",
        str(config),
        "--workload",
        str(workload),
    )
    assert doc["config_file"] == str(config) and doc["hardware"]["source"] == "sysfs at /sys"
    online = CPUSet.parse(doc["hardware"]["cpus"])
    (ctr,) = doc["steps"][0]["containers"]
    # the shared pool is every online CPU but the reserved CPU 0
    assert ctr["cpus"] == str(online - CPUSet.of(0))


DEVICE_WORKLOAD = """
- createPod:
    name: trainer
    containers:
      - name: app
        resources: {requests: {cpu: 4, memory: 8Gi}, limits: {cpu: 4, memory: 8Gi}}
        devices: [{path: /dev/dri/card0, type: c, major: 226, minor: 0}]
- createPod:
    name: reader
    containers:
      - name: app
        resources: {requests: {cpu: 2, memory: 1Gi}, limits: {cpu: 2, memory: 1Gi}}
        mounts: [{source: /sys/devices/pci0000:5e/0000:5e:00.0, destination: /nvme}]
"""


def test_a_sysfs_tree_gives_the_same_device_hints_as_its_machine_spec(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # server-4s-144: a GPU (226:0) on node 2, an NVMe drive (PCI 0000:5e:00.0) on node 1
    workload = tmp_path / "w.yaml"
    workload.write_text(DEVICE_WORKLOAD)
    tree = tmp_path / "sys"
    assert main(["hardware", "--machine", "server-4s-144", "--write-sysfs", str(tree)]) == 0
    capsys.readouterr()
    placements = []
    for source in (["--machine", "server-4s-144"], ["--sysfs-root", str(tree)]):
        doc = document(capsys, *source, "--policy", "topology-aware", "--workload", str(workload))
        placements.append(
            [(c["pod"], c["cpus"], c["mems"]) for c in doc["steps"][-1]["containers"]]
        )
    assert placements[0] == placements[1]
    (trainer, reader) = placements[0]
    assert trainer[2] == "2" and reader[2] == "1"  # with the devices, not on node 0


def test_an_ordinary_refusal_logs_one_line_without_a_traceback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "- createPod: {name: huge, containers: [{name: c, resources: {limits: {cpu: 40, "
        "memory: 1Gi}}}]}\n  expectError: no pool has 40 exclusive CPUs\n"
    )
    code, out, err = run(
        capsys,
        *("--machine", "box-16", "--policy", "topology-aware", "--workload", str(workload)),
        *("--log-level", "debug"),
    )
    assert code == EXIT_OK and "no pool has 40 exclusive CPUs" in out
    about = [line for line in err.splitlines() if "no pool has 40" in line]
    assert len(about) == 1 and "CreateContainer refused: create-container" in about[0]
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--policy", "nope"], EXIT_INPUT, "unknown policy 'nope'"),
        (["--policy", "template", "--machine", "box-99"], EXIT_HARDWARE, "box-99"),
        (["--policy", "template", "--sysfs-root", "/nonexistent"], EXIT_HARDWARE, "discovery"),
        (["--policy", "template", "--policy-module", "no.such.mod"], EXIT_INPUT, "no.such.mod"),
        (["--policy", "template", "--policy-module", "/no/file.py"], EXIT_INPUT, "no such file"),
        (["--policy", "template", "--nri-version", "v9"], EXIT_INPUT, "invalid NRI version"),
        (["--policy", "template", "--config", "/no/config.yaml"], EXIT_INPUT, "/no/config.yaml"),
    ],
)
def test_input_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    found, out, err = run(capsys, *argv, "--workload", TEMPLATE_WORKLOAD)
    assert found == code and out == ""
    assert err.startswith("nrirp simulate: ") and message in err


def test_invalid_workload_and_config(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text("- createPod: {name: p, containers: [{name: c, resources: {x: {}}}]}\n")
    code, out, err = run(capsys, "--policy", "template", "--workload", str(workload))
    assert code == EXIT_INPUT and out == ""
    assert "steps[0].createPod.containers[0].resources.x (step 1): unknown field" in err
    code, _, err = run(capsys, "--policy", "template", "--workload", str(tmp_path / "no.yaml"))
    assert code == EXIT_INPUT and "cannot read workload" in err
    config = tmp_path / "c.yaml"
    config.write_text("reservedResources: {cpus: 1}\n")
    code, _, err = run(
        capsys, "--policy", "template", "--config", str(config), "--workload", TEMPLATE_WORKLOAD
    )
    assert code == EXIT_INPUT and "reservedResources.cpus: unknown field" in err


def test_policy_refusing_to_start(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("availableResources: {cpu: 'cpuset:100-101'}\n")
    code, _, err = run(
        capsys,
        "--machine",
        "box-16",
        *EXCLUSIVE_ARGS,
        "--config",
        str(config),
        "--workload",
        TEMPLATE_WORKLOAD,
    )
    assert code == EXIT_START and "refused to start: CPUs 100-101 are not online" in err


def test_console_entry_point_with_policy_modules_env(tmp_path: Path) -> None:
    env = {**os.environ, "NRIRP_POLICY_MODULES": "tests.app.simulator.policies"}
    workload = tmp_path / "w.yaml"
    workload.write_text(SMALL)
    proc = subprocess.run(
        [
            *(sys.executable, "-m", "nrirp", "simulate", "--machine", "box-16"),
            *("--policy", "sim-move", "--workload", str(workload), "--json"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=Path(__file__).parents[2],
    )
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert [c["cpus"] for c in doc["steps"][0]["containers"]] == ["0"]


def test_a_comparison_names_the_defaults_as_such(capsys: pytest.CaptureFixture[str]) -> None:
    """A plain workload compared without ``--config``: NEW ran with the policy's defaults
    (not "a recording's": there is none)."""
    topology = WORKLOADS / "topology-aware"
    old = str(topology / "configs" / "box16-available.yaml")
    argv = ("--machine", "box-16", "--policy", "topology-aware")
    code, out, err = run(
        capsys, *argv, "--workload", str(topology / "basics.yaml"), "--compare", old
    )
    assert code == EXIT_STEPS, err
    assert f"  OLD: {old}\n  NEW: the policy's defaults\n" in out


@pytest.mark.parametrize(
    ("body", "twice", "reason"),
    [
        ("def register_policies(registry):\n    raise RuntimeError('boom')\n", False, "boom"),
        (
            "from nrirp.domain.policies import TemplatePolicy\n"
            "class Copy(TemplatePolicy):\n    pass\n"
            "def register_policies(registry):\n    registry.register(Copy)\n",
            False,
            "policy 'template' is already registered",
        ),
        (
            "from nrirp.domain.policies import TemplatePolicy\n"
            "class Mine(TemplatePolicy):\n    name = 'mine'\n"
            "def register_policies(registry):\n    registry.register(Mine)\n",
            True,
            "policy 'mine' is already registered",
        ),
    ],
)
def test_a_failing_register_policies_exits_2_in_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str, twice: bool, reason: str
) -> None:
    module = tmp_path / "mod.py"
    module.write_text(body)
    modules = ["--policy-module", str(module)] * (2 if twice else 1)
    code, out, err = run(capsys, "--policy", "template", *modules, "--workload", TEMPLATE_WORKLOAD)
    assert code == EXIT_INPUT and out == ""
    assert (
        err
        == f"nrirp simulate: policy module {str(module)!r}: register_policies failed: {reason}\n"
    )


def test_pictures_and_compare_are_refused_together(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--svg", "--html"):
        code, out, err = run(
            capsys,
            *("--machine", "box-16", "--policy", "template", "--workload", TEMPLATE_WORKLOAD),
            *("--compare", TEMPLATE_WORKLOAD, flag, "pictures"),
        )
        assert (code, out) == (EXIT_INPUT, "")
        assert err == "nrirp simulate: --svg and --html draw one replay: not with --compare\n"


@pytest.mark.parametrize(
    ("flag", "path", "message"),
    [
        ("--svg", "{tmp}/file/svgs", "--svg {tmp}/file/svgs: {tmp}/file is not a directory"),
        ("--svg", "/proc/nrirp/svgs", "--svg /proc/nrirp/svgs: cannot write in /proc: "),
        ("--html", "{tmp}/no/page.html", "--html {tmp}/no/page.html: no directory {tmp}/no"),
        ("--html", "{tmp}", "--html {tmp}: is a directory"),
        ("--html", "/proc/page.html", "--html /proc/page.html: cannot write in /proc: "),
    ],
)
def test_picture_paths_are_checked_before_the_replay(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, flag: str, path: str, message: str
) -> None:
    (tmp_path / "file").write_text("")
    code, out, err = run(
        capsys,
        *("--machine", "box-16", "--policy", "template", "--workload", TEMPLATE_WORKLOAD),
        *(flag, path.format(tmp=tmp_path)),
    )
    assert (code, out) == (EXIT_INPUT, "")  # refused before the replay: nothing printed
    expected = f"nrirp simulate: cannot write the pictures: {message.format(tmp=tmp_path)}"
    assert err.startswith(expected)
    assert err.count("\n") == 1


def test_a_directory_for_the_svg_files_is_created_with_its_parents(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = run(
        capsys,
        *("--machine", "box-16", "--policy", "template", "--workload", TEMPLATE_WORKLOAD),
        *("--svg", str(tmp_path / "a" / "b")),
    )
    assert code == EXIT_OK, err
    assert (tmp_path / "a" / "b" / "step-001.svg").is_file()


def test_every_step_on_a_plain_workload_says_it_changes_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("--machine", "box-16", "--policy", "template", "--workload", TEMPLATE_WORKLOAD)
    code, out, err = run(capsys, *argv, "--every-step")
    assert code == EXIT_OK
    assert err == (
        f"nrirp simulate: note: --every-step changes nothing: {TEMPLATE_WORKLOAD} is not a "
        "recording, every step is shown\n"
    )
    assert run(capsys, *argv)[1] == out


def test_a_memory_type_for_an_unknown_node_names_the_machine(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ("--machine", "box-16", "--policy", "template", "--workload", TEMPLATE_WORKLOAD)
    code, out, err = run(capsys, *argv, "--memory-type", "9=pmem")
    assert (code, out) == (EXIT_HARDWARE, "")
    assert err == (
        "nrirp simulate: hardware discovery failed: "
        "machine box-16: memory type configured for unknown NUMA nodes [9]\n"
    )


def test_what_the_policy_says_at_the_start_is_shown_before_the_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "balloons.yaml"
    config.write_text(
        "reservedResources: {cpu: 750m}\nballoonTypes:\n- {name: a, cpuClass: nope2}\n"
    )
    args = ["simulate", "--machine", "box-16", "--policy", "balloons", "--config", str(config)]
    args += ["--workload", "examples/workloads/template-box16.yaml"]
    assert main(args) == 0
    out = capsys.readouterr().out
    said = "notice (warning, policy): balloonTypes[0].cpuClass: 'nope2' names no CPU class"
    assert f"\nAt the start:\n  {said}" in out
    assert out.index("At the start:") < out.index("Step 1:")
    assert said not in out[out.index("Step 1:") :]  # said once, not again at a step
    assert main([*args, "--json"]) == 0
    (notice,) = json.loads(capsys.readouterr().out)["start_notices"]
    assert notice["source"] == "policy" and notice["severity"] == "warning"
    assert "'nope2' names no CPU class" in notice["message"]


@pytest.mark.parametrize(
    ("policy", "config", "where"),
    [
        (
            "topology-aware",
            'reservedPoolNamespaces: ["[abc", "ok-*"]\n',
            "reservedPoolNamespaces[0]",
        ),
        ("balloons", 'reservedPoolNamespaces: ["[abc"]\n', "reservedPoolNamespaces[0]"),
        (
            "balloons",
            "balloonTypes: [{name: a, namespaces: [y, 'x[']}]\n",
            "balloonTypes[0].namespaces[1]",
        ),
    ],
)
def test_a_malformed_namespace_glob_is_warned_about_at_the_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], policy: str, config: str, where: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("reservedResources: {cpu: 750m}\n" + config)
    args = ["simulate", "--machine", "box-16", "--policy", policy, "--config", str(path)]
    assert main([*args, "--workload", "examples/workloads/template-box16.yaml"]) == 0
    out = capsys.readouterr().out
    start = out[out.index("At the start:") : out.index("Step 1:")]
    assert f"notice (warning, policy): {where}: " in start
    assert "is a malformed glob (unclosed character class '['): it matches nothing" in start
    assert start.count("malformed glob") == 1
