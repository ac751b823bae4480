"""Unmount whatever a runtime instance left mounted below its private directory."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .cgroups import parse_mountinfo


def mounts_under(root: Path, mountinfo_text: str | None = None) -> list[str]:
    """Mountpoints at or below ``root``, deepest first."""
    if mountinfo_text is None:
        mountinfo_text = Path("/proc/self/mountinfo").read_text()
    prefix = str(root).rstrip("/")
    points = {
        m.mountpoint
        for m in parse_mountinfo(mountinfo_text)
        if m.mountpoint == prefix or m.mountpoint.startswith(prefix + "/")
    }
    return sorted(points, key=lambda p: (p.count("/"), p), reverse=True)


def unmount_under(root: Path) -> list[str]:
    """Unmount everything at or below ``root`` (lazily if a plain unmount fails).

    Returns the mountpoints still mounted afterwards (empty on success).
    """
    for _ in range(3):  # a mountpoint may be stacked several times
        points = mounts_under(root)
        if not points:
            return []
        for point in points:
            plain = subprocess.run(["umount", point], capture_output=True, check=False)
            if plain.returncode != 0:
                subprocess.run(["umount", "-l", point], capture_output=True, check=False)
    return mounts_under(root)
