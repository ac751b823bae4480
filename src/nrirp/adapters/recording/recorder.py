"""``Recorder``: the :class:`~nrirp.domain.ports.inbound.InboundObserver` of ``nrirp run
--record``, writing what the resource manager handles as a replayable workload.

On the pipeline's path it only appends what it is told to a queue (no lock, no I/O, no
formatting); a writer thread drains the queue every ``interval`` seconds, turns calls into
workload steps (``steps.py``), one line each, and appends them to the current part.
A part that would grow beyond ``max_bytes`` is rotated first (``files.py``): the new part's
header carries the state saved after the last call written and the configuration in force,
so that each part replays on its own. The first part's header carries the state the daemon
restored at its start. Any failure (a full disk, a queue the writer cannot keep up with,
state too big for a part) stops the recording with one error log line and an end mark in
the file; the daemon goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from nrirp.adapters.recording.files import RecordingError, RecordingFiles, RecordingLimits
from nrirp.adapters.recording.format import FORMAT
from nrirp.adapters.recording.lines import yaml_line
from nrirp.adapters.recording.steps import call_step
from nrirp.domain.config import PolicyConfig
from nrirp.domain.ports.inbound import InboundCall
from nrirp.domain.topology import Machine

log = logging.getLogger("nrirp.recording")

MAX_PENDING = 100_000
"""Calls queued but not written yet beyond which the recording stops (the writer thread
cannot keep up: a stalled disk)."""
END_MARK_RESERVE = 512
"""Bytes of a part kept free for its last line (an end mark)."""

_STARTED = "started"
_SAVED = "saved"
_STOP = "stop"


class Recorder:
    """Records the resource manager's inbound calls to ``path`` (rotated, bounded by
    ``limits``) in the simulator's workload format (``docs/simulator.md``, Record and replay).

    ``dump_config`` gives a configuration's document form; ``machine`` is written as a
    machine spec (``fakehw.spec_of_machine``). Call :meth:`open` before the resource manager
    starts (it raises :class:`RecordingError` when the file cannot be made) and :meth:`close`
    when the daemon stops.
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
        self._policy = policy
        self._machine = machine
        self._dump = dump_config
        self._node = node
        self._interval = interval
        self._now = wall_clock
        self._queue: deque[tuple[str, Any]] = deque()
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._refusing = False  # the pipeline's side: stop queueing (overflow or stopped)
        # the writer's side
        self._header: dict[str, Any] = {}
        self._config: Any = None
        self._state: Mapping[str, Any] | None = None
        self._after: Mapping[str, Any] | None = None
        self._part = 0
        self._stopped: str | None = None
        self.steps = 0
        """Steps written so far (all parts)."""

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

    def close(self) -> None:
        """Write everything queued, end the file with an end mark and stop the thread (once:
        later calls do nothing)."""
        if self._thread is None:
            return
        self._queue.append((_STOP, None))
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    # ------------------------------------------------------------------ InboundObserver
    def started(self, config: PolicyConfig | None, restored: Mapping[str, Any] | None) -> None:
        self._put((_STARTED, (config, restored)))

    def handled(self, call: InboundCall) -> None:
        self._put(("call", call))

    def saved(self, snapshot: Mapping[str, Any]) -> None:
        self._put((_SAVED, snapshot))

    def _put(self, item: tuple[str, Any]) -> None:
        if self._refusing:
            return
        queue = self._queue
        if len(queue) >= MAX_PENDING:
            self._refusing = True
            queue.append((_STOP, f"the writer fell {MAX_PENDING} calls behind"))
            return
        queue.append(item)

    # ------------------------------------------------------------------ the writer
    def _run(self) -> None:
        while True:
            self._wake.wait(self._interval)
            while True:
                try:
                    if self._drain():
                        return
                    break
                except Exception as exc:  # never the daemon's problem: stop, say why, go on
                    self._stop(f"{type(exc).__name__}: {exc}")

    def _drain(self) -> bool:
        """Write what is queued; ``True`` once :meth:`close` was called."""
        queue = self._queue
        while queue:
            kind, value = queue.popleft()
            if kind == _STOP:
                if value is not None:
                    self._stop(str(value))
                    continue
                if self._stopped is None:
                    self._end(f"# end of recording: the daemon stopped at {self._time()}\n")
                try:
                    self.files.close(sync=True)
                except OSError as exc:
                    log.error("recording to %s: cannot close it: %s", self.files.path, exc)
                return True
            if self._stopped is not None:
                continue
            if kind == _SAVED:
                self._after = value
            elif kind == _STARTED:
                self._on_started(*value)
            else:
                self._on_call(value)
        return False

    def _on_started(self, config: PolicyConfig | None, restored: Mapping[str, Any] | None) -> None:
        self._config = None if config is None else dict(self._dump(config))
        self._state = self._after if self._after is not None else restored
        self._after = None
        self._begin_part(restored)

    def _on_call(self, call: InboundCall) -> None:
        config = None
        if call.operation == "reconfigure" and call.failure is None and call.config is not None:
            config = dict(self._dump(call.config))
        step = call_step(call, config)
        if step is not None:
            if self._part == 0:  # calls before any start (none in the daemon): a part anyway
                self._begin_part(None)
            if self._stopped is None:
                self._write_step(step)
        if config is not None:
            self._config = config
        if self._after is not None:
            self._state, self._after = self._after, None

    def _write_step(self, step: dict[str, Any]) -> None:
        line = ("- " + yaml_line(step) + "\n").encode()
        limit = self.limits.max_bytes - END_MARK_RESERVE
        if self.files.size + len(line) > limit:
            self._end(
                f"# continued in {self.files.path} (part {self._part + 1}) at {self._time()}\n"
            )
            self.files.rotate()
            self._begin_part(self._state)
            if self._stopped is not None:
                return
            if self.files.size + len(line) > limit:
                self._stop(
                    f"a step of {len(line)} bytes does not fit a recording file of "
                    f"{self.limits.max_bytes} bytes after its header"
                )
                return
        self.files.write(line)
        self.steps += 1

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
        self.files.write(text)

    def _stop(self, reason: str) -> None:
        if self._stopped is not None:
            return
        self._stopped = reason
        self._refusing = True
        log.error("recording to %s stopped: %s", self.files.path, reason)
        self._end(f"# recording stopped at {self._time()}: {reason}\n")

    def _end(self, mark: str) -> None:
        try:
            self.files.write(mark.encode())
        except (OSError, AssertionError) as exc:
            log.error("recording to %s: cannot write its end: %s", self.files.path, exc)

    def _time(self) -> str:
        now = self._now()
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


__all__ = ["Recorder", "RecordingError", "RecordingLimits"]
