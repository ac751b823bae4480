"""Which cgroup hierarchy a host has under a cgroup root: unified v2, or v1 controllers.

A hybrid host (v1 controllers plus a controller-less cgroup2 at ``<root>/unified``, like this
project's VM) is treated as v1, since that is where the controllers are.
"""

from __future__ import annotations

import enum
import os

import attrs

from nrirp.domain.ports.host_control import HostControlError


class CgroupVersion(enum.Enum):
    V1 = "v1"
    V2 = "v2"


@attrs.frozen
class CgroupLayout:
    """The hierarchy under ``root``; for v1, the directory of each controller's hierarchy."""

    root: str
    version: CgroupVersion
    controllers: dict[str, str] = attrs.field(factory=dict)
    """v1: controller name -> mount directory (``cpu`` -> ``<root>/cpu,cpuacct``)."""

    def controller_dir(self, controller: str) -> str | None:
        if self.version is CgroupVersion.V2:
            return self.root
        return self.controllers.get(controller)


def detect_layout(root: str) -> CgroupLayout:
    """Inspect ``root`` (e.g. ``/sys/fs/cgroup``); raise :class:`HostControlError` if it holds
    no cgroup hierarchy."""
    if os.path.isfile(os.path.join(root, "cgroup.controllers")):
        return CgroupLayout(root, CgroupVersion.V2)
    try:
        entries = sorted(os.listdir(root))
    except OSError as exc:
        raise HostControlError(f"cannot read cgroup root {root}: {exc}") from exc
    controllers: dict[str, str] = {}
    for entry in entries:
        path = os.path.join(root, entry)
        if entry == "unified" or not os.path.isdir(path) or os.path.islink(path):
            continue
        for name in entry.split(","):
            if name.startswith("name="):
                continue
            controllers.setdefault(name, path)
    if not controllers:
        raise HostControlError(f"no cgroup v1 controllers or cgroup v2 hierarchy under {root}")
    return CgroupLayout(root, CgroupVersion.V1, controllers)
