"""``CgroupfsHostControl``: the HostControl port on cgroupfs (v1, v2 and hybrid hosts)."""

from __future__ import annotations

import os
import re

from nrirp.adapters.cgroups.layout import CgroupLayout, CgroupVersion, detect_layout
from nrirp.adapters.cgroups.mapping import v1_writes
from nrirp.adapters.cgroups.paths import container_cgroup_path
from nrirp.domain.model import HostChange
from nrirp.domain.ports.host_control import HostControlError, HostTarget

_SETTING_NAME = re.compile(r"[a-z][a-z0-9_]*(\.[A-Za-z0-9_]+)+")


class CgroupfsHostControl:
    """Writes a container's :class:`HostChange` cgroup settings into its cgroup files.

    ``root`` is the cgroup root (``/sys/fs/cgroup``; tests use a tree laid out like v1 or v2),
    ``proc_root`` where ``<pid>/cgroup`` is read when the target has no cgroup path. The layout
    is detected on first use. Settings are applied in the order given; every failure is
    collected and raised as one :class:`HostControlError` naming each file, after the settings
    that could be applied were. CPU classes, scheduling and I/O priority are not cgroup
    settings: asking for them is reported as an error (another adapter applies them).
    """

    def __init__(self, root: str = "/sys/fs/cgroup", *, proc_root: str = "/proc") -> None:
        self._root = root
        self._proc_root = proc_root
        self._layout: CgroupLayout | None = None

    @property
    def layout(self) -> CgroupLayout:
        if self._layout is None:
            self._layout = detect_layout(self._root)
        return self._layout

    def apply(self, target: HostTarget, change: HostChange) -> None:
        problems: list[str] = []
        for name, value in change.cgroup.items():
            try:
                self._set(target, name, value)
            except HostControlError as exc:
                problems.append(str(exc))
        for what, present in (
            ("CPU class", change.cpu_class is not None),
            ("scheduling", change.scheduling is not None),
            ("I/O priority", change.io_priority is not None),
        ):
            if present:
                problems.append(f"{what} is not applied by the cgroupfs host control")
        if problems:  # each once: a missing cgroup fails every file the same way
            said = "; ".join(dict.fromkeys(problems))
            raise HostControlError(f"container {target.container_id}: {said}")

    def forget(self, target: HostTarget) -> None:
        """Nothing is tracked per container (the runtime removes the cgroup)."""

    def tasks(self, target: HostTarget) -> list[int]:
        """The processes in the container's cgroup (``cgroup.procs``; on v1, of the ``cpu``
        hierarchy, else the first one mounted). Raises :class:`HostControlError` when the
        cgroup cannot be found or read."""
        layout = self.layout
        if layout.version is CgroupVersion.V2:
            directory = self._container_dir(layout.root, target, None)
        else:
            controller = "cpu" if "cpu" in layout.controllers else min(layout.controllers)
            hierarchy = layout.controller_dir(controller)
            assert hierarchy is not None
            directory = self._container_dir(hierarchy, target, controller)
        path = os.path.join(directory, "cgroup.procs")
        try:
            with open(path, encoding="ascii") as f:
                return [int(line) for line in f if line.strip()]
        except (OSError, ValueError) as exc:
            raise HostControlError(f"cannot read {path}: {exc}") from None

    def _set(self, target: HostTarget, name: str, value: str) -> None:
        if not _SETTING_NAME.fullmatch(name):
            raise HostControlError(f"invalid cgroup setting name {name!r}")
        layout = self.layout
        if layout.version is CgroupVersion.V2:
            directory = self._container_dir(layout.root, target, None)
            _write(os.path.join(directory, name), value)
            return
        for controller, file_name, converted in v1_writes(name, value, set(layout.controllers)):
            hierarchy = layout.controller_dir(controller)
            assert hierarchy is not None  # v1_writes checked the controller is mounted
            directory = self._container_dir(hierarchy, target, controller)
            _write(os.path.join(directory, file_name), converted)

    def _container_dir(self, hierarchy: str, target: HostTarget, controller: str | None) -> str:
        relative = container_cgroup_path(target, controller=controller, proc_root=self._proc_root)
        directory = os.path.normpath(os.path.join(hierarchy, relative.lstrip("/")))
        if directory != hierarchy and not directory.startswith(hierarchy.rstrip("/") + "/"):
            raise HostControlError(f"cgroup path {relative!r} leaves the hierarchy {hierarchy}")
        if not os.path.isdir(directory):
            raise HostControlError(
                f"cgroup {directory} of container {target.container_id} does not exist"
            )
        return directory


def _write(path: str, value: str) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
    except FileNotFoundError:
        raise HostControlError(f"cgroup file {path} does not exist") from None
    except OSError as exc:
        raise HostControlError(f"cannot open {path}: {exc.strerror}") from exc
    try:
        os.write(fd, value.encode())
    except OSError as exc:
        raise HostControlError(f"cannot write {value!r} to {path}: {exc.strerror}") from exc
    finally:
        os.close(fd)
