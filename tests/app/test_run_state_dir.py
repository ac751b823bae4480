"""``nrirp run`` as a process and its state directory: one daemon per directory (exit 6 for the
second), directories created 0700 under umask 000, ownership and permissions checked, and every
odd state file refused with exit 4 and one line (no traceback)."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from nrirp.adapters.fakehw import load_machine, resolve, write_sysfs
from nrirp.adapters.storage import MAX_STATE_FILE_SIZE
from nrirp.simruntime import ContainerSpec, PodSpec, SimRuntime
from tests.support.aio import arun

REPO = Path(__file__).resolve().parents[2]
OTHER_UID = 54321


@pytest.fixture(scope="module")
def sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("hw") / "sys"
    write_sysfs(resolve(load_machine("box-16"), "box-16"), root)
    return root


class Run:
    """``python -m nrirp run --policy template`` with text logs in a file; no runtime (the
    daemon waits for its socket to appear)."""

    def __init__(
        self,
        tmp: Path,
        sysfs: Path,
        state_dir: Path,
        *,
        umask: int = 0o022,
        socket_path: Path | None = None,
    ) -> None:
        self.log_path = tmp / f"run-{len(list(tmp.glob('run-*.log')))}.log"
        argv = [
            sys.executable, "-m", "nrirp", "run",
            "--policy", "template",
            "--nri-socket", str(socket_path or tmp / "no-runtime.sock"),
            "--state-dir", str(state_dir),
            "--sysfs-root", str(sysfs),
            "--cgroup-root", str(tmp / "no-cgroups"),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        for key in ("NRI_PLUGIN_SOCKET", "NRI_PLUGIN_NAME", "NRI_PLUGIN_IDX"):
            env.pop(key, None)
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=env,
                umask=umask,
            )

    def lines(self) -> list[str]:
        return self.log_path.read_text().splitlines()

    def wait_line(self, text: str, timeout: float = 30.0) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines():
                if text in line:
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.02)
        raise AssertionError(f"no line with {text!r}; log:\n{self.log_path.read_text()}")

    def wait(self, timeout: float = 30.0) -> int:
        return self.proc.wait(timeout=timeout)

    def serving(self) -> None:
        """Wait until it serves (signal handlers set): it waits for the runtime's socket."""
        self.wait_line("retrying when the NRI socket")

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=30)


def errors_of(run: Run) -> list[str]:
    return [line for line in run.lines() if " error " in line]


def test_a_second_daemon_on_the_state_directory_exits_6(tmp_path: Path, sysfs: Path) -> None:
    state_dir = tmp_path / "state"
    first = Run(tmp_path, sysfs, state_dir)
    try:
        first.wait_line("no saved state in")
        first.serving()
        second = Run(tmp_path, sysfs, state_dir)
        assert second.wait() == 6
        (error,) = errors_of(second)
        assert error.endswith(
            f"error nrirp.daemon: state directory {state_dir} is in use by pid {first.proc.pid}"
        )
        assert "Traceback" not in second.log_path.read_text()
        assert first.proc.poll() is None  # the holder goes on
    finally:
        assert first.stop() == 0
    third = Run(tmp_path, sysfs, state_dir)  # the lock went with the first daemon
    try:
        third.wait_line("no saved state in")  # (nothing was saved: no operation ran)
        third.serving()
    finally:
        assert third.stop() == 0


def test_state_directories_are_created_0700_under_umask_000(tmp_path: Path, sysfs: Path) -> None:
    state_dir = tmp_path / "var" / "lib" / "nrirp"
    socket_path = tmp_path / "nri.sock"

    async def main() -> None:
        async with SimRuntime(socket_path=socket_path) as runtime:
            run = Run(tmp_path, sysfs, state_dir, umask=0, socket_path=socket_path)
            try:
                await runtime.wait_plugin("90-resource-manager", timeout=30)
                await runtime.run_pod(PodSpec("web", containers=[ContainerSpec("app")]))
            finally:
                assert run.stop() == 0  # flushes the state: a pod and a container

    arun(main, timeout=90)
    assert len(json.loads((state_dir / "cache").read_text())["containers"]) == 1
    for directory in (tmp_path / "var", tmp_path / "var" / "lib", state_dir):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700, directory
    for name in ("cache", "lock"):
        assert stat.S_IMODE((state_dir / name).stat().st_mode) == 0o600, name


def _write(content: bytes) -> Callable[[Path], None]:
    def make(state_dir: Path) -> None:
        (state_dir / "cache").write_bytes(content)
        os.chmod(state_dir / "cache", 0o600)

    return make


def _huge(state_dir: Path) -> None:
    with open(state_dir / "cache", "wb") as handle:
        handle.truncate(MAX_STATE_FILE_SIZE + 1)
    os.chmod(state_dir / "cache", 0o600)


def _fifo(state_dir: Path) -> None:
    os.mkfifo(state_dir / "cache", 0o600)


def _directory(state_dir: Path) -> None:
    (state_dir / "cache").mkdir()


def _chown_file(state_dir: Path) -> None:
    _write(b"{}")(state_dir)
    os.chown(state_dir / "cache", OTHER_UID, -1)


def _chown_dir(state_dir: Path) -> None:
    os.chown(state_dir, OTHER_UID, -1)


def _open_dir(state_dir: Path) -> None:
    os.chmod(state_dir, 0o777)


def _socket_lock(state_dir: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.bind(str(state_dir / "lock"))


VALID = {"version": 1, "policy": "template"}
ODD_STATE: dict[str, tuple[Callable[[Path], None], str]] = {
    "deeply nested JSON": (
        _write(b'{"version": 1, "policy_data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
        "is nested more than 64 levels deep",
    ),
    "larger than the cap": (_huge, f"is larger than {MAX_STATE_FILE_SIZE} bytes"),
    "truncated": (_write(json.dumps(VALID).encode()[:-3]), "is not valid JSON"),
    "not UTF-8": (_write(b'{"version": 1, "policy": "\xff"}'), "is not UTF-8 text"),
    "NaN": (_write(b'{"version": 1, "policy": "template", "x": NaN}'), "NaN is not a JSON"),
    "wrong types": (
        _write(json.dumps({**VALID, "pods": [{"id": 7, "name": ["web"]}] * 50}).encode()),
        "invalid state",
    ),
    "unknown version": (_write(b'{"version": 99}'), "unsupported state version 99"),
    "a directory": (_directory, "is not a regular file (a directory)"),
    "a FIFO": (_fifo, "is not a regular file (a FIFO)"),
    "another user's file": (_chown_file, f"owned by uid {OTHER_UID}, not by the daemon's"),
    "another user's directory": (_chown_dir, f"owned by uid {OTHER_UID}, not by the daemon's"),
    "a world-writable directory": (_open_dir, "mode 0777 lets group or others write it"),
    "a socket as lock file": (_socket_lock, "lock file"),
}


@pytest.mark.parametrize("case", sorted(ODD_STATE))
def test_odd_state_exits_4_with_one_line(tmp_path: Path, sysfs: Path, case: str) -> None:
    if "user's" in case and os.geteuid() != 0:
        pytest.skip("needs root to chown")
    make, reason = ODD_STATE[case]
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    make(state_dir)
    run = Run(tmp_path, sysfs, state_dir)
    assert run.wait() == 4, run.log_path.read_text()
    text = run.log_path.read_text()
    assert "Traceback" not in text
    (error,) = errors_of(run)
    assert reason in error
    assert len(error) < 3000
    assert error.count(f"{state_dir}/cache") <= 1  # named once, by the reason or after it
    assert not error.endswith(('errors=""', "errors=[]"))  # no empty field
    if case == "wrong types":  # a problem or more per pod: the first ten and a count
        message, _, fields = error.partition(" errors=")
        assert message.count("state.pods[") == 10 and fields.count("state.pods[") == 10
        assert re.search(r"; \.\.\. and \d+ more \(state file ", message)


def test_a_temp_named_directory_is_reported_and_left_alone(tmp_path: Path, sysfs: Path) -> None:
    state_dir = tmp_path / "state"
    state_dir.mkdir(mode=0o700)
    (state_dir / ".tmp-cache-x1y2z3").mkdir()
    (state_dir / ".tmp-cache-x1y2z3" / "keep").write_text("kept")
    (state_dir / ".tmp-cache-ab12cd").write_text("partial write")
    run = Run(tmp_path, sysfs, state_dir)
    try:
        warning = run.wait_line("left alone")
        assert warning.endswith(
            f"state directory {state_dir}: left alone .tmp-cache-x1y2z3: not a regular file"
        )
        run.wait_line(f"removed {state_dir}/.tmp-cache-ab12cd left by an interrupted write")
        run.wait_line("no saved state in")
        run.serving()
    finally:
        assert run.stop() == 0
    assert (state_dir / ".tmp-cache-x1y2z3" / "keep").read_text() == "kept"
    assert not (state_dir / ".tmp-cache-ab12cd").exists()
