"""``Recorder``: the :class:`~nrirp.domain.ports.inbound.InboundObserver` of ``nrirp run
--record``, writing what the resource manager handles as a replayable workload.

On the pipeline's path it only appends what it is told to a queue (no lock, no I/O, no
formatting). The queue is then *encoded*, each call into a workload step (``steps.py``), one
line each, and the lines are *written* to the current part by a writer thread:

* with an event loop attached (:meth:`Recorder.attach`, the daemon's NRI loop), the encoding
  runs on that loop shortly after the operations (``BATCH`` seconds later, for all that came
  meanwhile: the replies are on their way), and the writer thread only writes, about once a
  second or for every ``FLUSH_BYTES``. Calls are kept for as little as that: keeping them
  longer costs the garbage collector, and a second thread running Python code while the loop
  serves takes the interpreter lock from it in the middle of requests;
* without one (a host agent's calls, tests), the writer thread also encodes, every
  ``interval`` seconds.

A part that would grow beyond ``max_bytes`` is rotated (``files.py``). The next part's header
carries the configuration in force and the state the resource manager saved after the last
call of the previous part, so that each part replays on its own. Only the latest snapshot is
kept (older ones would cost the pipeline, see ``saved``), so a part ends at a moment that
state is known: once it is nearly full (its last megabyte, or its second half), at the first
moment the encoder has caught up with the pipeline (the loop's idle encoding catches up at
every pause), or after a call that carries its snapshot (every ``CARRY_EVERY``-th does, and
every one once the part is nearly full). The first part's header carries the state the
daemon restored at its start. Any failure (a full disk, a queue that is not kept up with,
state too big for a part, a part full with no such moment) stops the recording with one
error log line and an end mark in the file; the daemon goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from nrirp.adapters.recording.files import RecordingError, RecordingFiles, RecordingLimits
from nrirp.adapters.recording.format import FORMAT
from nrirp.adapters.recording.lines import yaml_bytes, yaml_line
from nrirp.adapters.recording.steps import IMPLIED, call_step
from nrirp.domain.config import PolicyConfig
from nrirp.domain.ports.inbound import InboundCall
from nrirp.domain.topology import Machine

log = logging.getLogger("nrirp.recording")

MAX_PENDING = 100_000
"""Calls queued but not encoded yet beyond which the recording stops (nothing keeps up)."""
END_MARK_RESERVE = 512
"""Bytes of a part kept free for its last line (an end mark)."""
CARRY_EVERY = 8
"""Every so many calls carry their snapshot even when no part is nearly full: whatever the
backlog, a part can end within that many lines of its soft limit."""
BATCH = 0.002
"""Seconds the loop waits after a call before it encodes (the calls of a burst at once)."""
FLUSH_BYTES = 256 << 10
"""Encoded bytes that wake the writer thread before its interval is up."""
LOOP_WRITE_INTERVAL = 1.0
"""How often the writer thread wakes by itself when the loop encodes."""

_STARTED = "started"
_CALL = "call"
_STOP = "stop"
_ROTATE = "rotate"  # a writer op: close the part, shift the older ones, begin the next


class Recorder:
    """Records the resource manager's inbound calls to ``path`` (rotated, bounded by
    ``limits``) in the simulator's workload format (``docs/simulator.md``, Record and replay).

    ``dump_config`` gives a configuration's document form; ``machine`` is written as a
    machine spec (``fakehw.spec_of_machine``). Call :meth:`open` before the resource manager
    starts (it raises :class:`RecordingError` when the file cannot be made), :meth:`attach`
    from the event loop that drives the resource manager (optional), and :meth:`close` when
    the daemon stops.
    """

    def __init__(
        self,
        path: str,
        *,
        policy: str,
        machine: Machine,
        dump_config: Callable[[PolicyConfig], Mapping[str, Any]],
        limits: RecordingLimits | None = None,
        node: str = "",
        interval: float = 0.05,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.limits = limits or RecordingLimits()
        problems = self.limits.problems()
        if problems:
            raise RecordingError("; ".join(problems))
        self.files = RecordingFiles(path, self.limits)
        self._usable = self.limits.max_bytes - END_MARK_RESERVE
        self._soft = max(self._usable // 2, self._usable - (1 << 20))
        """Past this size the next part begins at the first consistent point: the last
        megabyte of a part, or its second half."""
        self._policy = policy
        self._machine = machine
        self._dump = dump_config
        self._node = node
        self._interval = interval
        self._now = wall_clock
        # the pipeline's side
        self._queue: deque[tuple[str, Any]] = deque()
        self._latest: tuple[int, Mapping[str, Any] | None] = (0, None)
        """The number of saves so far and the latest snapshot (the only one kept)."""
        self._want_snapshots = False
        """Set by the encoder when a part is nearly full: calls carry their snapshot, so that
        the next part can begin after any of them."""
        self._calls = 0
        self._refusing = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._armed = False
        # the encoder's side (under _encoding: the loop or the writer thread)
        self._encoding = threading.Lock()
        self._header: dict[str, Any] = {}
        self._config: Any = None
        self._base: Mapping[str, Any] | None = None  # the restored state, before any save
        self._encoded_serial = 0  # saves made before the last call encoded
        self._after_last: Mapping[str, Any] | None = None  # the state after it, if carried
        self._part = 0
        self._size = 0
        self._unflushed = 0  # bytes encoded since the writer was last woken
        self.steps = 0
        """Steps encoded so far (all parts)."""
        # the writer's side
        self._ops: deque[bytes | str] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped: str | None = None

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        """Describe the machine, move an older recording at the path aside (``.1``), create
        the file and start the writer thread; raises :class:`RecordingError`."""
        from nrirp.adapters.fakehw import spec_of_machine, spec_to_data

        try:
            spec, memory_types = spec_of_machine(self._machine, name=self._node or "recorded")
        except ValueError as exc:
            raise RecordingError(f"cannot describe this machine for a recording: {exc}") from None
        self._header = {
            "format": FORMAT,
            "policy": self._policy,
            "machine": spec_to_data(spec),
            "memoryTypes": [f"{node}={kind.value}" for node, kind in sorted(memory_types.items())],
            "node": self._node,
        }
        self.files.start()
        self._thread = threading.Thread(target=self._run, name="nrirp-recorder", daemon=True)
        self._thread.start()

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Encode on ``loop`` from now on (call it from the loop's thread): right after each
        operation, without a second thread taking the interpreter from the loop."""
        self._loop_thread = threading.get_ident()
        self._loop = loop
        self._armed = True
        loop.call_soon(self._encode_on_loop)  # what came before

    def close(self) -> None:
        """Encode and write everything queued, end the file with an end mark and stop the
        thread (once: later calls do nothing)."""
        if self._thread is None:
            return
        self._loop = None  # the writer thread encodes what is left
        self._queue.append((_STOP, None))
        self._wake.set()
        self._thread.join()
        self._thread = None

    # ------------------------------------------------------------------ InboundObserver
    def started(self, config: PolicyConfig | None, restored: Mapping[str, Any] | None) -> None:
        self._put((_STARTED, (config, restored, self._latest[0])))

    def handled(self, call: InboundCall) -> None:
        if call.operation in IMPLIED:  # not written; the next call carries its save's serial
            return
        # the saves so far, the call's own included (saved() comes first)
        serial, snapshot = self._latest
        self._calls += 1
        carry = self._want_snapshots or self._calls % CARRY_EVERY == 0
        self._put((_CALL, (call, serial, snapshot if carry else None)))

    def saved(self, snapshot: Mapping[str, Any]) -> None:
        # only the latest is kept, as by the state store: keeping older ones would have the
        # snapshot series list them on the request path (domain/cache/series.py)
        self._latest = (self._latest[0] + 1, snapshot)

    def _put(self, item: tuple[str, Any]) -> None:
        if self._refusing:
            return
        queue = self._queue
        if len(queue) >= MAX_PENDING:
            self._refusing = True
            queue.append((_STOP, f"{MAX_PENDING} calls queued and not recorded yet"))
            return
        queue.append(item)
        loop = self._loop
        if loop is not None and not self._armed:
            self._armed = True
            try:
                if threading.get_ident() == self._loop_thread:
                    loop.call_later(BATCH, self._encode_on_loop)
                else:  # the reload thread, a timer: hand it to the loop
                    loop.call_soon_threadsafe(self._encode_on_loop)
            except RuntimeError:  # the loop is closed: the writer thread encodes
                self._loop = None

    # ------------------------------------------------------------------ encoding
    def _encode_on_loop(self) -> None:
        """On the loop, shortly after the operations that queued something: encode it all."""
        self._armed = False
        if self._loop is None:  # closing: the writer thread takes over
            return
        try:
            self._encode()
            with self._encoding:
                self._rotate_if_due()  # caught up: a consistent point to begin the next part
        except Exception as exc:  # never the daemon's problem: stop recording, say why
            with self._encoding:
                self._stop(f"{type(exc).__name__}: {exc}")
        if self._unflushed >= FLUSH_BYTES:
            self._unflushed = 0
            self._wake.set()

    def _encode(self, limit: int | None = None) -> bool:
        """Turn what is queued (at most ``limit`` items) into writer ops; ``True`` once
        :meth:`close` was queued."""
        with self._encoding:
            queue = self._queue
            count = 0
            while queue and (limit is None or count < limit):
                count += 1
                kind, value = queue.popleft()
                if kind == _STOP:
                    if value is not None:
                        self._stop(str(value))
                        continue
                    if self._stopped is None:
                        self._emit(f"# end of recording: the daemon stopped at {self._time()}\n")
                    return True
                if self._stopped is not None:
                    continue
                if kind == _STARTED:
                    self._on_started(*value)
                else:
                    self._on_call(*value)
            return False

    def _on_started(
        self,
        config: PolicyConfig | None,
        restored: Mapping[str, Any] | None,
        serial: int,
    ) -> None:
        self._config = None if config is None else dict(self._dump(config))
        self._base = restored
        self._encoded_serial = serial
        self._begin_part(restored)

    def _on_call(self, call: InboundCall, serial: int, snapshot: Mapping[str, Any] | None) -> None:
        if self._size > self._soft:
            self._want_snapshots = True
            self._rotate_if_due()  # before this call, if the state there is known
        config = None
        if call.operation == "reconfigure" and call.failure is None and call.config is not None:
            config = dict(self._dump(call.config))
        step = call_step(call, config)
        if step is not None:
            if self._part == 0:  # calls before any start (none in the daemon): a part anyway
                self._begin_part(None)
            if self._stopped is None:
                self._step(step)
        if config is not None:
            self._config = config
        self._encoded_serial = serial
        self._after_last = snapshot

    def _step(self, step: dict[str, Any]) -> None:
        line = b"- " + yaml_bytes(step) + b"\n"
        size = self._size + len(line)
        if size > self._usable:
            self._stop(
                "the part is full and the daemon never paused for its state to be taken "
                "(a consistent point to begin the next part)"
                if self._size > self._soft
                else f"a step of {len(line)} bytes does not fit a recording file of "
                f"{self.limits.max_bytes} bytes after its header"
            )
            return
        self._ops.append(line)
        self._size = size
        self._unflushed += len(line)
        self.steps += 1

    def _consistent_state(self) -> tuple[bool, Mapping[str, Any] | None]:
        """Whether the latest saved state is the state after the last call encoded (no save
        since: nothing the pipeline did after it is in it), and that state."""
        if self._after_last is not None:
            return True, self._after_last
        serial, snapshot = self._latest
        if serial != self._encoded_serial:
            return False, None
        return True, snapshot if serial else self._base

    def _rotate_if_due(self) -> None:
        """Begin the next part here if the current one is past its soft limit and the state
        at this point is known."""
        if self._stopped is not None or self._part == 0 or self._size <= self._soft:
            return
        known, state = self._consistent_state()
        if not known:
            return
        self._emit(f"# continued in {self.files.path} (part {self._part + 1}) at {self._time()}\n")
        self._ops.append(_ROTATE)
        self._size = 0
        self._want_snapshots = False
        self._after_last = None
        self._begin_part(state)

    def _begin_part(self, state: Mapping[str, Any] | None) -> None:
        self._part += 1
        started = self._time()
        header = {**self._header, "config": self._config, "started": started, "part": self._part}
        if state is not None:
            header["state"] = dict(state)
        where = f" on {self._node}" if self._node else ""
        text = (
            "# nrirp recording (docs/simulator.md, Record and replay); replay it with\n"
            "#   nrirp simulate --workload THIS-FILE [--config NEW.yaml] [--compare OLD.yaml]\n"
            + "description: "
            + yaml_line(
                f"policy {self._policy}{where}, recorded by nrirp run from {started} "
                f"(part {self._part})"
            )
            + "\nrecording: "
            + yaml_line(header)
            + "\nsteps:\n"
        ).encode()
        if len(text) > self.limits.max_bytes - END_MARK_RESERVE:
            self._stop(
                f"the header of part {self._part} ({len(text)} bytes: the machine and the saved "
                f"state) does not fit a recording file of {self.limits.max_bytes} bytes"
            )
            return
        self._emit(text)

    def _emit(self, data: bytes | str) -> None:
        raw = data.encode() if isinstance(data, str) else data
        self._ops.append(raw)
        self._size += len(raw)
        self._unflushed += len(raw)

    def _stop(self, reason: str) -> None:
        if self._stopped is not None:
            return
        self._stopped = reason
        self._refusing = True
        log.error("recording to %s stopped: %s", self.files.path, reason)
        self._ops.append(f"# recording stopped at {self._time()}: {reason}\n".encode())

    # ------------------------------------------------------------------ the writer
    def _run(self) -> None:
        while True:
            self._wake.wait(LOOP_WRITE_INTERVAL if self._loop is not None else self._interval)
            self._wake.clear()
            closing = False
            if self._loop is None:
                try:
                    closing = self._encode()
                    if not closing:
                        with self._encoding:
                            self._rotate_if_due()
                except Exception as exc:  # never the daemon's problem: stop, say why, go on
                    with self._encoding:
                        self._stop(f"{type(exc).__name__}: {exc}")
                    closing = any(k == _STOP and v is None for k, v in self._queue)
            self._write()
            if closing:
                try:
                    self.files.close(sync=True)
                except OSError as exc:
                    log.error("recording to %s: cannot close it: %s", self.files.path, exc)
                return

    def _write(self) -> None:
        """Write the ops queued so far: the bytes between two rotations in one system call
        (each call gives the interpreter lock back and takes it again)."""
        ops = self._ops
        while ops:
            chunk: list[bytes] = []
            rotate = False
            while ops:
                op = ops.popleft()
                if op == _ROTATE:
                    rotate = True
                    break
                assert isinstance(op, bytes)
                chunk.append(op)
            try:
                if chunk:
                    self.files.write(b"".join(chunk))
                if rotate:
                    self.files.rotate()
            except (OSError, AssertionError) as exc:
                with self._encoding:
                    self._stop(f"cannot write: {exc}")
                ops.clear()
                with contextlib.suppress(OSError, AssertionError):  # the best we can do
                    self.files.write(f"# recording stopped: cannot write: {exc}\n".encode())

    def _time(self) -> str:
        now = self._now()
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


__all__ = ["Recorder", "RecordingError", "RecordingLimits"]
