"""Interop with the Go NRI runtime side (containerd's pkg/adaptation, mux and ttRPC, NRI 0.6.1).

Uses the gomockrt harness in tools/gomockrt (built from Debian packages on first use). A raw
Python plugin made of this transport alone registers, is configured and synchronized, and serves a
container lifecycle; the messages cross the Go mux in both directions at sizes that break naive
framing (22 KB, 440 KB, 3.3 MB replies; a 1 MB request; a multi-MB Synchronize).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.gomockrt import build_gomockrt

PLUGIN = Path(__file__).with_name("go_plugin.py")


@pytest.fixture(scope="module")
def nrimockrt() -> Path:
    return build_gomockrt() / "bin" / "nrimockrt"


def run_harness(
    nrimockrt: Path, tmp_path: Path, sync: int, pods: int, plugin_args: str
) -> tuple[str, dict[str, object]]:
    out = tmp_path / "plugin.json"
    command = f"{sys.executable} {PLUGIN} --socket %s --out {out} {plugin_args}"
    result = subprocess.run(
        [
            str(nrimockrt),
            "-socket",
            str(tmp_path / "nri.sock"),
            "-pods",
            str(pods),
            "-warmup",
            "0",
            "-sync",
            str(sync),
            "-wait",
            "20s",
            "-exec",
            command,
        ],
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for _ in range(100):  # the plugin writes its record when terminated
        if out.exists() and out.stat().st_size:
            break
        time.sleep(0.05)
    return result.stdout + result.stderr, json.loads(out.read_text())


def test_go_runtime_drives_the_python_transport_with_large_messages(
    nrimockrt: Path, tmp_path: Path
) -> None:
    pods = 6
    output, seen = run_harness(
        nrimockrt,
        tmp_path,
        sync=500,
        pods=pods,
        plugin_args="--register-pad 1000000 --reply-pads 22000,440000,3300000",
    )
    assert "plugin 42-pyinterop connected" in output
    assert "(err=<nil>)" in output, output  # Synchronize succeeded
    assert "closed during the run" not in output
    assert "ERROR" not in output
    calls = seen["calls"]
    largest = seen["largest_request"]
    assert isinstance(calls, dict) and isinstance(largest, dict)
    assert calls["Configure"] == 1 and calls["Synchronize"] == 1
    assert calls["CreateContainer"] == pods and calls["StopContainer"] == pods
    assert largest["Synchronize"] > 1_000_000  # Go-framed multi-MB message reassembled


def test_oversized_synchronize_from_go_gets_resource_exhausted(
    nrimockrt: Path, tmp_path: Path
) -> None:
    output, seen = run_harness(nrimockrt, tmp_path, sync=1500, pods=1, plugin_args="")
    assert "code = ResourceExhausted desc = message length" in output, output
    assert "exceed maximum message size of 4194304" in output
    calls = seen["calls"]
    assert isinstance(calls, dict) and "Synchronize" not in calls  # discarded, never dispatched
