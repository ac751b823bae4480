"""Containers whose cgroup is gone: they disappeared without a delete.

A v0.1 runtime tells the plugin about deletes only while it runs: a runtime crash, a killed
shim or a node reboot leaves containers in the state that no longer exist. Their cgroup
(from the cgroups path the create request gave) is the evidence: runc removes it when the
container goes, and a reboot removes them all.
"""

from __future__ import annotations

import os

from nrirp.adapters.cgroups import CgroupfsHostControl, CgroupVersion, container_cgroup_path
from nrirp.domain.model import Container
from nrirp.domain.ports.host_control import HostControlError, HostTarget


class CgroupPresence:
    """Whether containers' cgroups exist, in the hierarchy the policy's settings live in
    (cpuset on v1, the unified tree on v2)."""

    def __init__(self, host: CgroupfsHostControl) -> None:
        self._host = host

    def _hierarchy(self) -> str | None:
        layout = self._host.layout
        if layout.version is CgroupVersion.V2:
            return layout.root
        return layout.controller_dir("cpuset") or layout.controller_dir("cpu")

    def gone(self, container: Container) -> bool:
        """Whether ``container``'s cgroup is known and does not exist. A container without a
        cgroups path (one an agent reported through the engine API) is never taken as gone."""
        if not container.cgroups_path:
            return False
        try:
            hierarchy = self._hierarchy()
            if hierarchy is None:
                return False
            target = HostTarget(container.id, container.pod_id, "", container.cgroups_path)
            relative = container_cgroup_path(target)
        except HostControlError:
            return False
        return not os.path.isdir(os.path.join(hierarchy, relative.lstrip("/")))

    def stale(self, containers: list[Container]) -> list[Container]:
        """The containers among ``containers`` that hold resources and whose cgroup is gone."""
        return [c for c in containers if c.state.holds_resources and self.gone(c)]
