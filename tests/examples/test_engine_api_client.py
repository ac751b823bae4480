"""examples/engine_api/client.py against ``nrirp run --engine-api`` as a process, over a real
unix socket (fake box-16, topology-aware with CPU 0 reserved)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from nrirp.domain.cpuset import CPUSet
from tests.support.engine_daemon import engine_daemon

REPO = Path(__file__).resolve().parents[2]


def check_example_output(stdout: str) -> None:
    """What the example prints (the Go example prints the same)."""
    lines = stdout.splitlines()
    assert lines[0] == "engine: policy topology-aware"
    shared = lines[1].split("cpus=")[1]
    exclusive = lines[2].split("cpus=")[1]
    assert lines[1].startswith("CreateContainer shared:") and len(exclusive.split("-")) == 2
    assert (
        lines[3].startswith("  update shared-app: cpus=") and lines[3].split("cpus=")[1] != shared
    )
    assert lines[4].startswith("CreateContainer too-big: refused: ")
    assert "no pool has 64 exclusive CPUs" in lines[4]
    # the policy's explanation of the refusal, through the Explain call
    assert lines[5].startswith("  explain: refused: no pool has 64 exclusive CPUs")
    assert lines[6] == "RemovePodSandbox exclusive"
    assert lines[7] == f"  update shared-app: cpus={shared}"  # the shared pool grows back
    assert lines[8] == f"container shared-app: cpus={shared}"
    # a reconfiguration reserving CPU 4: its update comes through TakeUpdates
    assert lines[9] == 'Reconfigure reservedResources: {cpu: "cpuset:4"}: 1 update(s) queued'
    reserved = CPUSet.parse("4")
    assert lines[10] == f"  update shared-app: cpus={CPUSet.parse(shared) - reserved}"
    # a configuration that does not load is refused, naming the offending path
    assert lines[11].startswith(
        'Reconfigure reservedResources: {cpu: "lots"}: refused: reservedResources.cpu: '
    )
    assert lines[12:] == []


def run_python_example(directory: Path) -> str:
    with engine_daemon(directory) as socket_path:
        done = subprocess.run(
            [sys.executable, str(REPO / "examples/engine_api/client.py"), socket_path],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_example_client_through_the_daemon(tmp_path: Path) -> None:
    check_example_output(run_python_example(tmp_path))
