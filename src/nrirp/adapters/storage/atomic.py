"""Atomic file replacement: temp file in the same directory, fsync, rename, fsync the dir."""

from __future__ import annotations

import contextlib
import os
import tempfile

TEMP_PREFIX = ".tmp-"


def write_atomically(directory: str, name: str, data: bytes) -> None:
    """Replace ``directory/name`` with ``data`` (mode 0600); a crash leaves old or new."""
    fd, temp = tempfile.mkstemp(prefix=f"{TEMP_PREFIX}{name}-", dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, 0o600)
        os.replace(temp, os.path.join(directory, name))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    sync_directory(directory)


def sync_directory(directory: str) -> None:
    """fsync a directory so a rename in it is durable."""
    dir_fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def remove_stale_temps(directory: str, name: str) -> list[str]:
    """Delete temp files a crash left behind; returns their names."""
    prefix = f"{TEMP_PREFIX}{name}-"
    removed = []
    try:
        entries = os.listdir(directory)
    except FileNotFoundError:
        return []
    for entry in entries:
        if entry.startswith(prefix):
            try:
                os.unlink(os.path.join(directory, entry))
                removed.append(entry)
            except FileNotFoundError:
                pass
    return removed
