"""Creating the state directory (and its missing parents) private, whatever the umask."""

from __future__ import annotations

import os

PRIVATE_DIR_MODE = 0o700


def make_private_dirs(path: str) -> list[str]:
    """Create ``path`` and every missing parent with mode 0700; returns the ones created.

    ``os.makedirs`` gives the parents ``0777 & ~umask`` (0777 under umask 000) and the leaf
    ``mode & ~umask``; here each directory is made with 0700 (the umask can only take bits
    away, so it is never more open than that) and then set to exactly 0700 through a
    descriptor opened without following symlinks. A directory someone else creates meanwhile
    is left as it is (the caller checks the leaf).
    """
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.lexists(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    created: list[str] = []
    for directory in reversed(missing):
        try:
            os.mkdir(directory, PRIVATE_DIR_MODE)
        except FileExistsError:
            continue
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, PRIVATE_DIR_MODE)
        finally:
            os.close(fd)
        created.append(directory)
    return created
