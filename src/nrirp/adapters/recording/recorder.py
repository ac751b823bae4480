"""``Recorder``: the :class:`~nrirp.domain.ports.inbound.InboundObserver` of ``nrirp run
--record``, writing what the resource manager handles as a replayable workload.

On the pipeline's path (every NRI request's) it translates, encodes and copies nothing: it
appends to a queue what it needs of each call, no lock, no I/O, no timer, as little code as
can be (under the Go harness every line of it was measurable), and keeps as little memory
alive as can be: what it keeps of a request is memory the next request cannot reuse, and
new memory costs that request page faults and the garbage collector's scans (a kilobyte
and a half kept per pod cost CreateContainer 6-10 us of CPU, ``docs/daemon.md``):

* a pod's or container's stop or removal, a container's start: the operation and the id;
* a container's creation or a pod's run that succeeded: the container or the pod alone (the
  step is made of it; a creation's call also carries a pod translated for that request
  alone, which is let go with the call);
* anything else (a refusal, a resize, a Synchronize, a reconfiguration): the call itself.
  Objects the call shares with the cache cost nothing more: a container the pipeline admits
  shares its labels, annotations, resources and mounts with the one the call carries.
  Measured under the Go harness, keeping them cost a request less than copying its NRI bytes
  aside (a few kilobytes written to memory the CPU had not touched for a while) or encoding
  it;
* a save: nothing; the latest snapshot is read from the pipeline (``latest_state``, given at
  the start) only where a part ends.

What it does on a call is a few comparisons: the size of what it kept, reckoned from the
operation, is added up, and only past one threshold (:attr:`Recorder._limit`, the least of
where the thread must be woken and where a part ends, or -1 when the thread changed them or
asked for the state) does it look further (:meth:`Recorder._beyond`).

A thread encodes and writes what waits (``writer.py``) at a quiet moment: when no call came
for ``QUIET`` seconds (it looks once a second, ``interval``), so that it never takes the
interpreter from a burst of requests; at once when half of ``MAX_PENDING`` calls wait or what
waits would take half of what the current part has left; and when the daemon stops. While it
encodes it steps aside before each call while an NRI handler runs (``yield_to``). Sizes are
reckoned from the operations (``_SIZES``: nothing is encoded to know), scaled by how the
bytes written compared with those reckoned so far.

A part ends after a call (not one the runtime follows with a post-event) once the recorder
reckons it is 80 % full (the writer writes later, and may not have seen it fill), or once the
writer asks (``want_state``: the part is nearly full, its last megabyte or its second half):
the latest snapshot is queued after that call, whose own save came before it, so it is the
state after that call, and the next part begins there with it. Any failure (a full disk, a
queue that is not kept up with, state too big for a part, a part full with no such moment)
stops the recording with one error log line and an end mark in the file; the daemon goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from nrirp.adapters.recording.files import RecordingError, RecordingFiles, RecordingLimits
from nrirp.adapters.recording.format import FORMAT
from nrirp.adapters.recording.lines import yaml_bytes
from nrirp.adapters.recording.steps import BY_ID, IMPLIED, alone_step, call_step, synchronize_line
from nrirp.adapters.recording.writer import (
    CONFIG,
    END_MARK_RESERVE,
    ID_STEP,
    LINE,
    STARTED,
    STATE,
    STOP,
    Record,
    RecordingWriter,
)
from nrirp.domain.config import PolicyConfig
from nrirp.domain.model import Container, LinuxResources, Pod
from nrirp.domain.ports.inbound import InboundCall, LatestState
from nrirp.domain.topology import Machine

if TYPE_CHECKING:
    from nrirp.adapters.system.latency import Foreground

log = logging.getLogger("nrirp.recording")

MAX_PENDING = 20_000
"""Calls waiting beyond which the recording stops (nothing keeps up); half of it waiting, the
thread writes without waiting for a quiet moment."""
PRESS_MIN = 4096
"""The least bytes waiting that have the thread write at once."""
QUIET = 0.05
"""Seconds without a call after which the thread writes what waits (the runtime is idle)."""
MAX_PAUSE = 0.05
"""Seconds the thread waits at most for the foreground to be idle, each time."""
FOLLOWED = frozenset({"create-container", "start-container", "update-container"})
"""Calls the runtime follows with an implied post-event: the next part never begins right
after one (the post-event's change would be in neither part)."""

_SIZES = {"create-container": 4096, "run-pod": 2048, "update-container": 1024}
"""About what a step of these takes in the file (a kubelet's container: 3.2 KB); 100 for the
others but a Synchronize (4096 per object). Scaled by what the thread finds written."""

_IMPLIED = frozenset({"(implied)"})
_POD = frozenset({"(pod id)"})
_CONTAINER = frozenset({"(container id)"})
_RUN = frozenset({"(the pod alone)"})
_HOW: dict[str, frozenset[str]] = {
    **dict.fromkeys(IMPLIED, _IMPLIED),
    **{op: _POD if by_id[0] == "pod" else _CONTAINER for op, by_id in BY_ID.items()},
    "run-pod": _RUN,
}
"""What the recorder keeps of an operation, told apart by identity: nothing, the pod's or the
container's id, the pod alone when ``run-pod`` succeeded (a creation that succeeded keeps its
container alone, told apart before this is looked at; anything else: the call)."""

_new_call = tuple.__new__  # an InboundCall from all its fields, in C


def _no_state() -> None:
    return None  # before the start: nothing saved


_SNAPSHOT = "snapshot"  # queued: a state to list and encode on the thread
_BEGIN = "begin"  # queued: the start, to encode on the thread


class Recorder:
    """Records the resource manager's inbound calls to ``path`` (rotated, bounded by
    ``limits``) in the simulator's workload format (``docs/simulator.md``, Record and replay).

    ``dump_config`` gives a configuration's document form; ``machine`` is written as a
    machine spec (``fakehw.spec_of_machine``). Call :meth:`open` before the resource manager
    starts (it raises :class:`RecordingError` when the file cannot be made), :meth:`attach`
    once NRI requests are served (optional), and :meth:`close` when the daemon stops.
    ``interval``: seconds between two looks for a quiet moment to write what waits.
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
        interval: float = 1.0,
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
        # the pipeline's side
        self._queue: deque[Any] = deque()
        """Calls (:class:`InboundCall`) and tuples, in the pipeline's order."""
        self._latest_state: LatestState = _no_state
        """Gives the latest saved snapshot (the pipeline's, from :meth:`started`)."""
        self._cap = MAX_PENDING
        """Calls waiting at which the recording stops; 0 once it stopped."""
        self._want_state = False
        """The writer asked for the state at a consistent point."""
        self._states = 0
        """States queued so far."""
        self._queued = 0
        """About the bytes of what was queued so far (written on the pipeline's path only)."""
        self._handed = 0
        """:attr:`_queued` when the thread last took what waits (written by the thread only)."""
        usable = self.limits.max_bytes - END_MARK_RESERVE
        self._press = usable // 2
        """Bytes waiting beyond which the thread writes at once: half of what the part has left
        (the thread's to set)."""
        self._mark_at = usable * 3 // 4
        """:attr:`_queued` beyond which the next part begins after the next call: the thread
        sets it from what the part has left and how the bytes reckoned compare with those
        written (the writer, which writes later, may not have seen the part fill)."""
        self._ratio = 1.0
        """The most bytes written per byte reckoned so far (the thread's)."""
        self._fresh = self._mark_at
        """What a part just begun can take before its end, reckoned (the thread's)."""
        self._usable = usable
        self._limit = min(self._press, self._mark_at)
        """:attr:`_queued` beyond which the call looks at the thresholds above (or -1: look
        at the next call): one comparison on the pipeline's path (:meth:`_beyond`)."""
        self._look = False
        """The thread changed a threshold since the pipeline last set :attr:`_limit`."""
        # the thread's side
        self._yield_to: Foreground | None = None
        self._wake = threading.Event()
        self._closing = False
        self._thread: threading.Thread | None = None
        self._writer: RecordingWriter | None = None
        self._stopped: str | None = None

    @property
    def steps(self) -> int:
        """Steps written so far (all parts)."""
        return 0 if self._writer is None else self._writer.steps

    # ------------------------------------------------------------------ lifecycle
    def open(self) -> None:
        """Move an older recording at the path aside (``.1``), create the file and start the
        writer; raises :class:`RecordingError` (also for a machine a spec cannot describe).

        The machine is described by the thread for each part's header (7 ms for 112 CPUs,
        55 ms for 4,096) and let go once written: kept, it was 59 KiB to 2.4 MiB of memory
        for the whole run. Here it is only checked, by the topology itself: the machine
        spec's package (``fakehw``, 38 modules) is imported by the thread when it first
        writes, not before the daemon serves."""
        across = self._machine.node_across_dies()
        if across is not None:
            raise RecordingError(f"cannot describe this machine for a recording: {across}")
        self.files.start()
        self._writer = RecordingWriter(
            self.files,
            self._header,
            policy=self._policy,
            node=self._node,
            want_state=self.want_state,
            stopped=self._stopped_by,
            now=self._now,
        )
        self._thread = threading.Thread(target=self._run, name="nrirp-recorder", daemon=True)
        self._thread.start()

    def _header(self) -> dict[str, Any]:
        """What every part's header begins with: the format, the policy, the machine (a
        machine spec) and its memory types, the node."""
        from nrirp.adapters.fakehw import spec_of_machine, spec_to_data

        spec, memory_types = spec_of_machine(self._machine, name=self._node or "recorded")
        return {
            "format": FORMAT,
            "policy": self._policy,
            "machine": spec_to_data(spec),
            "memoryTypes": [f"{node}={kind.value}" for node, kind in sorted(memory_types.items())],
            "node": self._node,
        }

    def attach(self, yield_to: Foreground | None = None) -> None:
        """Have the thread step aside while ``yield_to`` is busy (the NRI handlers)."""
        self._yield_to = yield_to

    def close(self) -> None:
        """Write everything queued, end the file with an end mark and stop the thread (once:
        later calls do nothing)."""
        if self._thread is None:
            return
        self._closing = True
        self._wake.set()
        self._thread.join()
        self._thread = None

    def want_state(self, seen: int) -> None:
        """The writer, having seen ``seen`` states, asks for the state at the next consistent
        point (any thread); not when one it has not seen yet is on its way."""
        if seen == self._states:
            self._want_state = True
            self._limit = -1  # the next call looks

    # ------------------------------------------------------------------ InboundObserver
    def started(
        self,
        config: PolicyConfig | None,
        restored: Mapping[str, Any] | None,
        latest_state: LatestState,
    ) -> None:
        self._latest_state = latest_state
        self._put((_BEGIN, config, restored, self._now()))  # the part began now, not when written

    def handled(
        self,
        operation: str,
        pod: Pod | None = None,
        container: Container | None = None,
        resources: LinuxResources | None = None,
        pods: tuple[Pod, ...] = (),
        containers: tuple[Container, ...] = (),
        config: PolicyConfig | None = None,
        failure: str | None = None,
    ) -> None:
        # on every request's path: as little code as can be (each line of it is a cache miss
        # or two there, more than its work); what the step is made of, nothing more: a
        # creation's call also carries a pod made for that request alone (kept, it was a
        # kilobyte or two of new memory per request)
        item: Any
        if operation == "create-container" and failure is None:
            item = container
            size = 4096
        else:
            how = _HOW.get(operation)
            if how is _IMPLIED:
                return
            if how is _CONTAINER and container is not None:
                item = (ID_STEP, operation, container.id, failure)
                size = 100
            elif how is _POD and pod is not None:
                item = (ID_STEP, operation, pod.id, failure)
                size = 100
            elif how is _RUN and failure is None:
                item = pod
                size = 2048
            else:  # made in C (tuple.__new__), not by the named tuple's __new__
                item = _new_call(
                    InboundCall,
                    (operation, pod, container, resources, pods, containers, config, failure),
                )
                size = _SIZES.get(operation) or 4096 * (1 + len(pods) + len(containers))
        queue = self._queue
        if len(queue) >= self._cap:  # too many wait, or stopped
            self._overflow()
            return
        queue.append(item)
        self._queued = queued = self._queued + size
        if queued > self._limit:
            self._beyond(operation)

    def _beyond(self, operation: str) -> None:
        """Past a threshold (or asked to look): wake the thread to write at once (pressed),
        begin the next part after ``operation`` (wanted), and set the next threshold."""
        self._look = False  # first: what the thread changes from here on has it look again
        queued = self._queued
        if queued - self._handed > self._press:
            self._wake.set()  # pressed: written without waiting for a quiet moment
        if (self._want_state or queued > self._mark_at) and operation not in FOLLOWED:
            # the call's own save came first: the latest snapshot is the state after it
            self._want_state = False
            # the next part's room, reckoned from the last one's header (the thread's number)
            self._mark_at = queued + self._fresh
            self._states += 1
            self._queue.append((_SNAPSHOT, self._latest_state(), self._now()))
        self._limit = min(self._handed + self._press, self._mark_at)
        if self._look or self._want_state:
            self._limit = -1  # changed meanwhile: look again at the next call

    def _look_again(self) -> None:
        """The thread changed what the thresholds are made of (after it did): the next call
        looks (:meth:`_beyond`)."""
        self._look = True
        self._limit = -1

    def _put(self, item: tuple[Any, ...]) -> None:
        if len(self._queue) >= self._cap:
            self._overflow()
        else:
            self._queue.append(item)

    def _overflow(self) -> None:
        if self._cap:  # not stopped yet
            self._cap = 0
            self._queue.append((STOP, f"{MAX_PENDING} calls queued and not recorded yet"))

    def _stopped_by(self, reason: str) -> None:
        """The writer stopped (any thread): log it once, queue nothing more."""
        self._cap = 0
        if self._stopped is None:
            self._stopped = reason
            log.error("recording to %s stopped: %s", self.files.path, reason)

    # ------------------------------------------------------------------ the thread
    def _run(self) -> None:
        writer = self._writer
        assert writer is not None
        while True:
            self._wake.wait(self._interval)
            self._wake.clear()
            closing = self._closing
            if not (closing or self._pressed() or self._quiet()):
                continue  # the runtime is busy: later
            queued = self._queued
            queue = self._queue
            items = [queue.popleft() for _ in range(len(queue))]
            reckoned = queued - self._handed
            self._handed = queued
            self._look_again()
            try:
                records = self._records(items)
            except Exception as exc:  # never the daemon's problem: stop, say why
                records = [(STOP, f"{type(exc).__name__}: {exc}")]
            total = writer.total
            writer.feed(records)
            self._reckon(writer, writer.total - total, reckoned, queued)
            if closing:
                writer.end("the daemon stopped")
                return

    def _reckon(self, writer: RecordingWriter, written: int, reckoned: int, queued: int) -> None:
        """After a hand-over: when to write at once, and where the next part begins."""
        if reckoned > PRESS_MIN:
            self._ratio = max(self._ratio * 0.9, written / reckoned, 0.1)
        room = writer.room
        self._press = max(PRESS_MIN, room // 2)
        self._fresh = int((self._usable - writer.head) * 0.8 / self._ratio)
        if writer.states == self._states:  # no part begun that the writer has not seen
            self._mark_at = queued + int(room * 0.8 / self._ratio)
        self._look_again()

    def _quiet(self) -> bool:
        """Whether the resource manager heard of no call for ``QUIET`` seconds (and no NRI
        handler runs): a moment the runtime leaves the daemon idle."""
        queued = len(self._queue)
        if not queued:
            return False
        time.sleep(QUIET)
        foreground = self._yield_to
        return len(self._queue) == queued and not (foreground is not None and foreground.busy)

    def _pressed(self) -> bool:
        """Whether what waits must be written now, busy or not (see the module)."""
        return self._queued - self._handed > self._press or len(self._queue) > MAX_PENDING // 2

    def _records(self, items: list[Any]) -> list[Record]:
        """What the writer gets for the queued ``items``: calls encoded and snapshots listed,
        stepping aside for the foreground; the rest are records already."""
        records: list[Record] = []
        pause = self._pause
        for item in items:
            kind = type(item)
            if kind is Container or kind is Pod:  # a creation or a pod's run, succeeded
                pause()
                records.append((LINE, yaml_bytes(alone_step(item))))
                continue
            if item is None:  # a creation or a run without its container or pod: no step
                continue
            if kind is InboundCall:
                pause()
                operation = item.operation
                if operation == "reconfigure":
                    if item.failure is None and item.config is not None:
                        records.append((CONFIG, dict(self._dump(item.config))))
                elif operation == "synchronize":
                    records.append((LINE, synchronize_line(item, pause)))
                else:
                    step = call_step(item)
                    if step is not None:
                        records.append((LINE, yaml_bytes(step)))
                continue
            kind = item[0]
            if kind == _SNAPSHOT:
                records.append((STATE, self._state_line(item[1]), item[2]))
            elif kind == _BEGIN:
                config = None if item[1] is None else dict(self._dump(item[1]))
                restored = None if item[2] is None else yaml_bytes(item[2])
                records.append((STARTED, config, restored, item[3]))
            else:
                records.append(item)
        return records

    def _state_line(self, snapshot: Mapping[str, Any] | None) -> bytes | None:
        if snapshot is None:
            return None  # no save since the start: the restored state
        prepare = getattr(snapshot, "prepare", None)
        if callable(prepare):  # listed and unstructured a few objects at a time
            prepare(self._pause)
        return yaml_bytes(snapshot)

    def _pause(self) -> None:
        """Step aside while an NRI request is handled (not once closing)."""
        foreground = self._yield_to
        if foreground is not None and foreground.busy and not self._closing:
            foreground.wait_idle(MAX_PAUSE)  # blocked: not asking for the GIL meanwhile


__all__ = ["Recorder", "RecordingError", "RecordingLimits"]
