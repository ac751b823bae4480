"""Atomic file replacement: temp file in the same directory, fsync, rename, fsync the dir."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Callable, Iterable

TEMP_PREFIX = ".tmp-"


def write_atomically(
    directory: str, name: str, data: bytes | Iterable[bytes] | Callable[[int], None]
) -> os.stat_result:
    """Replace ``directory/name`` with ``data`` (mode 0600; bytes, pieces written one after
    another, or a function writing to the file descriptor it is given); a crash leaves old or
    new. Returns the new file's status (as written: to know it again)."""
    fd, temp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{name}-", dir=directory)
    try:
        try:
            if callable(data):
                data(fd)
            else:
                with os.fdopen(fd, "wb", closefd=False) as handle:
                    if isinstance(data, bytes):
                        handle.write(data)
                    else:
                        handle.writelines(data)
            os.fsync(fd)
            written = os.fstat(fd)
        finally:
            os.close(fd)
        os.chmod(temp, 0o600)
        os.replace(temp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    sync_directory(directory)
    return written


def sync_directory(directory: str) -> None:
    """fsync a directory so a rename in it is durable."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temps(directory: str, name: str) -> tuple[list[str], list[str]]:
    """Delete the temp files of ``name`` a crash left behind in ``directory``.

    Only regular files named like this module's temp files and owned by the effective user are
    removed (they are ours: the caller holds the directory's lock, so no write is in flight).
    Anything else with such a name (a directory, a symlink, another user's file) is left
    alone. Returns the names removed and one line for each entry left alone.
    """
    prefix = f"{TEMP_PREFIX}{name}-"
    removed: list[str] = []
    kept: list[str] = []
    try:
        dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        return [], []
    try:
        euid = os.geteuid()
        for entry in os.listdir(dir_fd):
            if not entry.startswith(prefix):
                continue
            try:
                st = os.lstat(entry, dir_fd=dir_fd)
                if not stat.S_ISREG(st.st_mode):
                    kept.append(f"{entry}: not a regular file")
                elif st.st_uid != euid:
                    kept.append(f"{entry}: owned by uid {st.st_uid}, not by uid {euid}")
                else:
                    os.unlink(entry, dir_fd=dir_fd)
                    removed.append(entry)
            except FileNotFoundError:
                pass
            except OSError as exc:
                kept.append(f"{entry}: {exc.strerror or exc}")
    finally:
        os.close(dir_fd)
    return removed, kept
