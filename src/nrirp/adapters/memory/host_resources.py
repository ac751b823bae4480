"""In-memory fakes of the host-wide ports: CPU power, interrupts, resctrl, resource export.

Each records what it was asked and keeps the result, can be told to fail
(``fail_with``), and starts from a host description given to it (what capabilities, which
interrupts, which resctrl resources).
"""

from __future__ import annotations

import threading

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.interrupts import Affinities, Interrupt
from nrirp.domain.hostcontrol.power import NO_CAPS, NO_TARGET, PowerCaps, PowerTarget
from nrirp.domain.hostcontrol.resctrl import ResctrlInfo, ResctrlPlan
from nrirp.domain.ports.host_control import HostControlError


class _Failing:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.fail_with: str | None = None
        self.restored = 0

    def _check(self) -> None:
        if self.fail_with is not None:
            raise HostControlError(self.fail_with)


class InMemoryCPUPower(_Failing):
    """Offers ``caps``; ``target`` is what is applied now, ``applied`` every call."""

    def __init__(self, caps: PowerCaps = NO_CAPS) -> None:
        super().__init__()
        self.caps = caps
        self.target: PowerTarget = NO_TARGET
        self.applied: list[PowerTarget] = []

    def capabilities(self) -> PowerCaps:
        return self.caps

    def apply(self, target: PowerTarget) -> None:
        with self._lock:
            self._check()
            self.applied.append(target)
            self.target = target

    def restore(self) -> None:
        with self._lock:
            self.target = NO_TARGET
            self.restored += 1


class InMemoryInterrupts(_Failing):
    """A host with ``interrupts`` (their original affinities); ``affinities`` is what is
    applied now. ``unavailable``: the reason to refuse listing (no /proc/irq)."""

    def __init__(
        self, interrupts: tuple[Interrupt, ...] = (), unavailable: str | None = None
    ) -> None:
        super().__init__()
        self.host = interrupts
        self.unavailable = unavailable
        self.affinities = Affinities()
        self.applied: list[Affinities] = []

    def interrupts(self) -> tuple[Interrupt, ...]:
        if self.unavailable is not None:
            raise HostControlError(self.unavailable)
        return self.host

    def apply(self, affinities: Affinities) -> None:
        with self._lock:
            self._check()
            self.applied.append(affinities)
            self.affinities = affinities

    def restore(self) -> None:
        with self._lock:
            self.affinities = Affinities()
            self.restored += 1

    def affinity(self, number: int) -> CPUSet:
        """The interrupt's affinity now."""
        found = self.affinities.irqs.get(number)
        if found is not None:
            return found
        return next(i.affinity for i in self.host if i.number == number)


class InMemoryResctrl(_Failing):
    """resctrl offering ``info`` (``None``: not mounted); ``plan`` is what is applied now.
    ``tasks``: group -> how many tasks the runtime put in it (set by tests); ``kept``: the
    groups a shutdown left in place (planned, holding tasks), adopted again by the next
    ``apply`` naming them; ``cleared`` counts :meth:`clear` calls."""

    def __init__(self, info: ResctrlInfo | None = None) -> None:
        super().__init__()
        self.resctrl_info = info
        self.plan: ResctrlPlan | None = None
        self.tasks: dict[str, int] = {}
        self.kept: frozenset[str] = frozenset()
        self.cleared = 0

    def info(self) -> ResctrlInfo:
        if self.resctrl_info is None:
            raise HostControlError("no resctrl: not mounted")
        return self.resctrl_info

    def apply(self, plan: ResctrlPlan) -> None:
        with self._lock:
            self._check()
            self.plan = plan
            self.kept = frozenset()

    def restore(self) -> None:
        with self._lock:
            if self.plan is not None:
                self.kept = frozenset(g for g in self.plan.groups if g and self.tasks.get(g))
            self.plan = None
            self.restored += 1

    def clear(self) -> None:
        with self._lock:
            self.plan = None
            self.kept = frozenset()
            self.cleared += 1


class InMemoryResourceExport(_Failing):
    """``files``: container id -> the content of its ``resources.sh``."""

    def __init__(self, root: str = "/var/lib/nrirp/containers") -> None:
        super().__init__()
        self.root = root
        self.files: dict[str, str] = {}

    def location(self, container_id: str) -> str:
        return f"{self.root}/{container_id}"

    def write(self, container_id: str, content: str) -> None:
        with self._lock:
            self._check()
            self.files[container_id] = content

    def remove(self, container_id: str) -> None:
        with self._lock:
            self.files.pop(container_id, None)
