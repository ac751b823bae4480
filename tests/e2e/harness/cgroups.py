"""Read a process's cgroup settings on cgroup v1, v2 or hybrid hosts.

The cgroup of a process comes from ``/proc/<pid>/cgroup``; where each hierarchy is mounted comes
from ``/proc/self/mountinfo``. On v1 (and hybrid hosts such as this VM, v1 controllers plus an empty
cgroup2 at /sys/fs/cgroup/unified) a controller's file lives in that controller's hierarchy; on a
pure v2 host every file lives in the unified hierarchy under its v2 name.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

import attrs

V1_UNLIMITED_MEMORY_THRESHOLD = 1 << 62  # v1 reports "no limit" as a page-rounded huge value


class CgroupError(RuntimeError):
    """A cgroup file or hierarchy that is missing or unreadable."""


@attrs.frozen
class MountInfo:
    """One line of ``/proc/<pid>/mountinfo``."""

    mount_id: int
    root: str
    mountpoint: str
    fstype: str
    source: str
    super_options: tuple[str, ...]


def _unescape(field: str) -> str:
    """Undo the kernel's octal escaping of space, tab, newline and backslash."""
    out, i = [], 0
    while i < len(field):
        code = field[i + 1 : i + 4]
        if field[i] == "\\" and len(code) == 3 and code.isdigit():
            out.append(chr(int(code, 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[MountInfo]:
    """Parse mountinfo text (see proc(5)); malformed lines raise ValueError."""
    mounts = []
    for line in text.splitlines():
        if not line.strip():
            continue
        fields = line.split(" ")
        try:
            sep = fields.index("-", 6)
            mounts.append(
                MountInfo(
                    mount_id=int(fields[0]),
                    root=_unescape(fields[3]),
                    mountpoint=_unescape(fields[4]),
                    fstype=fields[sep + 1],
                    source=_unescape(fields[sep + 2]),
                    super_options=tuple(fields[sep + 3].split(","))
                    if len(fields) > sep + 3
                    else (),
                )
            )
        except (ValueError, IndexError) as exc:
            raise ValueError(f"malformed mountinfo line: {line!r}") from exc
    return mounts


@attrs.frozen
class Hierarchy:
    """A mounted cgroup hierarchy: v1 with its controllers (or ``name=`` tag), or v2."""

    mountpoint: Path
    root: str
    version: int
    controllers: frozenset[str]

    def directory(self, cgroup_path: str) -> Path:
        """The directory of ``cgroup_path`` (as seen in /proc/<pid>/cgroup) in this mount."""
        root = self.root.rstrip("/")
        if root and not (cgroup_path == root or cgroup_path.startswith(root + "/")):
            raise CgroupError(f"cgroup {cgroup_path} is outside the mount root {self.root}")
        return self.mountpoint / cgroup_path[len(root) :].lstrip("/")


def cgroup_hierarchies(mounts: Iterable[MountInfo]) -> list[Hierarchy]:
    """The cgroup hierarchies among ``mounts`` (the first mount of each hierarchy wins)."""
    found: list[Hierarchy] = []
    seen: set[frozenset[str]] = set()
    for m in mounts:
        if m.fstype == "cgroup2":
            key = frozenset({"<v2>"})
            version, controllers = 2, frozenset[str]()
        elif m.fstype == "cgroup":
            known = {"rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "xattr"}
            controllers = frozenset(
                o for o in m.super_options if o not in known and not o.startswith("release_agent")
            )
            key, version = controllers, 1
        else:
            continue
        if key in seen:
            continue
        seen.add(key)
        found.append(Hierarchy(Path(m.mountpoint), m.root, version, controllers))
    return found


@attrs.frozen
class ProcCgroups:
    """A process's membership: v1 controller (or ``name=x``) -> path, and the v2 path if any."""

    v1: dict[str, str]
    v2: str | None

    @classmethod
    def parse(cls, text: str) -> ProcCgroups:
        v1: dict[str, str] = {}
        v2: str | None = None
        for line in text.splitlines():
            if not line.strip():
                continue
            hid, controllers, path = line.split(":", 2)
            if hid == "0" and controllers == "":
                v2 = path
            else:
                for c in controllers.split(","):
                    v1[c] = path
        return cls(v1, v2)


# v1 file name -> (v2 file name) where the name differs between versions
_V2_NAMES = {
    "cpu.shares": "cpu.weight",
    "memory.limit_in_bytes": "memory.max",
}


@attrs.frozen
class CpuSettings:
    """CPU bandwidth settings; ``quota`` is -1 when unlimited. ``shares`` is v1, ``weight`` v2."""

    shares: int | None
    weight: int | None
    quota: int
    period: int


@attrs.frozen
class CgroupView:
    """The cgroup files of one process (or one cgroup path) on this host."""

    membership: ProcCgroups
    hierarchies: tuple[Hierarchy, ...]

    @classmethod
    def of_pid(cls, pid: int) -> CgroupView:
        """The cgroups of a live process."""
        try:
            membership = ProcCgroups.parse(Path(f"/proc/{pid}/cgroup").read_text())
        except FileNotFoundError as exc:
            raise CgroupError(f"process {pid} does not exist") from exc
        return cls(membership, tuple(host_hierarchies()))

    @property
    def is_v2(self) -> bool:
        """True when the controllers live in the unified hierarchy (pure v2 host)."""
        return not any(
            h.version == 1 and h.controllers - {"name=systemd"} for h in self.hierarchies
        )

    def directory(self, controller: str) -> Path:
        """The cgroup directory holding ``controller``'s files for this process."""
        if not self.is_v2:
            for h in self.hierarchies:
                if (
                    h.version == 1
                    and controller in h.controllers
                    and controller in self.membership.v1
                ):
                    return h.directory(self.membership.v1[controller])
            raise CgroupError(f"no cgroup v1 hierarchy with controller {controller!r}")
        for h in self.hierarchies:
            if h.version == 2 and self.membership.v2 is not None:
                return h.directory(self.membership.v2)
        raise CgroupError("no cgroup v2 hierarchy for this process")

    def read(self, v1_name: str) -> str:
        """Read a controller file by its v1 name (translated to v2 where the name differs)."""
        controller = v1_name.split(".", 1)[0]
        name = _V2_NAMES.get(v1_name, v1_name) if self.is_v2 else v1_name
        path = self.directory(controller) / name
        try:
            return path.read_text().strip()
        except OSError as exc:
            raise CgroupError(f"cannot read {path}: {exc}") from exc

    def cpuset_cpus(self) -> str:
        """The cgroup's configured ``cpuset.cpus`` (Linux list syntax)."""
        return self.read("cpuset.cpus")

    def cpuset_mems(self) -> str:
        """The cgroup's configured ``cpuset.mems``."""
        return self.read("cpuset.mems")

    def effective_cpus(self) -> str:
        """``cpuset.effective_cpus`` (v1) / ``cpuset.cpus.effective`` (v2)."""
        return self.read("cpuset.cpus.effective" if self.is_v2 else "cpuset.effective_cpus")

    def cpu(self) -> CpuSettings:
        """Shares (v1) or weight (v2) and the CFS quota/period."""
        if self.is_v2:
            quota, period = self.read("cpu.max").split()
            return CpuSettings(
                shares=None,
                weight=int(self.read("cpu.shares")),  # read as cpu.weight on v2
                quota=-1 if quota == "max" else int(quota),
                period=int(period),
            )
        return CpuSettings(
            shares=int(self.read("cpu.shares")),
            weight=None,
            quota=int(self.read("cpu.cfs_quota_us")),
            period=int(self.read("cpu.cfs_period_us")),
        )

    def memory_limit(self) -> int | None:
        """The memory limit in bytes, ``None`` when unlimited."""
        raw = self.read("memory.limit_in_bytes")
        if raw == "max":
            return None
        value = int(raw)
        return None if value >= V1_UNLIMITED_MEMORY_THRESHOLD else value


def shares_to_weight(shares: int) -> int:
    """runc's conversion of cgroup v1 cpu.shares to a v2 cpu.weight."""
    if shares == 0:
        return 0
    return 1 + ((shares - 2) * 9999) // 262142


def host_hierarchies() -> list[Hierarchy]:
    """The cgroup hierarchies mounted in this process's mount namespace."""
    return cgroup_hierarchies(parse_mountinfo(Path("/proc/self/mountinfo").read_text()))


def remove_cgroup_tree(
    cgroup_path: str, hierarchies: Sequence[Hierarchy] | None = None
) -> list[str]:
    """Remove ``cgroup_path`` and any child cgroups in every hierarchy, deepest first.

    Returns the problems met (a cgroup still holding processes cannot be removed); a missing
    directory is not a problem.
    """
    if not cgroup_path.startswith("/") or cgroup_path.rstrip("/") == "":
        raise ValueError(f"refusing to remove cgroup {cgroup_path!r}")
    problems = []
    for h in hierarchies if hierarchies is not None else host_hierarchies():
        try:
            top = h.directory(cgroup_path)
        except CgroupError:
            continue
        if not top.is_dir():
            continue
        dirs = [Path(d) for d, _, _ in os.walk(top)]
        for d in sorted(dirs, key=lambda p: len(p.parts), reverse=True):
            try:
                d.rmdir()
            except FileNotFoundError:
                pass
            except OSError as exc:
                reason = "still has processes" if exc.errno == errno.EBUSY else str(exc)
                problems.append(f"{d}: {reason}")
    return problems
