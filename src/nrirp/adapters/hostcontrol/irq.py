"""``ProcInterruptControl``: the InterruptControl port on procfs (``/proc/irq``).

Per interrupt N: ``irq/N/smp_affinity_list`` (a CPU list) is read and written; its
description is the names of the handlers registered on it, the subdirectories of
``irq/N`` (what ``/proc/interrupts`` shows in its last column). The default affinity for new
interrupts is ``irq/default_smp_affinity``, a hex mask in 32-bit groups (``ff,ffffffff``).
Interrupts whose affinity file is read-only (per-CPU and managed interrupts) are not listed;
one the kernel refuses to move (``EIO``) is reported once and not tried again.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable

from nrirp.adapters.hostcontrol.files import TrackedFiles, raise_problems, read_text, unwritable
from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.hostcontrol.interrupts import Affinities, Interrupt
from nrirp.domain.ports.host_control import HostControlError


def mask_to_cpus(text: str) -> CPUSet:
    """``ff,ffffffff`` (32-bit groups, most significant first) -> CPUs."""
    value = int(text.replace(",", "") or "0", 16)
    return CPUSet(value)


def cpus_to_mask(cpus: CPUSet, groups: int = 1) -> str:
    """CPUs -> the kernel's comma-separated 32-bit hex groups, at least ``groups`` of them."""
    value = cpus.bits
    parts: list[str] = []
    while value or len(parts) < groups:
        parts.append(f"{value & 0xFFFFFFFF:08x}")
        value >>= 32
    return ",".join(reversed(parts))


class ProcInterruptControl:
    """Interrupt affinities written under the procfs tree at ``root`` (``/proc``); the
    affinities found first are kept in ``journal`` too, when given (:class:`TrackedFiles`)."""

    def __init__(self, root: str = "/proc", journal: str | None = None) -> None:
        self.root = root.rstrip("/") or "/"
        self._irq_dir = os.path.join(self.root, "irq")
        self._files = TrackedFiles(journal)
        self._refused: set[int] = set()

    def interrupts(self) -> tuple[Interrupt, ...]:
        if not os.path.isdir(self._irq_dir):
            raise HostControlError(f"no interrupt control: {self._irq_dir} is missing")
        out = []
        problem = None
        for entry in sorted(os.listdir(self._irq_dir), key=lambda e: (len(e), e)):
            if not entry.isdigit() or int(entry) in self._refused:
                continue
            directory = os.path.join(self._irq_dir, entry)
            path = os.path.join(directory, "smp_affinity_list")
            why = unwritable(path)
            if why is not None:
                problem = problem or why
                continue
            text = self._files.original(path) or read_text(path)
            try:
                affinity = CPUSet.parse(text or "")
            except CPUSetError:
                continue
            handlers = sorted(
                e for e in os.listdir(directory) if os.path.isdir(os.path.join(directory, e))
            )
            out.append(Interrupt(int(entry), ", ".join(handlers), affinity))
        if not out and problem is not None:
            raise HostControlError(f"no interrupt can be steered: {problem}")
        return tuple(out)

    def apply(self, affinities: Affinities) -> None:
        wanted = {
            os.path.join(self._irq_dir, str(n), "smp_affinity_list"): str(cpus)
            for n, cpus in affinities.irqs.items()
            if n not in self._refused
        }
        default_path = os.path.join(self._irq_dir, "default_smp_affinity")
        if affinities.default is not None:
            found = self._files.original(default_path) or read_text(default_path) or "0"
            wanted[default_path] = cpus_to_mask(affinities.default, found.count(",") + 1)
        problems: list[str] = []
        for path in self._files.paths():
            if path not in wanted:
                self._guard(problems, path, functools.partial(self._files.reset, path))
        for path, value in wanted.items():
            self._guard(problems, path, functools.partial(self._files.set, path, value))
        raise_problems("interrupt affinity", problems)

    def restore(self) -> None:
        raise_problems("restoring interrupt affinity", self._files.restore())

    def current(self) -> dict[str, str]:
        """Every file written and its value now (for reports and tests)."""
        return dict(self._files.current)

    def _guard(self, problems: list[str], path: str, call: Callable[[], None]) -> None:
        try:
            call()
        except HostControlError as exc:
            problems.append(str(exc))
            number = os.path.basename(os.path.dirname(path))
            if number.isdigit():
                self._refused.add(int(number))  # not tried again
