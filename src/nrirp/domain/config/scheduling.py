"""Scheduling classes: Linux CPU and I/O scheduling parameters applied to matching containers."""

from __future__ import annotations

from collections.abc import Iterator

import attrs

from nrirp.domain.config.enums import IOClass, SchedulingFlag, SchedulingPolicy
from nrirp.domain.config.errors import Issue
from nrirp.domain.config.keys import ref
from nrirp.domain.config.validation import at, check_range

_REALTIME = {SchedulingPolicy.FIFO, SchedulingPolicy.RR}


@attrs.frozen(kw_only=True)
class SchedulingClass:
    """A named set of scheduling parameters; unset values leave the runtime's default.

    ``runtime``, ``deadline`` and ``period`` are SCHED_DEADLINE parameters in nanoseconds."""

    name: str = attrs.field(metadata=ref("name"))
    policy: SchedulingPolicy | None = attrs.field(default=None, metadata=ref("policy"))
    priority: int | None = attrs.field(default=None, metadata=ref("priority"))
    flags: tuple[SchedulingFlag, ...] = attrs.field(default=(), metadata=ref("flags"))
    nice: int | None = attrs.field(default=None, metadata=ref("nice"))
    runtime: int | None = attrs.field(default=None, metadata=ref("runtime"))
    deadline: int | None = attrs.field(default=None, metadata=ref("deadline"))
    period: int | None = attrs.field(default=None, metadata=ref("period"))
    io_class: IOClass | None = attrs.field(default=None, metadata=ref("ioClass"))
    io_priority: int | None = attrs.field(default=None, metadata=ref("ioPriority"))

    def config_problems(self) -> Iterator[Issue]:
        if not self.name:
            yield at(self, "name", "invalid value '': a name is required")
        yield from check_range(self, "priority", 0, 99)
        if self.policy in _REALTIME and self.priority is not None and self.priority < 1:
            yield at(
                self,
                "priority",
                f"invalid value {self.priority}: policy {self.policy.value} needs a priority "
                "of 1-99",
            )
        yield from check_range(self, "nice", -20, 19)
        yield from check_range(self, "io_priority", 0, 7)
        for attribute in ("runtime", "deadline", "period"):
            yield from check_range(self, attribute, 0)
        runtime, deadline, period = self.runtime, self.deadline, self.period
        if runtime is not None and deadline is not None and runtime > deadline:
            yield at(self, "runtime", f"invalid value {runtime}: exceeds deadline ({deadline})")
        if deadline is not None and period is not None and period and deadline > period:
            yield at(self, "deadline", f"invalid value {deadline}: exceeds period ({period})")
        if len(set(self.flags)) != len(self.flags):
            yield at(self, "flags", "a flag is listed more than once")
