"""The recording's files: the current one and its rotated predecessors, bounded in size.

``FILE`` is the current part; a full part becomes ``FILE.1`` (the one before it ``FILE.2``,
...), and the oldest beyond ``files`` is deleted. Files are created 0600, never through a
symbolic link. Only recordings are moved or deleted: anything else at one of these paths (a
directory, a file that is not a recording: ``--record`` mistyped as the configuration file or
the state directory) stops the start, untouched.
"""

from __future__ import annotations

import os
import stat

import attrs

from nrirp.adapters.documents import WORKLOAD

MIN_BYTES = 64 << 10
MAX_FILES = 100
MARK = b"# nrirp recording"
"""What every part begins with (the writer's first line)."""


class RecordingError(Exception):
    """A recording cannot be written (at the start: the daemon does not start)."""


@attrs.frozen
class RecordingLimits:
    """At most ``files`` files of at most ``max_bytes`` bytes each (64 KiB to the simulator's
    workload budget, 4 MiB, so that every part replays)."""

    max_bytes: int = WORKLOAD.max_bytes
    files: int = 4

    def problems(self) -> list[str]:
        out = []
        if not MIN_BYTES <= self.max_bytes <= WORKLOAD.max_bytes:
            out.append(
                f"the size of a recording file must be {MIN_BYTES} to {WORKLOAD.max_bytes} "
                f"bytes (the simulator's workload budget), got {self.max_bytes}"
            )
        if not 1 <= self.files <= MAX_FILES:
            out.append(f"the number of recording files must be 1 to {MAX_FILES}, got {self.files}")
        return out


class RecordingFiles:
    """Writes the parts of one recording at ``path``; not thread-safe (one writer)."""

    def __init__(self, path: str, limits: RecordingLimits) -> None:
        self.path = path
        self.limits = limits
        self._fd: int | None = None
        self.size = 0

    def rotated(self, index: int) -> str:
        return self.path if index == 0 else f"{self.path}.{index}"

    def start(self) -> None:
        """Move an existing recording at ``path`` out of the way (it becomes ``.1``) and
        create an empty one; raises :class:`RecordingError`."""
        try:
            for index in range(self.limits.files):
                self._check_ours(self.rotated(index))
            if os.path.lexists(self.path):
                self._shift()
            self._open()
        except OSError as exc:
            raise RecordingError(f"cannot record to {self.path}: {exc.strerror or exc}") from None

    def _check_ours(self, path: str) -> None:
        """Raise :class:`RecordingError` when what is at ``path`` is not ours to move or
        delete: anything but nothing, a symbolic link (moved, never followed), an empty file
        or one that begins as a recording does."""
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode):
            return
        if stat.S_ISDIR(info.st_mode):
            what = "a directory"
        elif not stat.S_ISREG(info.st_mode):
            what = "not a regular file"
        else:
            if info.st_size == 0:
                return
            with open(path, "rb") as handle:
                if handle.read(len(MARK)) == MARK:
                    return
            what = "a file that is not a recording (it does not begin with '# nrirp recording')"
        raise RecordingError(
            f"cannot record to {self.path}: {path} is {what}, not the recording's to move "
            "aside (and in the end delete): record to another path, or move it away"
        )

    def write(self, data: bytes) -> None:
        assert self._fd is not None
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        self.size += len(data)

    def rotate(self) -> None:
        """Close the current part, shift the older ones, start an empty one."""
        self.close()
        self._shift()
        self._open()

    def close(self, sync: bool = False) -> None:
        if self._fd is None:
            return
        try:
            if sync:
                os.fsync(self._fd)
        finally:
            os.close(self._fd)
            self._fd = None

    def _shift(self) -> None:
        last = self.limits.files - 1
        if last == 0:
            os.unlink(self.path)
            return
        if os.path.lexists(self.rotated(last)):
            os.unlink(self.rotated(last))
        for index in range(last - 1, -1, -1):
            if os.path.lexists(self.rotated(index)):
                os.rename(self.rotated(index), self.rotated(index + 1))

    def _open(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW
        self._fd = os.open(self.path, flags, 0o600)
        self.size = 0
