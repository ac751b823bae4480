"""The daemon's state file: ``<state-dir>/cache``, written atomically by a background writer.

Saving is on the hot path (the resource manager saves after every changing operation, e.g.
before the CreateContainer reply goes out), and JSON-encoding a snapshot of a thousand
containers takes milliseconds. So :meth:`FileStateStore.save` only hands the snapshot to a
writer thread and returns; the writer waits until no snapshot came for ``linger`` seconds, but
no longer than ``max_delay`` after the first one it has not written, then encodes and writes
only the latest one. The resource manager's snapshot is unstructured when it is first read, so
that work happens on the writer too, once per write. A burst of operations therefore costs a
few writes a second, and each write encodes only the pods and containers that changed
(:class:`~nrirp.adapters.storage.json_encoding.SnapshotJsonEncoder`): the text of the others
is copied from the file written last, where it is kept (not in memory). A file that someone
else replaced or changed meanwhile (told by its inode, size and modification time) is written
whole again.

The writer needs the GIL while it encodes, and every millisecond it holds it while the event
loop answers the runtime is added to that answer. With ``yield_to`` (a :class:`Foreground`;
the daemon gives :data:`~nrirp.adapters.nri.stub.scope.HANDLERS`, the stubs' event handlers)
it steps aside: it does not begin a write while a request is being handled, and between the
small pieces of unstructuring and encoding it waits, blocked and so not asking for the GIL,
until none is (each wait at most ``max_pause``, so a stream of requests delays a write but
never stops it).

One daemon per directory: :meth:`lock` (also run by :meth:`load` and the first write) creates
the directory private, checks it, and takes an exclusive lock on ``<directory>/lock`` that the
store holds until :meth:`close` (:mod:`~nrirp.adapters.storage.lock`).

Durability: :meth:`flush` waits until the latest snapshot is on disk (or raises why not);
:meth:`close` flushes and stops the writer, and is also run at interpreter exit. A failed write
is retried every ``retry_interval`` seconds and reported by the next :meth:`save`/:meth:`flush`.
Only SIGKILL (or power loss) within ``max_delay`` + write time of an operation loses that
operation's state, and the runtime's Synchronize reconciles it after a restart.
"""

from __future__ import annotations

import atexit
import logging
import os
import stat
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from nrirp.adapters.storage.atomic import remove_stale_temps, write_atomically
from nrirp.adapters.storage.decoding import (
    MAX_STATE_DEPTH,
    MAX_STATE_FILE_SIZE,
    decode_state,
    read_state_file,
)
from nrirp.adapters.storage.directories import make_private_dirs
from nrirp.adapters.storage.json_encoding import SnapshotJsonEncoder
from nrirp.adapters.storage.lock import DirectoryLock
from nrirp.adapters.storage.safety import check_private
from nrirp.adapters.system.latency import Foreground
from nrirp.domain.ports.state_store import StateStoreError

STATE_FILE_NAME = "cache"
"""The state file's name in the state directory (the reference uses the same)."""

log = logging.getLogger(__name__)


class FileStateStore:
    """A :class:`StateStore` keeping the snapshot as JSON in ``directory/cache``.

    The directory is created by :meth:`lock` with mode 0700, and so are its missing parents.
    Files are written with mode 0600. The directory, the state file and the lock file must be
    owned by the effective user and not writable by group or others. :meth:`load` refuses, with
    a one-line :class:`StateStoreError` naming the path, a state file that is not a regular
    file, larger than ``max_size`` bytes, not UTF-8, not plain JSON, nested deeper than
    ``max_depth`` or not a JSON object.

    With ``background=True`` (the default) the mapping passed to :meth:`save` is kept until the
    writer has encoded it, as the :class:`StateStore` contract allows. ``on_write(seconds, ok)``
    is told about every write of the file (on the writer's thread), e.g. for metrics.
    """

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        name: str = STATE_FILE_NAME,
        background: bool = True,
        linger: float = 0.02,
        max_delay: float = 0.25,
        yield_to: Foreground | None = None,
        max_pause: float = 0.05,
        retry_interval: float = 1.0,
        max_size: int = MAX_STATE_FILE_SIZE,
        max_depth: int = MAX_STATE_DEPTH,
        on_write: Callable[[float, bool], None] | None = None,
    ) -> None:
        self._dir = os.fspath(directory)
        self._on_write = on_write
        self._name = name
        self._path = os.path.join(self._dir, name)
        self._yield_to = yield_to
        self._max_pause = max_pause
        self._encoder = SnapshotJsonEncoder(pause=self._step_aside if yield_to else None)
        self._background = background
        self._linger = linger
        self._max_delay = max(max_delay, linger)
        self._first_unsaved = 0.0  # monotonic time of the oldest snapshot not yet taken
        self._last_save = 0.0
        self._retry_interval = retry_interval
        self._max_size = max_size
        self._max_depth = max_depth
        self._dir_lock = DirectoryLock(self._dir)
        self._lock_guard = threading.Lock()
        self._cond = threading.Condition()
        self._pending: Mapping[str, Any] | None = None
        self._pending_gen = 0
        self._saved_gen = 0
        self._written_gen = 0
        self._error: StateStoreError | None = None
        self._error_gen = 0
        self._attempts = 0  # writes begun
        self._error_attempt = 0  # the write that failed last
        self._urgent = False
        self._hurry = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._written: tuple[int, int, int, int] | None = None
        """The identity of the file written last (:func:`_identity`)."""
        self.writes = 0
        """How many times the file was written (tests and benchmarks)."""
        atexit.register(_close_at_exit, weakref.ref(self))

    @property
    def path(self) -> str:
        """The state file."""
        return self._path

    @property
    def directory(self) -> str:
        return self._dir

    # ------------------------------------------------------------------ the directory
    def lock(self) -> None:
        """Make the directory ready and take its exclusive lock, held until :meth:`close`.

        Creates the directory and its missing parents with mode 0700 whatever the umask,
        refuses one that is not a directory, not owned by the effective user or writable by
        group or others, then locks ``<directory>/lock``: raises
        :class:`~nrirp.adapters.storage.lock.StateDirectoryInUseError` (a
        :class:`StateStoreError`) if another process holds it. Idempotent; thread-safe.
        """
        with self._lock_guard:
            if self._dir_lock.held:
                return
            self._prepare_directory()
            self._dir_lock.acquire()

    @property
    def locked(self) -> bool:
        """True while this store holds the directory's lock."""
        return self._dir_lock.held

    def _prepare_directory(self) -> None:
        try:
            created = make_private_dirs(self._dir)
            dir_stat = os.stat(self._dir)
        except OSError as exc:
            raise StateStoreError(f"cannot create state directory {self._dir}: {exc}") from None
        for directory in created:
            log.info("created directory %s (mode 0700)", directory)
        if not stat.S_ISDIR(dir_stat.st_mode):
            raise StateStoreError(f"cannot use state directory {self._dir}: not a directory")
        check_private(self._dir, dir_stat, "state directory")

    # ------------------------------------------------------------------ StateStore
    def load(self) -> Mapping[str, Any] | None:
        """The saved snapshot, or ``None`` if there is none yet.

        Takes the directory's lock first (:meth:`lock`), then removes temp files an
        interrupted write left (entries named like them that are not our regular files are
        logged and left alone).
        """
        if self._closed:
            raise StateStoreError(f"state store {self._path} is closed")
        self.lock()
        removed, kept = remove_stale_temps(self._dir, self._name)
        for stale in removed:
            log.info("removed %s left by an interrupted write", os.path.join(self._dir, stale))
        for entry in kept:
            log.warning("state directory %s: left alone %s", self._dir, entry)
        raw = read_state_file(self._path, self._max_size)
        if raw is None:
            return None
        return decode_state(raw, self._path, self._max_depth)

    def save(self, snapshot: Mapping[str, Any]) -> None:
        """Queue ``snapshot`` to be written (or write it now without a background writer).

        Raises :class:`StateStoreError` if the previous write failed (the new snapshot is
        still queued and retried) or the store is closed.
        """
        if not self._background:
            self._write(snapshot)
            with self._cond:
                self._saved_gen += 1
                self._written_gen = self._saved_gen
            return
        with self._cond:
            if self._closed:
                raise StateStoreError(f"state store {self._path} is closed")
            self._saved_gen += 1
            now = time.monotonic()
            first = self._pending is None
            if first:
                self._first_unsaved = now
            self._last_save = now
            self._pending = snapshot
            self._pending_gen = self._saved_gen
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._writer, name="nrirp-state-writer", daemon=True
                )
                self._thread.start()
            if first:
                # only a writer with nothing to write waits for a save; one waiting for quiet
                # looks at the time of the last save when its wait ends. Waking it for every
                # save would cost the caller (the event loop) a hand-over of the GIL each time
                self._cond.notify_all()
            error = self._error
        if error is not None:
            raise StateStoreError(f"{error} (the latest state is queued and retried)")

    # ------------------------------------------------------------------ durability
    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything saved so far is on disk.

        A failed write is retried at once. Raises :class:`StateStoreError` with the error of
        a write of the latest snapshot begun after this call, if that failed, or if
        ``timeout`` seconds pass first (a failure seen before the call is not the answer: the
        cause may be gone).
        """
        with self._cond:
            target = self._saved_gen
            if self._written_gen >= target:
                return
            begun = self._attempts
            self._urgent = True
            self._cond.notify_all()
            done = self._cond.wait_for(
                lambda: (
                    self._written_gen >= target
                    or (self._error_gen >= target and self._error_attempt > begun)
                ),
                timeout,
            )
            if self._written_gen >= target:
                return
            if not done:
                raise StateStoreError(f"state not written to {self._path} within {timeout}s")
            raise StateStoreError(str(self._error))

    def close(self, timeout: float | None = 10.0) -> None:
        """Flush, then stop the writer. Idempotent; later saves raise."""
        try:
            if not self._closed:
                self.flush(timeout)
        finally:
            with self._cond:
                self._closed = True
                self._cond.notify_all()
                thread = self._thread
            if thread is not None and thread is not threading.current_thread():
                thread.join(timeout)
            if thread is None or not thread.is_alive():  # a write in flight keeps the lock
                with self._lock_guard:
                    self._dir_lock.release()

    @property
    def closed(self) -> bool:
        return self._closed

    # ------------------------------------------------------------------ writer
    def _writer(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._closed)
                if self._pending is None:
                    return
                if self._error is not None:
                    if not (self._urgent or self._closed):
                        self._cond.wait_for(
                            lambda: self._urgent or self._closed, self._retry_interval
                        )
                else:
                    self._wait_for_quiet()
                snapshot, generation = self._pending, self._pending_gen
                self._pending = None
                self._hurry = self._urgent or self._closed  # a flush waits for this write
                self._urgent = False
                closing = self._closed
                self._attempts += 1
                attempt = self._attempts
            if snapshot is None:  # pragma: no cover - only this thread takes snapshots
                continue
            self._step_aside()
            try:
                self._write(snapshot)
            except StateStoreError as exc:
                log.error("%s", exc)
                with self._cond:
                    self._error, self._error_gen = exc, generation
                    self._error_attempt = attempt
                    if self._pending is None and not closing:
                        self._pending, self._pending_gen = snapshot, generation
                    self._cond.notify_all()
                continue
            with self._cond:
                self._written_gen = max(self._written_gen, generation)
                self._error = None
                self._cond.notify_all()

    def _wait_for_quiet(self) -> None:
        """With the condition held: until ``linger`` passed without a save, at most
        ``max_delay`` after the first snapshot not yet taken (or a flush or close)."""
        while not (self._urgent or self._closed):
            deadline = min(self._last_save + self._linger, self._first_unsaved + self._max_delay)
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._cond.wait(left)

    def _step_aside(self) -> None:
        """On the writer thread, while ``yield_to`` is busy (a request is being handled),
        wait for it to be idle (at most ``max_pause``; not once the store is flushed or
        closing)."""
        foreground = self._yield_to
        if foreground is None or not foreground.busy or self._hurry or self._urgent:
            return
        if self._closed or threading.current_thread() is not self._thread:
            return  # a write on the saver's own thread (no background writer): never wait
        foreground.wait_idle(self._max_pause)  # blocked, not polling: no GIL wanted meanwhile

    def _write(self, snapshot: Mapping[str, Any]) -> None:
        observer = self._on_write
        if observer is None:
            self._write_file(snapshot)
            return
        started = time.monotonic()
        try:
            self._write_file(snapshot)
        except StateStoreError:
            observer(time.monotonic() - started, False)
            raise
        observer(time.monotonic() - started, True)

    def _write_file(self, snapshot: Mapping[str, Any]) -> None:
        prepare = getattr(snapshot, "prepare", None)
        if self._yield_to is not None and callable(prepare):
            prepare(self._step_aside)  # the resource manager's snapshot, unstructured in steps
        previous = self._previous_file()  # first: the encoder forgets a file that changed
        draft = self._encoder.draft(snapshot)
        read = None if previous is None else _reader(previous)
        try:
            if self._dir_lock.held:
                self._prepare_directory()  # it may have been removed or changed meanwhile
            else:
                self.lock()
            try:
                written = write_atomically(
                    self._dir, self._name, lambda out: draft.write(out, previous, read)
                )
            except (TypeError, ValueError) as exc:
                raise StateStoreError(
                    f"state for {self._path} is not JSON-compatible: {exc}"
                ) from exc
            except OSError as exc:
                raise StateStoreError(f"cannot write state file {self._path}: {exc}") from exc
        finally:
            if previous is not None:
                os.close(previous)
        self._encoder.commit(draft)  # the texts are in the file now, no longer in memory
        self._written = _identity(written)
        self.writes += 1

    def _previous_file(self) -> int | None:
        """The file written last, open for reading, when the encoder draws on it; when it is
        gone or no longer what was written (someone replaced or changed it), the encoder
        forgets it and encodes everything again."""
        if not self._encoder.in_file:
            return None
        try:
            fd = os.open(self._path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
        except OSError as exc:
            log.warning("state file %s: %s; writing it whole", self._path, exc.strerror or exc)
            self._encoder.forget()
            return None
        try:
            same = _identity(os.fstat(fd)) == self._written
        except OSError:
            same = False
        if not same:
            log.warning("state file %s changed since it was written; writing it whole", self._path)
            os.close(fd)
            self._encoder.forget()
            return None
        return fd


def _identity(status: os.stat_result) -> tuple[int, int, int, int]:
    """What tells the file written last from any other: device, inode, size, modification."""
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _reader(fd: int) -> Callable[[int, int], str]:
    def read(offset: int, length: int) -> str:
        data = os.pread(fd, length, offset)
        if len(data) != length:
            raise OSError(f"{length} bytes at {offset} asked, {len(data)} read")
        return data.decode("ascii")

    return read


def _close_at_exit(ref: weakref.ref[FileStateStore]) -> None:
    store = ref()
    if store is None or store.closed:
        return
    try:
        store.close()
    except StateStoreError as exc:
        log.error("state not saved at exit: %s", exc)
