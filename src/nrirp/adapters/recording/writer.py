"""``RecordingWriter``: the recording's records turned into its parts, bounded and rotated.

The recorder (``recorder.py``) hands over *records*, plain tuples of strings, bytes and plain
data (what the recorder's thread made of the calls), in the pipeline's order:

* ``(STARTED, config, state[, when])``: the resource manager started with ``config`` (a
  document, ``None``: the defaults) on the restored ``state`` (its line of JSON, ``None``:
  none) at ``when`` (seconds since the epoch; default: when written): the first part begins;
* ``(ID_STEP, operation, id, failure)``: a step naming what the runtime acted on;
* ``(LINE, line)``: a step already made (one line of YAML without its ``- ``);
* ``(CONFIG, config)``: a configuration applied: its step, and the next part's header's;
* ``(STATE, state[, when])``: the state at this point in the calls (its line of JSON,
  ``None``: the restored one), taken at ``when``: the next part begins here (the thread
  writes later, at a quiet moment: the marks say when the part began, not when written);
* ``(STOP, reason)``: the recording stops (the recorder could not keep up).

The writer asks for a ``STATE`` once the part is nearly full (``want_state``, past
:func:`soft_limit`); the recorder puts one after the next call (it writes what waits before
the part can fill up meanwhile). The next part begins at each ``STATE``, with a header
carrying the configuration in force and that state, so that each part replays on its own. A
part that fills up before then stops the recording.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable
from typing import Any

from nrirp.adapters.recording.files import RecordingFiles
from nrirp.adapters.recording.lines import yaml_bytes, yaml_line
from nrirp.adapters.recording.steps import id_step

STARTED = "started"
ID_STEP = "id"
LINE = "line"
CONFIG = "config"
STATE = "state"
STOP = "stop"

END_MARK_RESERVE = 512
"""Bytes of a part kept free for its last line (an end mark)."""

Record = tuple[Any, ...]


def soft_limit(max_bytes: int) -> int:
    """The size past which a part of ``max_bytes`` is nearly full and the next one begins at
    the first consistent point: its last megabyte, or its second half."""
    usable = max_bytes - END_MARK_RESERVE
    return max(usable // 2, usable - (1 << 20))


class RecordingWriter:
    """Writes records to ``files`` (see the module). ``header()``: the keys every part's
    header starts with (format, policy, machine, memory types, node), made anew for each part
    (nothing of the machine's description stays in memory between parts); ``policy`` and
    ``node`` name the recording in each part's description line; ``want_state(seen)`` asks
    the recorder for a ``STATE`` record (a consistent point to begin the next part; ``seen``:
    how many it has had);
    ``stopped(reason)`` is told once when the recording stops; ``now`` gives the time for
    the marks. Not thread-safe: one caller."""

    def __init__(
        self,
        files: RecordingFiles,
        header: Callable[[], dict[str, Any]],
        *,
        policy: str,
        node: str = "",
        want_state: Callable[[int], None],
        stopped: Callable[[str], None],
        now: Callable[[], float] = time.time,
    ) -> None:
        self.files = files
        self._header = header
        self._policy = policy
        self._node = node
        self._usable = files.limits.max_bytes - END_MARK_RESERVE
        self._soft = soft_limit(files.limits.max_bytes)
        self._want_state = want_state
        self._report = stopped
        self._now = now
        self._config: Any = None
        self._base: bytes | None = None
        self._part = 0
        self._size = 0
        self._asked = False
        self._out: list[bytes] = []
        self.stopped: str | None = None
        self.steps = 0
        """Steps written so far (all parts)."""
        self.total = 0
        """Bytes of steps written so far (all parts)."""
        self.head = 0
        """Bytes of the current part's header (with its state)."""
        self.states = 0
        """``STATE`` records seen so far (``want_state`` is told, so that the recorder does not
        answer an ask that a state already on its way answers)."""

    @property
    def room(self) -> int:
        """Bytes the current part has left."""
        return self._usable - self._size

    def feed(self, records: Iterable[Record]) -> None:
        """Write ``records`` (in one system call per part)."""
        for record in records:
            if self.stopped is not None and record[0] != STOP:
                continue
            try:
                self._record(record)
            except Exception as exc:  # a record that cannot be written: stop, say why
                self._stop(f"{type(exc).__name__}: {exc}")
        self._write()

    def end(self, reason: str) -> None:
        """End the file with an end mark saying ``reason`` (unless stopped) and close it."""
        if self.stopped is None:
            self._emit(f"# end of recording: {reason} at {self._time()}\n")
        self._write()
        try:
            self.files.close(sync=True)
        except OSError as exc:
            self._report(f"cannot close it: {exc}")

    # ------------------------------------------------------------------ records
    def _record(self, record: Record) -> None:
        kind = record[0]
        if kind == ID_STEP:
            self._step(yaml_bytes(id_step(record[1], record[2], record[3])))
        elif kind == LINE:
            self._step(record[1])
        elif kind == CONFIG:
            self._step(yaml_bytes({"reconfigure": {"config": record[1]}}))
            self._config = record[1]
        elif kind == STATE:
            self._rotate(self._base if record[1] is None else record[1], _when(record, 2))
        elif kind == STARTED:
            self._config, self._base = record[1], record[2]
            self._begin_part(self._base, _when(record, 3))
        elif kind == STOP:
            self._stop(str(record[1]))
        else:
            raise ValueError(f"unknown record {kind!r}")

    def _step(self, line: bytes) -> None:
        if self._part == 0:  # calls before any start (none in the daemon): a part anyway
            self._begin_part(None)
            if self.stopped is not None:
                return
        data = b"- " + line + b"\n"
        size = self._size + len(data)
        if size > self._usable:
            self._stop(
                "the part is full and the daemon never paused for its state to be taken "
                "(a consistent point to begin the next part)"
                if self._size > self._soft
                else f"a step of {len(data)} bytes does not fit a recording file of "
                f"{self.files.limits.max_bytes} bytes after its header"
            )
            return
        self._out.append(data)
        self._size = size
        self.total += len(data)
        self.steps += 1
        if size > self._soft and not self._asked:
            self._asked = True
            self._want_state(self.states)

    def _rotate(self, state: bytes | None, when: float | None = None) -> None:
        """Begin the next part here (``when``: the time of ``state``)."""
        self.states += 1
        if self._part == 0:
            return
        at = self._time(when)
        self._emit(f"# continued in {self.files.path} (part {self._part + 1}) at {at}\n")
        self._write()
        if self.stopped is not None:
            return
        try:
            self.files.rotate()
        except OSError as exc:
            self._stop(f"cannot begin the next part: {exc.strerror or exc}")
            return
        self._size = 0
        self._asked = False
        self._begin_part(state, when)

    def _begin_part(self, state: bytes | None, when: float | None = None) -> None:
        self._part += 1
        started = self._time(when)
        header = yaml_bytes(
            {**self._header(), "config": self._config, "started": started, "part": self._part}
        )
        if state is not None:  # the state's JSON as it came, last
            header = header[:-1] + b',"state":' + state + b"}"
        where = f" on {self._node}" if self._node else ""
        description = yaml_line(
            f"policy {self._policy}{where}, recorded by nrirp run from {started} "
            f"(part {self._part})"
        )
        text = (
            b"# nrirp recording (docs/simulator.md, Record and replay); replay it with\n"
            b"#   nrirp simulate --workload THIS-FILE [--config NEW.yaml] [--compare OLD.yaml]\n"
            + b"description: "
            + description.encode()
            + b"\nrecording: "
            + header
            + b"\nsteps:\n"
        )
        if len(text) > self._usable:
            self._stop(
                f"the header of part {self._part} ({len(text)} bytes: the machine and the saved "
                f"state) does not fit a recording file of {self.files.limits.max_bytes} bytes"
            )
            return
        self.head = len(text)
        self._emit(text)

    def _emit(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self._out.append(raw)
        self._size += len(raw)

    def _stop(self, reason: str) -> None:
        if self.stopped is not None:
            return
        self.stopped = reason
        self._report(reason)
        self._emit(f"# recording stopped at {self._time()}: {reason}\n")

    def _write(self) -> None:
        out = self._out
        if not out:
            return
        data = b"".join(out)
        out.clear()
        try:
            self.files.write(data)
        except (OSError, AssertionError) as exc:
            if self.stopped is None:
                self.stopped = f"cannot write: {exc}"
                self._report(self.stopped)
            with contextlib.suppress(OSError, AssertionError):  # the best we can do
                self.files.write(f"# recording stopped: cannot write: {exc}\n".encode())

    def _time(self, when: float | None = None) -> str:
        now = self._now() if when is None else when
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def _when(record: Record, index: int) -> float | None:
    """The time a record carries at ``index`` (``None``: none, the time it is written)."""
    return record[index] if len(record) > index else None


__all__ = [
    "CONFIG",
    "ID_STEP",
    "LINE",
    "STARTED",
    "STATE",
    "STOP",
    "Record",
    "RecordingWriter",
    "soft_limit",
]
