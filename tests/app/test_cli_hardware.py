"""``nrirp hardware`` end to end through the CLI entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from nrirp.adapters.fakehw import machine_names
from nrirp.app.cli import main
from nrirp.app.commands import command_modules


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def document(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    code, out, err = run(capsys, "hardware", *argv, "--json")
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def test_real_sys_of_this_machine(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(capsys)
    assert doc["source"] == "sysfs at /sys"
    ids = [c["id"] for c in doc["cpu_details"]]
    assert len(ids) == os.cpu_count()  # 2 on the project's machines
    code, out, _ = run(capsys, "hardware")
    assert code == 0 and f"CPUs: {os.cpu_count()} online" in out


def test_console_entry_point_runs() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "nrirp", "hardware"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("Hardware (sysfs at /sys)")


def test_json_document(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(capsys, "--machine", "server-112-pmem")
    assert doc["format"] == "nrirp.hardware/v1"
    assert doc["cpus"] == "0-111" and doc["isolated"] == ""
    assert doc["hybrid"] is False and doc["symmetric_distances"] is True
    assert [(p["id"], p["cpus"], p["nodes"]) for p in doc["packages"]] == [
        (0, "0-27,56-83", "0-1"),
        (1, "28-55,84-111", "2-3"),
    ]
    assert doc["packages"][1]["dies"] == [{"id": 0, "cpus": "28-55,84-111", "nodes": "2-3"}]
    node4 = doc["nodes"][4]
    assert node4 == {
        "id": 4,
        "cpus": "",
        "memory_bytes": 768 << 30,
        "memory_type": "pmem",
        "distances": {"0": 17, "1": 18, "2": 28, "3": 28, "4": 10, "5": 35},
        "closest_cpu_node": 0,
        "closest_cpu_nodes": "0",
    }
    assert doc["nodes"][1]["memory_type"] == "dram" and doc["nodes"][1]["cpus"] == "14-27,70-83"
    assert len(doc["cores"]) == 56 and doc["cores"][0] == {
        "package": 0,
        "id": 0,
        "cpus": "0,56",
        "type": "performance",
    }
    assert doc["clusters"][0] == {"package": 0, "die": 0, "id": 0, "cpus": "0,56"}
    assert doc["caches"][-1] == {
        "level": 3,
        "type": "unified",
        "id": 1,
        "cpus": "28-55,84-111",
        "size_bytes": 39424 << 10,
    }
    assert doc["cpu_details"][57] == {
        "id": 57,
        "package": 0,
        "die": 0,
        "cluster": 1,
        "core": 1,
        "node": 0,
        "core_type": "performance",
        "base_frequency_khz": 2700000,
        "max_frequency_khz": 4000000,
        "epp": "balance_performance",
    }


def test_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "--machine", "server-112-pmem")
    assert code == 0
    assert "CPUs: 112 online (0-111); 56 cores, threads per core: 2; 2 packages" in out
    assert "Isolated CPUs: none" in out
    assert "Package 1: cpus 28-55,84-111, nodes 2-3" in out
    assert "  Die 0: cpus 28-55,84-111, nodes 2-3" in out
    assert "    Node 3: cpus 42-55,98-111, 96 GiB dram" in out
    assert "  Node 5: 768 GiB pmem, closest CPU node 2 (distance 17)" in out
    assert "L3 2 x 38.5 MiB" in out and "base 2.70 GHz, max 4.00 GHz" in out
    code, out, _ = run(capsys, "hardware", "--machine", "hybrid-desktop")
    assert "Hybrid: P-core cpus 0-15, E-core cpus 16-23" in out
    assert "threads per core: 1/2" in out
    code, out, _ = run(capsys, "hardware", "--machine", "sparse-8s-4096")
    assert "Isolated CPUs: 7676-7679" in out


def test_list_machines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "--list-machines")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == machine_names()
    code, out, _ = run(capsys, "hardware", "--list-machines", "--json")
    assert [m["name"] for m in json.loads(out)] == machine_names()


def test_write_sysfs_then_read_it_back(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, _ = run(
        capsys, "hardware", "--machine", "hbm-cxl", "--write-sysfs", str(tmp_path / "t")
    )
    assert code == 0 and "96 online CPUs" in out and "note:" not in out
    from_tree = document(capsys, "--sysfs-root", str(tmp_path / "t"))
    from_machine = document(capsys, "--machine", "hbm-cxl")
    assert from_tree.pop("source") != from_machine.pop("source")
    assert from_tree == from_machine


def test_a_kernel_without_numa_round_trips_with_its_procfs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sys_dir, proc_dir = str(tmp_path / "sys"), str(tmp_path / "proc")
    code, out, _ = run(
        capsys,
        "hardware",
        *("--machine", "nonuma-2s-16", "--write-sysfs", sys_dir, "--write-procfs", proc_dir),
    )
    assert code == 0 and f"wrote its procfs meminfo to {proc_dir}" in out
    from_tree = document(capsys, "--sysfs-root", sys_dir)  # proc beside sys: found
    from_machine = document(capsys, "--machine", "nonuma-2s-16")
    assert from_tree.pop("source") != from_machine.pop("source")
    assert from_tree == from_machine
    assert [n["memory_bytes"] for n in from_tree["nodes"]] == [32 << 30]


def test_a_kernel_without_numa_written_without_procfs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    tree = str(tmp_path / "t")
    code, out, _ = run(capsys, "hardware", "--machine", "nonuma-2s-16", "--write-sysfs", tree)
    assert code == 0 and "write it with --write-procfs DIR" in out
    code, _, err = run(capsys, "hardware", "--sysfs-root", tree)
    assert code == 1 and f"comes from {tmp_path}/proc/meminfo: missing" in err
    code, _, _ = run(capsys, "hardware", "--write-procfs", str(tmp_path / "p"))
    assert code == 2


def test_memory_equally_close_to_several_nodes(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "hardware", "--machine", "epyc-nps2-64")
    assert code == 0 and "Node 2: 256 GiB pmem, closest CPU nodes 0-1 (distance 22)" in out
    doc = document(capsys, "--machine", "epyc-nps2-64")
    assert doc["nodes"][2]["closest_cpu_node"] == 0
    assert doc["nodes"][2]["closest_cpu_nodes"] == "0-1"


def test_write_sysfs_notes_types_sysfs_cannot_carry(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(
        "name: m\ncompact: {memory_per_node: 4Gi}\n"
        "memory_nodes: [{memory: 64Gi, nearest: 0, type: hbm}]\n"
    )
    code, out, _ = run(
        capsys, "hardware", "--machine", str(spec), "--write-sysfs", str(tmp_path / "t")
    )
    assert code == 0 and "--memory-type 1=hbm" in out
    assert (
        document(capsys, "--sysfs-root", str(tmp_path / "t"))["nodes"][1]["memory_type"] == "pmem"
    )
    doc = document(capsys, "--sysfs-root", str(tmp_path / "t"), "--memory-type", "1=hbm")
    assert doc["nodes"][1]["memory_type"] == "hbm"


def test_memory_type_option(capsys: pytest.CaptureFixture[str]) -> None:
    doc = document(
        capsys, "--machine", "box-16", "--memory-type", "1=HBM", "--memory-type", "2=pmem"
    )
    assert [n["memory_type"] for n in doc["nodes"]] == ["dram", "hbm", "pmem", "dram"]


@pytest.mark.parametrize(
    ("argv", "code", "message"),
    [
        (["--machine", "nope"], 1, "no catalogue machine named 'nope'"),
        (["--sysfs-root", "/nonexistent-root"], 1, "/nonexistent-root: no such directory"),
        (["--write-sysfs", "/tmp/x"], 2, "--write-sysfs needs --machine"),
        (
            ["--machine", "box-16", "--memory-type", "9=hbm"],
            1,
            "error: machine box-16: memory type configured for unknown NUMA nodes [9]\n",
        ),
    ],
)
def test_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], code: int, message: str
) -> None:
    got, out, err = run(capsys, "hardware", *argv)
    assert got == code and out == ""
    assert err.startswith("nrirp hardware: error: ") and message in err


@pytest.mark.parametrize(
    "argv",
    [
        ["--machine", "box-16", "--sysfs-root", "/sys"],
        ["--memory-type", "x"],
        ["--memory-type", "1=optane"],
        ["--bogus"],
    ],
)
def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["hardware", *argv])
    assert info.value.code == 2
    assert "usage: nrirp" in capsys.readouterr().err


def test_malformed_sysfs_is_reported(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "hardware", "--machine", "box-16", "--write-sysfs", str(tmp_path))[0] == 0
    (tmp_path / "devices/system/node/node2/meminfo").write_text("junk\n")
    code, _, err = run(capsys, "hardware", "--sysfs-root", str(tmp_path))
    assert (
        code == 1 and f"{tmp_path}/devices/system/node/node2/meminfo" in err and "'junk\\n'" in err
    )


def test_write_sysfs_refuses_non_empty_directory(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "keep").write_text("precious")
    code, _, err = run(capsys, "hardware", "--machine", "box-16", "--write-sysfs", str(tmp_path))
    assert code == 1 and "not an empty directory" in err
    assert (tmp_path / "keep").read_text() == "precious"


def test_bad_spec_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("name: bad\ncompact: {sockets: 2}\n")
    code, _, err = run(capsys, "hardware", "--machine", str(spec))
    assert code == 1 and "extra fields found (sockets) @ $.compact" in err


def test_dispatcher_finds_command_modules(capsys: pytest.CaptureFixture[str]) -> None:
    names = [m.__name__.rsplit(".", 1)[-1] for m in command_modules()]  # type: ignore[attr-defined]
    assert "hardware" in names and "common" not in names
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "hardware" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--machine", "box-16", "--procfs-root", "/proc"], "--procfs-root goes with a sysfs tree"),
        (["--list-machines", "--machine", "box-16"], "--list-machines lists the catalogue"),
        (
            ["--machine", "box-16", "--write-sysfs", "DIR", "--memory-type", "1=pmem"],
            "--memory-type is not written into a sysfs tree",
        ),
    ],
)
def test_options_that_would_be_ignored_are_refused(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = [str(tmp_path / "tree") if a == "DIR" else a for a in argv]
    assert main(["hardware", *argv]) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "tree").exists()
