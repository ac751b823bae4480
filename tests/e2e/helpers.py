"""Small checks shared by the e2e self-tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness.cgroups import host_hierarchies


def online_cpus() -> list[int]:
    """The host's online CPU ids."""
    cpus: list[int] = []
    for part in Path("/sys/devices/system/cpu/online").read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        cpus += range(int(lo), int(hi or lo) + 1)
    return cpus


def require_cpus(count: int) -> list[int]:
    """The online CPUs, failing (not skipping) the test when there are fewer than ``count``."""
    cpus = online_cpus()
    if len(cpus) < count:
        pytest.fail(f"this test needs {count} online CPUs, the host has {cpus}", pytrace=False)
    return cpus


def cgroup_dirs(cgroup_path: str) -> list[Path]:
    """The existing directories of ``cgroup_path`` across all mounted hierarchies."""
    found = []
    for h in host_hierarchies():
        directory = h.directory(cgroup_path)
        if directory.is_dir():
            found.append(directory)
    return found
