"""Process helpers that only ever act on explicit PIDs (never by name)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import attrs


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # the state letter follows the parenthesised command name, which may contain spaces
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def wait_gone(pid: int, timeout: float, proc: subprocess.Popen[bytes] | None = None) -> bool:
    """Wait until ``pid`` is gone (reaping it when it is our child); True if it went away."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None:
            if proc.poll() is not None:
                return True
        elif not pid_alive(pid):
            return True
        time.sleep(0.02)
    return False


def terminate(pid: int, timeout: float = 10.0, proc: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM ``pid``, then SIGKILL it if it is still there after ``timeout`` seconds."""
    for sig, wait in ((signal.SIGTERM, timeout), (signal.SIGKILL, 10.0)):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            break
        if wait_gone(pid, wait, proc):
            break
    if proc is not None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1)


def cmdline(pid: int) -> list[str]:
    """The argv of ``pid`` ([] when it is gone or a kernel thread)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


@attrs.frozen
class ShimProcess:
    """A containerd shim serving one runtime instance (identified by its ``-address``)."""

    pid: int
    namespace: str
    id: str
    address: str


def _flag(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv[:-1]):
        if arg in (f"-{name}", f"--{name}"):
            return argv[i + 1]
    for arg in argv:
        for prefix in (f"-{name}=", f"--{name}="):
            if arg.startswith(prefix):
                return arg[len(prefix) :]
    return None


def parse_shim(pid: int, argv: list[str]) -> ShimProcess | None:
    """Recognise a containerd shim from its argv (``containerd-shim-* -namespace N -id I
    -address A``)."""
    if not argv or not Path(argv[0]).name.startswith("containerd-shim"):
        return None
    address = _flag(argv, "address")
    if address is None:
        return None
    return ShimProcess(pid, _flag(argv, "namespace") or "", _flag(argv, "id") or "", address)


def shims_of(address: str | Path) -> list[ShimProcess]:
    """Shim processes started by the containerd listening on ``address`` (its gRPC socket)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        shim = parse_shim(int(entry.name), cmdline(int(entry.name)))
        if shim is not None and shim.address == str(address):
            found.append(shim)
    return found
