"""``ResctrlFs``: the ResctrlControl port on the resctrl file system (``/sys/fs/resctrl``).

``info/L3``, ``info/L2`` (or ``L3CODE``/``L3DATA`` with CDP) give ``cbm_mask``,
``min_cbm_bits`` and ``num_closids``; ``info/MB`` gives ``min_bandwidth``,
``bandwidth_gran`` and ``num_closids``; the root ``schemata`` gives the cache ids (and, with
``MB`` values above 100, that resctrl takes MBps). A group is a directory; the kernel fills
it with its files when it is made (``mkdir``). Its schemata are written one line at a time so
that a refused line is named. On a tree that is not resctrl (the fake host trees), a new
group's ``schemata`` is created by the write and its files are removed before its directory.

A group's ``tasks`` lists the tasks in it (runc writes a container's there when it creates
it); removing a group moves them to the root group, so the groups of the configuration that
hold tasks are left at shutdown and adopted by the next daemon (on a fake tree a group has no
``tasks`` until a test writes one: empty).
"""

from __future__ import annotations

import contextlib
import errno
import os

from nrirp.adapters.hostcontrol.files import (
    raise_problems,
    read_int,
    read_journal,
    read_text,
    unwritable,
    write_journal,
)
from nrirp.domain.hostcontrol.resctrl import BandwidthInfo, CacheInfo, ResctrlInfo, ResctrlPlan
from nrirp.domain.ports.host_control import HostControlError


class ResctrlFs:
    """resctrl groups under ``root``. The groups it owns (made, or found under a name the plan
    gives, or named by the journal) and the root group's schemata before its first write are
    kept in ``journal`` (a file in the daemon's state directory) as soon as they are known, so
    that the next daemon, also after a SIGKILL, takes the groups over and can still put the
    root group back."""

    def __init__(self, root: str = "/sys/fs/resctrl", journal: str | None = None) -> None:
        self.root = root.rstrip("/") or "/"
        self._journal = journal
        self._owned: set[str] = set()
        """Groups that are the daemon's: made or adopted, this run or by an earlier daemon."""
        self._earlier: set[str] = set()
        """Owned groups known from the journal only (no plan of this run has named them)."""
        self._planned: frozenset[str] = frozenset()  # the groups of the plan applied last
        self._original: dict[str, str] = {}  # group -> schemata before the first write
        self._written: dict[str, tuple[str, ...]] = {}
        if journal is not None:
            self._load(journal)

    # ------------------------------------------------------------------ info
    def info(self) -> ResctrlInfo:
        info_dir = os.path.join(self.root, "info")
        if not os.path.isdir(info_dir):
            raise HostControlError(f"no resctrl: {info_dir} is missing (is resctrl mounted?)")
        schemata = os.path.join(self.root, "schemata")
        why = unwritable(schemata)
        if why is not None:
            raise HostControlError(f"resctrl cannot be changed: {why}")
        ids = _schemata_ids(read_text(schemata) or "")
        return ResctrlInfo(
            l2=self._cache(info_dir, "L2", ids),
            l3=self._cache(info_dir, "L3", ids),
            mb=self._bandwidth(info_dir, ids),
        )

    @staticmethod
    def _cache(info_dir: str, name: str, ids: dict[str, tuple[int, ...]]) -> CacheInfo | None:
        cdp = os.path.isdir(os.path.join(info_dir, f"{name}CODE"))
        folder = os.path.join(info_dir, f"{name}CODE" if cdp else name)
        mask = read_text(os.path.join(folder, "cbm_mask"))
        if mask is None:
            return None
        return CacheInfo(
            cbm_mask=int(mask, 16),
            min_cbm_bits=read_int(os.path.join(folder, "min_cbm_bits")) or 1,
            num_closids=read_int(os.path.join(folder, "num_closids")) or 1,
            ids=ids.get(f"{name}CODE" if cdp else name, (0,)),
            cdp=cdp,
        )

    @staticmethod
    def _bandwidth(info_dir: str, ids: dict[str, tuple[int, ...]]) -> BandwidthInfo | None:
        folder = os.path.join(info_dir, "MB")
        if not os.path.isdir(folder):
            return None
        return BandwidthInfo(
            min_bandwidth=read_int(os.path.join(folder, "min_bandwidth")) or 10,
            bandwidth_gran=read_int(os.path.join(folder, "bandwidth_gran")) or 10,
            num_closids=read_int(os.path.join(folder, "num_closids")) or 1,
            ids=ids.get("MB", (0,)),
            mbps=ids.get("MB_MBPS", ()) != (),
        )

    # ------------------------------------------------------------------ groups
    def apply(self, plan: ResctrlPlan) -> None:
        problems: list[str] = []
        self._planned = frozenset(plan.groups)
        for group in sorted(self._owned - set(plan.groups)):
            # dropped by this run's configuration: removed; left by an earlier daemon and not
            # configured now: removed once its containers are gone (tried at every apply)
            if group not in self._earlier or not self._holds_tasks(group):
                self._remove(group, problems)
        for group in sorted(set(self._original) - set(plan.groups)):
            self._put_back(group, problems)
        for group, lines in plan.groups.items():
            self._write(group, lines, problems)
        self._save(problems)
        raise_problems("resctrl", problems)

    def restore(self) -> None:
        """Shutdown: the configured groups holding tasks stay (the containers in them keep
        their class across a restart; the next daemon adopts them), the daemon's other groups
        are removed and the root group's schemata put back."""
        problems: list[str] = []
        for group in sorted(self._owned):
            if group not in self._planned or not self._holds_tasks(group):
                self._remove(group, problems)
        for group in sorted(self._original):
            self._put_back(group, problems)
        self._save(problems)
        raise_problems("restoring resctrl", problems)

    def clear(self) -> None:
        """RDT is off: every group of the daemon's is removed (tasks or not) and the root
        group's schemata put back."""
        problems: list[str] = []
        self._planned = frozenset()
        for group in sorted(self._owned):
            self._remove(group, problems)
        for group in sorted(self._original):
            self._put_back(group, problems)
        self._save(problems)
        raise_problems("removing resctrl groups", problems)

    def groups(self) -> dict[str, str]:
        """The schemata of every group written (``""`` is the root group), as read now."""
        out = {}
        for group in sorted(self._written):
            out[group] = read_text(os.path.join(self._dir(group), "schemata")) or ""
        return out

    def _dir(self, group: str) -> str:
        return os.path.join(self.root, group) if group else self.root

    def _write(self, group: str, lines: tuple[str, ...], problems: list[str]) -> None:
        if not _nameable(group):
            problems.append(f"{group!r} cannot name a resctrl group")
            return
        directory = self._dir(group)
        if group:
            self._earlier.discard(group)
            if group not in self._owned:  # made now, or found (a killed daemon's): ours
                self._owned.add(group)
                self._save(problems)
            if not os.path.isdir(directory):
                try:
                    os.mkdir(directory)
                except OSError as exc:
                    problems.append(f"cannot make group {directory}: {exc.strerror}")
                    return
        path = os.path.join(directory, "schemata")
        if not group and group not in self._original:
            self._original[group] = read_text(path) or ""
            self._save(problems)
        if self._written.get(group) == lines:
            return
        problem = self._write_schemata(path, lines)
        if problem is not None:
            problems.append(problem)
        self._written[group] = lines

    def _remove(self, group: str, problems: list[str]) -> None:
        directory = self._dir(group)
        try:
            os.rmdir(directory)
        except OSError as exc:
            if exc.errno != errno.ENOTEMPTY:
                if exc.errno != errno.ENOENT:
                    problems.append(f"cannot remove group {directory}: {exc.strerror}")
                    return
            else:  # a plain directory (fake trees): the kernel's files are ours to remove
                for entry in os.listdir(directory):
                    os.unlink(os.path.join(directory, entry))
                os.rmdir(directory)
        self._owned.discard(group)
        self._earlier.discard(group)
        self._written.pop(group, None)

    def _holds_tasks(self, group: str) -> bool:
        """Whether the group's ``tasks`` lists a task (a fake tree's group may have none)."""
        return bool(read_text(os.path.join(self._dir(group), "tasks")))

    def _load(self, journal: str) -> None:
        found = read_journal(journal)
        if not isinstance(found, dict):
            return
        groups = found.get("groups")
        if isinstance(groups, list):
            self._owned = {str(g) for g in groups if g and _nameable(str(g))}
            self._earlier = set(self._owned)
        originals = found.get("schemata")
        if isinstance(originals, dict):
            self._original = {str(k): str(v) for k, v in originals.items()}

    def _save(self, problems: list[str]) -> None:
        """Keep the owned groups and the originals in the journal; removed when both are
        empty (everything given back)."""
        journal = self._journal
        if journal is None:
            return
        try:
            if not self._owned and not self._original:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(journal)
                return
            write_journal(journal, {"groups": sorted(self._owned), "schemata": self._original})
        except OSError as exc:
            problems.append(f"cannot keep the resctrl groups in {journal}: {exc.strerror or exc}")

    def _put_back(self, group: str, problems: list[str]) -> None:
        path = os.path.join(self._dir(group), "schemata")
        original = self._original.pop(group)
        self._written.pop(group, None)
        lines = tuple(line.strip() for line in original.splitlines() if line.strip())
        problem = self._write_schemata(path, lines)
        if problem is not None:
            problems.append(problem)

    def _write_schemata(self, path: str, lines: tuple[str, ...]) -> str | None:
        """Write ``lines`` in one go, over the lines of the same resources (the kernel keeps
        the others; a plain file would lose them, so they are written back too). A refusal
        is named with the kernel's ``info/last_cmd_status``."""
        merged = {line.partition(":")[0]: line for line in (read_text(path) or "").splitlines()}
        merged.update({line.partition(":")[0]: line for line in lines})
        text = "".join(f"{line.strip()}\n" for line in merged.values() if line.strip())
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            try:
                os.write(fd, text.encode())
            finally:
                os.close(fd)
        except OSError as exc:
            status = read_text(os.path.join(self.root, "info", "last_cmd_status"))
            detail = f" ({status})" if status and status != "ok" else ""
            return f"cannot write {'; '.join(lines)!r} to {path}: {exc.strerror}{detail}"
        return None


def _nameable(group: str) -> bool:
    """Whether ``group`` can name a resctrl group (``""``: the root group)."""
    return "/" not in group and group not in (".", "..", "info", "mon_groups", "mon_data")


def _schemata_ids(text: str) -> dict[str, tuple[int, ...]]:
    """Cache ids per resource from schemata lines (``L3:0=fff;1=fff``); ``MB_MBPS`` is set
    when some ``MB`` value is above 100 (resctrl mounted with ``mba_MBps``)."""
    out: dict[str, tuple[int, ...]] = {}
    for line in text.splitlines():
        name, _, rest = line.strip().partition(":")
        ids = []
        values = []
        for part in rest.split(";"):
            key, _, value = part.partition("=")
            if key.strip().isdigit():
                ids.append(int(key))
                values.append(value.strip())
        if ids:
            out[name.strip()] = tuple(ids)
            if name.strip() == "MB" and any(v.isdigit() and int(v) > 100 for v in values):
                out["MB_MBPS"] = tuple(ids)
    return out
