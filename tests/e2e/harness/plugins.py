"""Plugin processes for e2e tests: external plugins started by the test, and the wrapper
script that lets a Python module run as a containerd pre-launched plugin."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .processes import terminate


class PluginProcessError(RuntimeError):
    """A plugin process did not do what the test waited for; the message carries its log."""


class PluginProcess:
    """A process started by a test (an NRI plugin, usually), stdout+stderr going to a log file.

    It runs in its own session so a Ctrl-C at the terminal reaches pytest, not the plugin, and
    :meth:`stop` signals exactly its PID.
    """

    def __init__(
        self,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.argv = [str(a) for a in argv]
        self.log_path = log_path
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None

    @classmethod
    def python_module(
        cls,
        module: str,
        args: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        python: str = sys.executable,
    ) -> PluginProcess:
        """``python -u -m MODULE ARGS...`` with this interpreter (the venv's, under pytest)."""
        return cls([python, "-u", "-m", module, *args], log_path, env=env)

    def start(self) -> PluginProcess:
        """Start the process (once); returns self."""
        if self._proc is not None:
            raise PluginProcessError(f"{self.argv[0]} was already started")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **(self._env or {})}
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self._cwd,
                start_new_session=True,
            )
        return self

    @property
    def pid(self) -> int:
        """The process id (the process must have been started)."""
        if self._proc is None:
            raise PluginProcessError("process not started")
        return self._proc.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has ended, else None."""
        return None if self._proc is None else self._proc.poll()

    @property
    def running(self) -> bool:
        """True while the process runs."""
        return self._proc is not None and self._proc.poll() is None

    def log_text(self) -> str:
        """Everything the process logged so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def wait_for_line(self, pattern: str | re.Pattern[str], timeout: float = 10.0) -> str:
        """Wait until a log line matches ``pattern`` (a regex searched in each line).

        Returns the first matching line; fails if the process exits or time runs out first.
        """
        regex = re.compile(pattern) if isinstance(pattern, str) else pattern
        deadline = time.monotonic() + timeout
        while True:
            for line in self.log_text().splitlines():
                if regex.search(line):
                    return line
            if self._proc is not None and self._proc.poll() is not None:
                # one last look: the line may have been written just before exiting
                for line in self.log_text().splitlines():
                    if regex.search(line):
                        return line
                raise PluginProcessError(
                    f"{self.argv} exited with {self._proc.returncode} before logging "
                    f"{regex.pattern!r}; log:\n{self.log_text()[-4000:]}"
                )
            if time.monotonic() >= deadline:
                raise PluginProcessError(
                    f"{self.argv} did not log {regex.pattern!r} within {timeout}s; "
                    f"log:\n{self.log_text()[-4000:]}"
                )
            time.sleep(0.02)

    def wait_exit(self, timeout: float = 10.0) -> int:
        """Wait for the process to end on its own; returns its exit status."""
        if self._proc is None:
            raise PluginProcessError("process not started")
        try:
            return self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise PluginProcessError(
                f"{self.argv} still running after {timeout}s; log:\n{self.log_text()[-4000:]}"
            ) from exc

    def stop(self, timeout: float = 5.0) -> int | None:
        """SIGTERM, then SIGKILL after ``timeout`` s; returns the exit status."""
        if self._proc is None:
            return None
        if self._proc.poll() is None:
            terminate(self._proc.pid, timeout, self._proc)
        return self._proc.returncode


def python_plugin_wrapper(
    module: str,
    args: Sequence[str],
    log_path: Path,
    *,
    python: str = sys.executable,
    env: Mapping[str, str] | None = None,
    pythonpath: Sequence[Path] = (),
) -> str:
    """The text of an executable that runs ``python -m MODULE ARGS`` as a pre-launched plugin.

    containerd starts pre-launched plugins with exactly ``NRI_PLUGIN_NAME``, ``NRI_PLUGIN_IDX`` and
    ``NRI_PLUGIN_SOCKET=3`` in the environment (no PATH) and stdout/stderr on /dev/null, so the
    script uses absolute paths, keeps fd 3 open across ``exec``, and sends output to ``log_path``.
    """
    lines = [
        "#!/bin/sh",
        "# nrirp e2e: pre-launched NRI plugin wrapper",
        "export PYTHONUNBUFFERED=1",
    ]
    extra = dict(env or {})
    if pythonpath:
        extra["PYTHONPATH"] = ":".join(str(p) for p in pythonpath)
    lines += [f"export {key}={shlex.quote(value)}" for key, value in sorted(extra.items())]
    command = shlex.join([python, "-m", module, *args])
    lines.append(f"exec {command} >>{shlex.quote(str(log_path))} 2>&1")
    return "\n".join(lines) + "\n"


def executable_plugin_wrapper(executable: Path, args: Sequence[str], log_path: Path) -> str:
    """Like :func:`python_plugin_wrapper` for a compiled plugin binary (e.g. the Go ``nristub``)."""
    command = shlex.join([str(executable), *args])
    return f"#!/bin/sh\nexec {command} >>{shlex.quote(str(log_path))} 2>&1\n"
