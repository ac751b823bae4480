"""Reading a configuration file within its budget, and noticing that it changed.

Reading (:func:`read_config_file`): only a regular file (a symlink to one is followed, as
ConfigMap mounts need; a FIFO, a device, a directory is refused without being read), opened
non-blocking and checked again on the descriptor, and at most the config budget's size
(``CONFIG.max_bytes``, 1 MiB; a larger file is refused unread). Nothing here waits on a writer
or reads without end, so a read finishes in bounded time wherever it runs.

Watching (:class:`ConfigFileWatcher`): editors and Kubernetes ConfigMap mounts replace files by
rename (new inode) or write them in place (new mtime/size); both change the fingerprint. No
inotify dependency is needed at the one-second polling the daemon uses.
"""

from __future__ import annotations

import os
import stat

import attrs

from nrirp.adapters.documents.budget import CONFIG, Budget


@attrs.frozen
class FileFingerprint:
    device: int
    inode: int
    size: int
    mtime_ns: int


def fingerprint(path: str) -> FileFingerprint | None:
    """The file's fingerprint, following symlinks; ``None`` if it cannot be stat'ed."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileFingerprint(st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


class ConfigFileWatcher:
    """Tracks one file; :meth:`changed` says whether it differs from the last look."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._last = fingerprint(path)

    def changed(self) -> bool:
        """True once per change (a file that disappears is not a change to act on)."""
        current = fingerprint(self.path)
        if current is None or current == self._last:
            return False
        self._last = current
        return True

    def mark_seen(self) -> None:
        """Take the file as it is now as the baseline (after reading it for another reason)."""
        self._last = fingerprint(self.path)


class ConfigFileError(Exception):
    """A configuration file could not be read; the message names the path."""


def read_config_file(path: str, budget: Budget = CONFIG) -> str:
    """The text of the regular file at ``path``, at most ``budget.max_bytes`` bytes of UTF-8.

    Raises :class:`ConfigFileError` naming the path and the cause: missing, not a regular file
    (FIFO, device, socket, directory: never opened for reading), too large, unreadable or not
    UTF-8."""
    try:
        before = os.stat(path)  # follows symlinks: a ConfigMap's file is one
    except FileNotFoundError:
        raise ConfigFileError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc}") from None
    _check_regular(path, before, budget)
    try:
        # non-blocking: if the path was swapped for a FIFO or device since the stat, opening
        # it does not wait for a writer (and the descriptor's check below refuses it)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ConfigFileError(f"config file {path} does not exist") from None
    except OSError as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc}") from None
    try:
        _check_regular(path, os.fstat(fd), budget)
        data = _read_at_most(fd, budget.max_bytes + 1)
    except OSError as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc}") from None
    finally:
        os.close(fd)
    if len(data) > budget.max_bytes:  # it grew since the check
        raise ConfigFileError(
            f"config file {path}: {budget.kind} too large: more than {budget.max_bytes} bytes"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigFileError(f"cannot read config file {path}: not UTF-8: {exc}") from None


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _check_regular(path: str, st: os.stat_result, budget: Budget) -> None:
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "a special file")
        raise ConfigFileError(
            f"config file {path} is {kind}, not a regular file (refused without reading it)"
        )
    if st.st_size > budget.max_bytes:
        raise ConfigFileError(
            f"config file {path}: {budget.kind} too large: {st.st_size} bytes "
            f"(at most {budget.max_bytes}; refused without reading it)"
        )


def _read_at_most(fd: int, limit: int) -> bytes:
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 16))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)
