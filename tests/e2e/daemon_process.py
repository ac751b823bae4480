"""One ``nrirp run`` process on the real containerd, with JSON logs and a state file: start,
wait for log records and state, SIGKILL. The daemon e2e modules build their own on top."""

from __future__ import annotations

import json
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from .harness import Containerd
from .harness.fixtures import PluginProcesses
from .harness.plugins import PluginProcess

REPO = Path(__file__).resolve().parents[2]


class DaemonProcess:
    """``nrirp run --policy POLICY`` on ``runtime``'s NRI socket, state in ``state_dir``; no
    host control unless ``args`` asks for some (``--host-control``)."""

    def __init__(
        self,
        processes: PluginProcesses,
        runtime: Containerd,
        state_dir: Path,
        *,
        policy: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        name: str = "nrirp-run",
    ) -> None:
        argv = [
            "-u", "-m", "nrirp", "run",
            "--policy", policy,
            "--nri-socket", str(runtime.nri_socket),
            "--state-dir", str(state_dir),
            "--log-format", "json",
            *args,
        ]  # fmt: skip
        if "--host-control" not in args:
            # this machine's own interrupts, cpufreq and resctrl stay as they are (a daemon
            # killed by a test would leave its changes); test_host_control.py turns them on
            argv += ["--host-control", "none"]
        # the checkout these tests live in, even when another copy is installed
        pythonpath = os.pathsep.join([str(REPO / "src"), str(REPO)])
        full_env = {"PYTHONPATH": pythonpath, **(env or {})}
        self.process: PluginProcess = processes.start(
            [sys.executable, *argv], name=name, env=full_env
        )
        self.state_file = state_dir / "cache"

    def records(self) -> list[dict[str, Any]]:
        """Every complete JSON log record so far (the daemon may be writing the last line)."""
        text = self.process.log_text()
        lines = text.splitlines()
        if lines and not text.endswith("\n"):
            lines.pop()
        return [json.loads(line) for line in lines if line.startswith("{")]

    def wait_for(self, pattern: str, timeout: float = 20.0, after: int = 0) -> dict[str, Any]:
        """The first record (from index ``after``) whose message matches ``pattern``."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            for record in self.records()[after:]:
                if regex.search(record["msg"]):
                    return record
            if not self.process.running or time.monotonic() > deadline:
                raise AssertionError(
                    f"nrirp run did not log {pattern!r}; log:\n{self.process.log_text()[-6000:]}"
                )
            time.sleep(0.02)

    def registered(self) -> None:
        self.wait_for("registered with containerd")

    def state(self) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self.state_file.read_text())
        return result

    def wait_state(
        self, check: Callable[[dict[str, Any]], bool], timeout: float = 10.0
    ) -> dict[str, Any]:
        """Poll the state file until ``check`` holds; returns that state."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                state = self.state()
                if check(state):
                    return state
            except (FileNotFoundError, json.JSONDecodeError):
                pass
            if time.monotonic() > deadline:
                text = self.state_file.read_text() if self.state_file.exists() else "(none)"
                raise AssertionError(f"state file never matched; it holds: {text}")
            time.sleep(0.05)

    def kill9(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait_exit(10)
