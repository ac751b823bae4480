"""CPUAllocator: picks the CPUs for an exclusive allocation, and the ones to give back."""

from __future__ import annotations

from collections.abc import Mapping

from nrirp.domain.config.enums import CPUPriority
from nrirp.domain.cpuallocator.errors import CPUAllocationError
from nrirp.domain.cpuallocator.index import MachineIndex, bit_ids
from nrirp.domain.cpuallocator.picker import Picker
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import Machine

_CLASSES = (CPUPriority.HIGH, CPUPriority.NORMAL, CPUPriority.LOW)


class CPUAllocator:
    """Topology-aware CPU picker for one machine.

    Build it once per machine (it precomputes per-package, per-core and per-cache structures);
    every call after that costs about the size of the CPU sets it is given. Results are
    deterministic: the same machine and arguments give the same CPUs.
    """

    def __init__(self, machine: Machine) -> None:
        self._machine = machine
        self._index = MachineIndex(machine)
        self._picker = Picker(self._index)
        self._priorities = {p: CPUSet(self._index.priority_bits[p]) for p in _CLASSES}

    @property
    def machine(self) -> Machine:
        return self._machine

    def priorities(self) -> Mapping[CPUPriority, CPUSet]:
        """The CPUs of each priority class (HIGH, NORMAL, LOW); together, every online CPU."""
        return dict(self._priorities)

    def priority_of(self, cpu_id: int) -> CPUPriority:
        """The priority class of one online CPU (KeyError for others)."""
        try:
            return self._index.priority_of[cpu_id]
        except KeyError:
            raise KeyError(f"CPU {cpu_id} is not an online CPU of this machine") from None

    def usable(self, available: CPUSet, priority: CPUPriority = CPUPriority.NONE) -> CPUSet:
        """The CPUs of ``available`` that a request of ``priority`` may be given.

        Online CPUs of the machine, less the E-cores of a hybrid part for high and normal
        priority requests.
        """
        return CPUSet(available.bits & self._eligible(_priority(priority)))

    def allocate(
        self, available: CPUSet, count: int, *, priority: CPUPriority = CPUPriority.NONE
    ) -> CPUSet:
        """Exactly ``count`` CPUs out of ``available``, the best ones for ``priority``.

        Raises :class:`CPUAllocationError` when fewer than ``count`` of them are usable.
        """
        _check_count(count)
        priority = _priority(priority)
        if count == 0:
            return CPUSet()
        eligible = self._eligible(priority)
        free = available.bits & eligible
        if free.bit_count() < count:
            raise CPUAllocationError(self._shortage(available, count, priority, free))
        if priority is CPUPriority.LOW and self._index.hybrid:
            efficient = free & self._index.efficient
            if efficient.bit_count() >= count:  # the E-cores have room: use only them
                free, eligible = efficient, self._index.efficient
        if free.bit_count() == count:
            return CPUSet(free)
        return CPUSet(self._pick(free, count, priority, eligible))

    def release(
        self, cpus: CPUSet, count: int, *, priority: CPUPriority = CPUPriority.NONE
    ) -> CPUSet:
        """The ``count`` CPUs of ``cpus`` to give back, least valuable first.

        What stays is what :meth:`allocate` would pick out of ``cpus`` for the remaining size,
        so whole packages, clusters, cache groups and cores stay together, and lonely threads
        go first. CPUs that a ``priority`` request may not use (E-cores for high and normal)
        and ids that are not online CPUs of the machine go before any other.
        """
        _check_count(count)
        priority = _priority(priority)
        held = len(cpus)
        if count > held:
            raise CPUAllocationError(
                f"cannot release {count} CPUs from {_describe(cpus)}: it holds only {held}"
            )
        if count == 0:
            return CPUSet()
        if count == held:
            return cpus
        keep_count = held - count
        known = cpus.bits & self._index.online
        if known.bit_count() <= keep_count:
            unknown = cpus.bits & ~known
            keep = known | _lowest(unknown, keep_count - known.bit_count())
            return CPUSet(cpus.bits & ~keep)
        eligible = self._eligible(priority)
        preferred = known & eligible
        if priority is CPUPriority.LOW and self._index.hybrid:
            efficient = known & self._index.efficient
            if efficient.bit_count() >= keep_count:
                preferred, eligible = efficient, self._index.efficient
        if preferred.bit_count() >= keep_count:
            keep = self._pick(preferred, keep_count, priority, eligible)
        else:
            rest = known & ~preferred
            need = keep_count - preferred.bit_count()
            keep = preferred | self._pick(rest, need, priority, self._index.online)
        return CPUSet(cpus.bits & ~keep)

    # ---------------------------------------------------------------- internals
    def _eligible(self, priority: CPUPriority) -> int:
        online = self._index.online
        if self._index.hybrid and priority in (CPUPriority.HIGH, CPUPriority.NORMAL):
            return online & ~self._index.efficient
        return online

    def _pick(self, free: int, count: int, priority: CPUPriority, eligible: int) -> int:
        if priority is CPUPriority.NONE:  # no class wanted; on hybrid parts P-cores come first
            pref = self._index.online & ~self._index.efficient
        else:
            pref = self._index.priority_bits[priority]
        clusters = (priority is CPUPriority.LOW) if self._index.hybrid else None
        return self._picker.pick(
            free, count, pref=pref, eligible=eligible, efficient_clusters=clusters
        )

    def _shortage(self, available: CPUSet, count: int, priority: CPUPriority, free: int) -> str:
        have = free.bit_count()
        what = "CPU" if count == 1 else "CPUs"
        reasons = []
        offline = available.bits & ~self._index.online
        if offline:
            reasons.append(f"{_describe(CPUSet(offline))} are not online CPUs of this machine")
        excluded = available.bits & self._index.online & ~free
        if excluded:
            reasons.append(
                f"E-cores {_describe(CPUSet(excluded))} are not used for {priority.value} priority"
            )
        why = f" ({'; '.join(reasons)})" if reasons else ""
        wanted = "any" if priority is CPUPriority.NONE else priority.value
        return (
            f"cannot allocate {count} {what} of {wanted} priority "
            f"from {_describe(available)}: only {have} usable{why}"
        )


def _check_count(count: int) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise CPUAllocationError(f"CPU count must be a non-negative integer, got {count!r}")


def _priority(value: CPUPriority | str) -> CPUPriority:
    """The priority, also from its config spelling ('high', ...)."""
    try:
        return CPUPriority(value)
    except ValueError:
        known = ", ".join(p.value for p in CPUPriority)
        raise CPUAllocationError(f"unknown CPU priority {value!r} (known: {known})") from None


def _describe(cpus: CPUSet) -> str:
    return f"'{cpus}'" if cpus else "the empty set"


def _lowest(bits: int, n: int) -> int:
    out = 0
    for i in bit_ids(bits)[:n]:
        out |= 1 << i
    return out
