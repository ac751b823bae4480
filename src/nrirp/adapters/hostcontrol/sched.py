"""Scheduling class and I/O priority of running tasks: ``sched_setattr`` and ``ioprio_set``.

For runtimes whose NRI cannot carry them (containerd before 2.2.1), the host controller gives
a container's tasks their scheduling class after it started. Each task (thread) is set on its
own, as the kernel keeps these per thread; children forked later inherit them (unless
``reset-on-fork``).

``sched_setattr(2)`` takes every field a class has (policy, priority, nice, deadline
parameters, flags); without its syscall number for this machine (only x86_64 and aarch64 are
known here) the policies other than ``deadline`` go through ``os.sched_setscheduler`` and the
nice value through ``setpriority``. ``ioprio_set(2)`` has no wrapper in Python: it is called
through libc's ``syscall``.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
from collections.abc import Iterable

from nrirp.domain.model import IOPriority, IOPriorityClass, Scheduling, SchedulingPolicy
from nrirp.domain.ports.host_control import HostControlError

_SYSCALLS = {  # (sched_setattr, ioprio_set, ioprio_get, sched_getattr)
    "x86_64": (314, 251, 252, 315),
    "aarch64": (274, 30, 31, 275),
}
_POLICIES = {
    SchedulingPolicy.OTHER: 0,
    SchedulingPolicy.FIFO: 1,
    SchedulingPolicy.RR: 2,
    SchedulingPolicy.BATCH: 3,
    SchedulingPolicy.IDLE: 5,
    SchedulingPolicy.DEADLINE: 6,
}
_FLAGS = {
    "reset-on-fork": 0x01,
    "reclaim": 0x02,
    "dl-overrun": 0x04,
    "keep-policy": 0x08,
    "keep-params": 0x10,
    "util-clamp-min": 0x20,
    "util-clamp-max": 0x40,
    "util-clamp": 0x60,
}
_IO_CLASSES = {
    IOPriorityClass.NONE: 0,
    IOPriorityClass.REALTIME: 1,
    IOPriorityClass.BEST_EFFORT: 2,
    IOPriorityClass.IDLE: 3,
}
IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASS_SHIFT = 13


class _SchedAttr(ctypes.Structure):
    _fields_ = (
        ("size", ctypes.c_uint32),
        ("sched_policy", ctypes.c_uint32),
        ("sched_flags", ctypes.c_uint64),
        ("sched_nice", ctypes.c_int32),
        ("sched_priority", ctypes.c_uint32),
        ("sched_runtime", ctypes.c_uint64),
        ("sched_deadline", ctypes.c_uint64),
        ("sched_period", ctypes.c_uint64),
        ("sched_util_min", ctypes.c_uint32),
        ("sched_util_max", ctypes.c_uint32),
    )


def ioprio_value(priority: IOPriority) -> int:
    """The kernel's ioprio: class in the top bits, level (0-7) below."""
    return (_IO_CLASSES[priority.io_class] << IOPRIO_CLASS_SHIFT) | (priority.priority & 7)


class ProcessScheduler:
    """Sets scheduling and I/O priority of tasks by thread id; ``proc_root`` lists a
    process's threads (``<pid>/task``)."""

    def __init__(self, proc_root: str = "/proc", machine: str | None = None) -> None:
        self.proc_root = proc_root
        self._numbers = _SYSCALLS.get(machine or platform.machine())
        self._libc = ctypes.CDLL(None, use_errno=True)

    def threads(self, pids: Iterable[int]) -> list[int]:
        """Every thread of ``pids`` (a process that is gone has none)."""
        out: list[int] = []
        for pid in pids:
            try:
                out.extend(int(t) for t in os.listdir(f"{self.proc_root}/{pid}/task"))
            except (FileNotFoundError, ProcessLookupError):
                continue
            except OSError:
                out.append(pid)
        return sorted(set(out))

    def apply(
        self, tids: Iterable[int], scheduling: Scheduling | None, io: IOPriority | None
    ) -> None:
        """Give every task in ``tids`` the settings; tasks that exit meanwhile are skipped.
        Raises ``HostControlError`` with the first failure of each kind."""
        problems: dict[str, str] = {}
        for tid in tids:
            if scheduling is not None and "scheduling" not in problems:
                try:
                    self._scheduling(tid, scheduling)
                except ProcessLookupError:
                    continue
                except OSError as exc:
                    problems["scheduling"] = f"scheduling of task {tid}: {exc.strerror or exc}"
            if io is not None and "io" not in problems:
                try:
                    self._io(tid, io)
                except ProcessLookupError:
                    continue
                except OSError as exc:
                    problems["io"] = f"I/O priority of task {tid}: {exc.strerror or exc}"
        if problems:
            raise HostControlError("; ".join(problems.values()))

    # ------------------------------------------------------------------ scheduling
    def _scheduling(self, tid: int, scheduling: Scheduling) -> None:
        if scheduling.policy is SchedulingPolicy.NONE:
            if scheduling.nice is not None:
                os.setpriority(os.PRIO_PROCESS, tid, scheduling.nice)
            return
        if self._numbers is not None:
            self._setattr(tid, scheduling)
            return
        if scheduling.policy is SchedulingPolicy.DEADLINE:
            raise OSError(
                errno.ENOSYS, f"SCHED_DEADLINE needs sched_setattr ({platform.machine()})"
            )
        policy = _POLICIES[scheduling.policy]
        os.sched_setscheduler(tid, policy, os.sched_param(scheduling.priority or 0))
        if scheduling.nice is not None:
            os.setpriority(os.PRIO_PROCESS, tid, scheduling.nice)

    def _setattr(self, tid: int, scheduling: Scheduling) -> None:
        assert self._numbers is not None
        flags = 0
        for name in scheduling.flags:
            flags |= _FLAGS.get(name, 0)
        realtime = scheduling.policy in (SchedulingPolicy.FIFO, SchedulingPolicy.RR)
        attr = _SchedAttr(
            size=ctypes.sizeof(_SchedAttr),
            sched_policy=_POLICIES[scheduling.policy],
            sched_flags=flags,
            sched_nice=scheduling.nice or 0,
            sched_priority=(scheduling.priority or 0) if realtime else 0,
            sched_runtime=scheduling.runtime or 0,
            sched_deadline=scheduling.deadline or 0,
            sched_period=scheduling.period or 0,
        )
        self._syscall(self._numbers[0], tid, ctypes.byref(attr), 0)

    # ------------------------------------------------------------------ I/O priority
    def _io(self, tid: int, priority: IOPriority) -> None:
        if self._numbers is None:
            raise OSError(errno.ENOSYS, f"ioprio_set is not known on {platform.machine()}")
        self._syscall(self._numbers[1], IOPRIO_WHO_PROCESS, tid, ioprio_value(priority))

    def io_priority(self, tid: int) -> int:
        """The task's ioprio (``ioprio_get``), for checks."""
        if self._numbers is None:
            raise OSError(errno.ENOSYS, f"ioprio_get is not known on {platform.machine()}")
        return self._syscall(self._numbers[2], IOPRIO_WHO_PROCESS, tid)

    def _syscall(self, number: int, *args: object) -> int:
        wide = [ctypes.c_long(a) if isinstance(a, int) else a for a in args]
        result: int = self._libc.syscall(ctypes.c_long(number), *wide)
        if result < 0:
            code = ctypes.get_errno()
            if code == errno.ESRCH:
                raise ProcessLookupError(code, os.strerror(code))
            raise OSError(code, os.strerror(code))
        return result
