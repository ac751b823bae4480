"""A stand-in pre-launched plugin that reports how containerd started it.

It logs one line ``probe {json}`` (argv, environment, whether fd 3 is a socket). Then, given
``--exec PROGRAM ARGS...``, it execs PROGRAM without ``NRI_PLUGIN_NAME``/``NRI_PLUGIN_IDX`` (fd 3
stays open, so e.g. the Go ``nristub`` registers over it); otherwise it waits for EOF on fd 3
without registering. Used by the harness self-tests as
``python -m tests.e2e.harness.probe_plugin``.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys


def main(argv: list[str]) -> int:
    try:
        fd3_is_socket = stat.S_ISSOCK(os.fstat(3).st_mode)
    except OSError:
        fd3_is_socket = False
    hidden = ("PYTHONUNBUFFERED", "PYTHONPATH")  # set by the wrapper script itself
    report = {
        "pid": os.getpid(),
        "argv": argv,
        "env": {k: v for k, v in os.environ.items() if k not in hidden},
        "fd3_is_socket": fd3_is_socket,
        "python": sys.executable,
    }
    print("probe " + json.dumps(report, sort_keys=True), flush=True)
    if argv[:1] == ["--exec"] and len(argv) > 1:
        # The Go stub refuses a name/index given both by env and by flags (nristub always passes
        # flags); containerd ignores the registered identity of pre-launched plugins anyway.
        env = {
            k: v for k, v in os.environ.items() if k not in ("NRI_PLUGIN_NAME", "NRI_PLUGIN_IDX")
        }
        os.execve(argv[1], argv[1:], env)
    if fd3_is_socket:
        with socket.socket(fileno=3) as conn:
            while conn.recv(4096):
                pass
        print("probe: fd 3 closed", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
