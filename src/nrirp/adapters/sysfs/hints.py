"""Topology hints from sysfs: where the devices and mounts a container gets are attached.

A device ``M:m`` of type ``c``/``b`` is ``<root>/dev/{char,block}/M:m``, a link into
``<root>/devices/...``. From there the device tree is walked up to the first directory with a
usable ``local_cpulist`` or ``numa_node`` (``-1`` means unknown): that directory is the hint's
provider (named as on the host, ``/sys/devices/...``). Virtual block devices (md, dm) give the
hints of their ``slaves``.

Mounts give hints when their host path (``source``) is

* a device directory under ``/sys/devices/`` (looked up in the tree at ``root``);
* a device node (``/dev/...``) or a path on a block device: ``stat()`` gives the device
  (``st_rdev`` of a device node, else the ``st_dev`` holding the path; major 0 is virtual and
  gives nothing). Only with ``resolve_host_paths`` (off when ``root`` is not the host's sysfs);
  read-only mounts and mounts at small-file container paths (``/etc/``, ``/dev/termination-log``,
  libraries) are skipped, as in the reference.

Nothing here raises for odd trees: unreadable or malformed files skip that hint (logged at
debug level).
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable
from typing import TypeVar

from nrirp.domain.cpuset import EMPTY, CPUSet, CPUSetError
from nrirp.domain.model import Container, Device, Mount
from nrirp.domain.topology.hints import HintOrigin, TopologyHint

log = logging.getLogger(__name__)
_T = TypeVar("_T", Mount, Device)

HOST_SYSFS = "/sys"
IGNORED_CONTAINER_PATHS = (
    "/.cri-resmgr",
    "/.nri-resource-policy",
    "/etc/",
    "/dev/termination-log",
    "/lib/",
    "/lib64/",
    "/usr/lib/",
    "/usr/lib32/",
    "/usr/lib64/",
)
"""Container paths whose mounts never give hints (configuration and library files)."""
_SYSFS_DEVICES = HOST_SYSFS + "/devices/"
_MAX_SLAVE_DEPTH = 4  # dm over md over partitions is as deep as it gets in practice
_ATTR_LIMIT = 65536


class SysfsTopologyHints:
    """The ``TopologyHintSource`` port on a sysfs tree (``/sys`` or a copy of one)."""

    def __init__(
        self,
        sysfs_root: str = HOST_SYSFS,
        *,
        resolve_host_paths: bool | None = None,
        stat_path: Callable[[str], os.stat_result] = os.stat,
    ) -> None:
        """``resolve_host_paths``: ``stat()`` mount sources to find their device (default:
        only when ``sysfs_root`` is the host's ``/sys``). ``stat_path`` is for tests."""
        self.root = os.path.realpath(sysfs_root)
        self._devices = self.root + "/devices/"
        if resolve_host_paths is None:
            resolve_host_paths = self.root == HOST_SYSFS
        self.resolve_host_paths = resolve_host_paths
        self._stat = stat_path

    # ------------------------------------------------------------------ the port
    def hints(self, container: Container) -> dict[str, TopologyHint]:
        found: dict[str, TopologyHint] = {}
        resolve = self.resolve_host_paths
        for mount in container.mounts:
            # the checks _mount_hints starts with, without a call: most mounts (/proc, /dev,
            # bind mounts of small files) give nothing, and a Synchronize looks at thousands
            source = mount.source
            if not source.startswith(_SYSFS_DEVICES) and (
                not resolve
                or not source.startswith("/")
                or "ro" in mount.options
                or mount.destination.startswith(IGNORED_CONTAINER_PATHS)
            ):
                continue
            for hint in self._guard(self._mount_hints, mount):
                found.setdefault(hint.provider, hint)
        for device in container.devices:
            for hint in self._guard(self._device_hints, device):
                found.setdefault(hint.provider, hint)
        return found

    def _guard(self, fn: Callable[[_T], list[TopologyHint]], item: _T) -> list[TopologyHint]:
        try:
            return fn(item)
        except (OSError, ValueError) as exc:
            log.debug("no topology hint for %s: %s", item, exc)
            return []

    # ------------------------------------------------------------------ devices
    def _device_hints(self, device: Device) -> list[TopologyHint]:
        kind = {"c": "char", "u": "char", "b": "block"}.get(device.type)
        if kind is None or device.major <= 0:
            return []
        return self._node_hints(kind, device.major, device.minor, HintOrigin.DEVICES, device.path)

    def _node_hints(
        self, kind: str, major: int, minor: int, origin: HintOrigin, path: str
    ) -> list[TopologyHint]:
        link = f"{self.root}/dev/{kind}/{major}:{minor}"
        if not os.path.lexists(link):
            log.debug("no topology hint for %s: %s does not exist", path, link)
            return []
        return self._tree_hints(os.path.realpath(link), origin, path, 0)

    def _tree_hints(
        self, real: str, origin: HintOrigin, path: str, depth: int
    ) -> list[TopologyHint]:
        if not real.startswith(self._devices):
            log.debug("no topology hint for %s: %s is outside %s", path, real, self._devices)
            return []
        if "/devices/virtual/" in real[len(self.root) :]:
            return self._slave_hints(real, origin, path, depth)
        directory = real
        while directory.startswith(self._devices):
            hint = self._read_hint(directory, origin, path)
            if hint is not None:
                return [hint]
            directory = directory.rpartition("/")[0]
        return []

    def _slave_hints(
        self, real: str, origin: HintOrigin, path: str, depth: int
    ) -> list[TopologyHint]:
        if depth >= _MAX_SLAVE_DEPTH:
            return []
        try:
            slaves = sorted(os.listdir(real + "/slaves"))
        except OSError:
            return []
        out: list[TopologyHint] = []
        for name in slaves:
            target = os.path.realpath(f"{real}/slaves/{name}")
            out.extend(self._tree_hints(target, origin, path, depth + 1))
        return out

    def _read_hint(self, directory: str, origin: HintOrigin, path: str) -> TopologyHint | None:
        cpus = EMPTY
        text = _read(directory + "/local_cpulist")
        if text is not None:
            try:
                cpus = CPUSet.parse(text.strip())
            except CPUSetError as exc:
                log.debug("%s/local_cpulist ignored: %s", directory, exc)
        nodes = EMPTY
        text = _read(directory + "/numa_node")
        if text is not None:
            try:
                node = int(text.strip(), 10)
            except ValueError:
                log.debug("%s/numa_node ignored: not an integer: %r", directory, text[:40])
            else:
                nodes = CPUSet.of(node) if node >= 0 else EMPTY
        if not cpus and not nodes:
            return None
        provider = HOST_SYSFS + directory[len(self.root) :]
        return TopologyHint(provider, cpus=cpus, nodes=nodes, origin=origin, path=path)

    # ------------------------------------------------------------------ mounts
    def _mount_hints(self, mount: Mount) -> list[TopologyHint]:
        source = mount.source
        if source.startswith(_SYSFS_DEVICES):
            real = os.path.realpath(self.root + source[len(HOST_SYSFS) :])
            return self._tree_hints(real, HintOrigin.MOUNTS, source, 0)
        if not self.resolve_host_paths or not source.startswith("/"):
            return []
        if "ro" in mount.options or mount.destination.startswith(IGNORED_CONTAINER_PATHS):
            return []
        info = self._stat(source)
        if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
            kind = "char" if stat.S_ISCHR(info.st_mode) else "block"
            number = info.st_rdev
        else:
            kind, number = "block", info.st_dev
        major, minor = os.major(number), os.minor(number)
        if major == 0:  # tmpfs, overlay, proc, ...: no device
            return []
        return self._node_hints(kind, major, minor, HintOrigin.MOUNTS, source)


def _read(path: str) -> str | None:
    """An attribute file's text; None when missing, unreadable or not text."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
            log.debug("%s: cannot open: %s", path, exc.strerror)
        return None
    try:
        data = os.read(fd, _ATTR_LIMIT)
    except OSError as exc:
        log.debug("%s: cannot read: %s", path, exc.strerror)
        return None
    finally:
        os.close(fd)
    try:
        return data.decode("ascii")
    except UnicodeDecodeError:
        log.debug("%s: not text", path)
        return None
