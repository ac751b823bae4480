"""One daemon per state directory: an exclusive ``flock`` on ``<state-dir>/lock``.

The lock is tied to the open file description: the kernel drops it when the process ends,
however it ends (SIGKILL included), so a stale lock file never blocks a restart. The holder's
pid is written into the file so that a second daemon can say who holds it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import weakref

from nrirp.adapters.storage.safety import check_private
from nrirp.domain.ports.state_store import StateStoreError

LOCK_FILE_NAME = "lock"
"""The lock file's name in the state directory."""


class StateDirectoryInUseError(StateStoreError):
    """Another process holds the state directory's lock (``pid`` if it could be read)."""

    def __init__(self, directory: str, pid: int | None) -> None:
        holder = f"pid {pid}" if pid is not None else "another process"
        super().__init__(f"state directory {directory} is in use by {holder}")
        self.directory = directory
        self.pid = pid


class DirectoryLock:
    """The exclusive lock on a state directory, held from :meth:`acquire` to :meth:`release`."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self.path = os.path.join(directory, LOCK_FILE_NAME)
        self._fd: int | None = None
        self._closer: weakref.finalize[[int], DirectoryLock] | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock (idempotent). Raises :class:`StateDirectoryInUseError` if another
        process holds it, :class:`StateStoreError` if the lock file is unusable."""
        if self._fd is not None:
            return
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise StateStoreError(f"cannot open lock file {self.path}: {exc}") from None
        try:
            self._check(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                    raise StateStoreError(f"cannot lock {self.path}: {exc}") from None
                raise StateDirectoryInUseError(self.directory, _read_pid(fd)) from None
            _write_pid(fd, self.path)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self._closer = weakref.finalize(self, os.close, fd)  # a dropped lock closes its file

    def release(self) -> None:
        """Drop the lock (idempotent). The file stays: removing it would race with a daemon
        that opened it and waits to lock it."""
        closer, self._closer, self._fd = self._closer, None, None
        if closer is not None:
            closer()

    def _check(self, fd: int) -> None:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise StateStoreError(f"lock file {self.path} is not a regular file")
        check_private(self.path, st, "lock file")


def _read_pid(fd: int) -> int | None:
    with contextlib.suppress(OSError, ValueError):
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        pid = int(text)
        return pid if pid > 0 else None
    return None


def _write_pid(fd: int, path: str) -> None:
    data = f"{os.getpid()}\n".encode()
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, data, 0)
    except OSError as exc:
        raise StateStoreError(f"cannot write lock file {path}: {exc}") from None
