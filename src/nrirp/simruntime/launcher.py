"""Starting a plugin the way containerd starts a pre-launched one.

containerd ``exec``s ``NN-name`` from its plugin directory with exactly three environment
variables (``NRI_PLUGIN_NAME``, ``NRI_PLUGIN_IDX``, ``NRI_PLUGIN_SOCKET=3``), fd 3 being one end of
a socketpair, and stdin/stdout/stderr on /dev/null. Python's ``subprocess`` cannot place an fd at a
chosen number without running code in the forked child, so a tiny trampoline (this interpreter,
isolated) moves the socket to fd 3 and ``execve``s the plugin with the exact environment: the
plugin process sees what containerd would give it, with the same pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Sequence

from nrirp.simruntime.errors import PluginStartError

PLUGIN_NAME_ENV = "NRI_PLUGIN_NAME"
PLUGIN_IDX_ENV = "NRI_PLUGIN_IDX"
PLUGIN_SOCKET_ENV = "NRI_PLUGIN_SOCKET"

_TRAMPOLINE = (
    "import os,sys\n"
    "fd=int(sys.argv[1])\n"
    "if fd!=3:\n"
    " os.dup2(fd,3)\n"
    " os.close(fd)\n"
    "env={'NRI_PLUGIN_NAME':sys.argv[2],'NRI_PLUGIN_IDX':sys.argv[3],'NRI_PLUGIN_SOCKET':'3'}\n"
    "os.execve(sys.argv[4],sys.argv[4:],env)\n"
)


def resolve_executable(command: Sequence[str]) -> list[str]:
    """``command`` with its program as an absolute path (containerd runs a path, not a name)."""
    if not command:
        raise PluginStartError("empty plugin command")
    program = command[0]
    path = program if os.sep in program else shutil.which(program)
    if path is None or not os.path.isfile(path) or not os.access(path, os.X_OK):
        raise PluginStartError(f"plugin executable {program!r} not found or not executable")
    return [os.path.abspath(path), *command[1:]]


async def launch(
    command: Sequence[str], name: str, index: str, *, log_path: str | None = None
) -> tuple[asyncio.subprocess.Process, socket.socket]:
    """Start ``command`` as a pre-launched plugin; return it and the runtime's socket end."""
    argv = resolve_executable(command)
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    stderr = subprocess.DEVNULL if log_path is None else open(log_path, "ab")  # noqa: SIM115
    try:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-I",
            "-S",
            "-c",
            _TRAMPOLINE,
            str(theirs.fileno()),
            name,
            index,
            *argv,
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env={},
        )
    except BaseException:
        ours.close()
        raise
    finally:
        theirs.close()
        if log_path is not None and not isinstance(stderr, int):
            stderr.close()
    return process, ours


async def kill(process: asyncio.subprocess.Process) -> None:
    """SIGKILL the plugin and reap it (Go's runtime does not ask politely either)."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            process.kill()
    await process.wait()
