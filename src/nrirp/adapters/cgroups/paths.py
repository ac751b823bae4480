"""Where a container's cgroup is, relative to a hierarchy's root.

Forms handled, in order:

* ``cgroups_path`` of the systemd driver, ``slice:prefix:name``
  (``kubepods-burstable-pod<uid>.slice:cri-containerd:<id>``), expanded the way systemd nests
  slices (``kubepods.slice/kubepods-burstable.slice/...pod<uid>.slice/cri-containerd-<id>.scope``);
* ``cgroups_path`` of the cgroupfs driver (``/kubepods/burstable/pod<uid>/<id>``);
* the pod's cgroup parent plus the container id;
* the container process's ``/proc/<pid>/cgroup``.
"""

from __future__ import annotations

import os

from nrirp.domain.ports.host_control import HostControlError, HostTarget


def expand_slice(slice_name: str) -> str:
    """``a-b-c.slice`` -> ``a.slice/a-b.slice/a-b-c.slice`` (``-.slice`` is the root)."""
    if slice_name in ("", "-.slice"):
        return ""
    if not slice_name.endswith(".slice") or "/" in slice_name:
        raise HostControlError(f"invalid systemd slice name {slice_name!r}")
    stem = slice_name[: -len(".slice")]
    parts = stem.split("-")
    if any(not part for part in parts):
        raise HostControlError(f"invalid systemd slice name {slice_name!r}")
    return "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))


def expand_systemd_path(cgroups_path: str) -> str:
    """The cgroup path (from the root, leading ``/``) of a systemd-driver ``slice:prefix:name``."""
    slice_name, prefix, name = cgroups_path.split(":", 2)
    unit = name if name.endswith((".scope", ".slice")) else f"{prefix}-{name}.scope"
    parent = expand_slice(slice_name)
    return "/" + "/".join(p for p in (parent, unit) if p)


def _from_proc(proc_root: str, pid: int, controller: str | None) -> str | None:
    """The process's cgroup path for ``controller`` (``None``: the v2 ``0::`` line)."""
    try:
        with open(os.path.join(proc_root, str(pid), "cgroup")) as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if controller is None and hierarchy == "0" and controllers == "":
            return path
        if controller is not None and controller in controllers.split(","):
            return path
    return None


def container_cgroup_path(
    target: HostTarget, *, controller: str | None = None, proc_root: str = "/proc"
) -> str:
    """The container's cgroup path (leading ``/``) within a hierarchy.

    ``controller`` selects the v1 hierarchy when the path comes from ``/proc/<pid>/cgroup``.
    Raises :class:`HostControlError` when nothing says where the container is.
    """
    path = target.cgroups_path
    if path:
        if ":" in path:
            return expand_systemd_path(path)
        return path if path.startswith("/") else "/" + path
    if target.cgroup_parent:
        parent = target.cgroup_parent
        if parent.endswith(".slice"):
            return expand_systemd_path(f"{parent}:cri-containerd:{target.container_id}")
        return "/" + "/".join(p for p in (parent.strip("/"), target.container_id) if p)
    if target.pid:
        found = _from_proc(proc_root, target.pid, controller)
        if found is not None:
            return found
    raise HostControlError(
        f"cannot locate the cgroup of container {target.container_id}: "
        "no cgroups path, cgroup parent or process"
    )
