"""examples/engine_api/client.py against ``nrirp run --engine-api`` as a process, over a real
unix socket (fake box-16, topology-aware with CPU 0 reserved)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs

REPO = Path(__file__).resolve().parents[2]


def test_the_example_client_through_the_daemon(tmp_path: Path) -> None:
    sysfs = tmp_path / "sys"
    write_sysfs(resolve(load_machine("box-16"), "box-16"), sysfs)
    (tmp_path / "config.yaml").write_text("reservedResources: {cpu: 'cpuset:0'}\n")
    socket_path = str(tmp_path / "engine.sock")
    log = tmp_path / "daemon.log"
    with open(log, "wb") as out:
        daemon = subprocess.Popen(
            [
                sys.executable, "-m", "nrirp", "run", "--engine-api", "--policy", "topology-aware",
                "--config-file", str(tmp_path / "config.yaml"), "--engine-socket", socket_path,
                "--state-dir", str(tmp_path / "state"), "--sysfs-root", str(sysfs),
                "--config-poll-interval", "0", "--disable-agent",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not os.path.exists(socket_path):
                assert daemon.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
            done = subprocess.run(
                [sys.executable, str(REPO / "examples/engine_api/client.py"), socket_path],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(20)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "engine: policy topology-aware"
    shared = lines[1].split("cpus=")[1]
    exclusive = lines[2].split("cpus=")[1]
    assert lines[1].startswith("CreateContainer shared:") and len(exclusive.split("-")) == 2
    assert (
        lines[3].startswith("  update shared-app: cpus=") and lines[3].split("cpus=")[1] != shared
    )
    assert lines[4].startswith("CreateContainer too-big: refused: ")
    assert lines[5] == "RemovePodSandbox exclusive"
    assert lines[6] == f"  update shared-app: cpus={shared}"  # the shared pool grows back
    assert lines[7:] == [f"container shared-app: cpus={shared}"]
    assert code == 0, log.read_text()
