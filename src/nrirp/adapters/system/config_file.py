"""Noticing that a configuration file changed, by polling its identity and timestamps.

Editors and Kubernetes ConfigMap mounts replace files by rename (new inode) or write them in
place (new mtime/size); both change the fingerprint. No inotify dependency is needed at the
one-second polling the daemon uses.
"""

from __future__ import annotations

import os

import attrs


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


def read_config_file(path: str) -> str:
    """The file's text; raises :class:`ConfigFileError` naming the path and the cause."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        raise ConfigFileError(f"config file {path} does not exist") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc}") from None
