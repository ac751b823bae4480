"""``nrirp run --engine-api`` as a process on a fake box-16 (topology-aware, CPU 0 reserved),
serving the engine API on a real unix socket: for the client examples' tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs


@contextmanager
def engine_daemon(directory: Path) -> Iterator[str]:
    """Start the daemon in ``directory`` (its sysfs tree, config, state and log there); yields
    the socket's path once it exists; stops it with SIGTERM and checks it exited with 0."""
    directory.mkdir(parents=True, exist_ok=True)
    sysfs = directory / "sys"
    write_sysfs(resolve(load_machine("box-16"), "box-16"), sysfs)
    (directory / "config.yaml").write_text("reservedResources: {cpu: 'cpuset:0'}\n")
    socket_path = str(directory / "engine.sock")
    log = directory / "daemon.log"
    with open(log, "wb") as out:
        daemon = subprocess.Popen(
            [
                sys.executable, "-m", "nrirp", "run", "--engine-api", "--policy", "topology-aware",
                "--config-file", str(directory / "config.yaml"), "--engine-socket", socket_path,
                "--state-dir", str(directory / "state"), "--sysfs-root", str(sysfs),
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
            yield socket_path
        finally:
            daemon.send_signal(signal.SIGTERM)
            code = daemon.wait(20)
    assert code == 0, log.read_text()
