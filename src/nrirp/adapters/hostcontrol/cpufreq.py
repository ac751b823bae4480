"""``SysfsCPUPower``: the CPUPowerControl port on sysfs (cpufreq, cpuidle, intel uncore).

Files, relative to the sysfs root (``/sys``):

- range: ``devices/system/cpu/cpuN/cpufreq/{cpuinfo_min_freq,cpuinfo_max_freq}``; base:
  ``base_frequency``, else ``cpuN/acpi_cppc/nominal_freq`` (MHz);
- limits: ``cpuN/cpufreq/scaling_min_freq``, ``scaling_max_freq`` (kHz);
- governor: ``cpuN/cpufreq/scaling_governor`` (choices: ``scaling_available_governors``);
- EPP: ``cpuN/cpufreq/energy_performance_preference`` (written as the class's number);
- shared limits: ``cpuN/cpufreq/related_cpus`` (else ``affected_cpus``);
- C-states: ``cpuN/cpuidle/stateK/{name,disable}``;
- uncore: ``devices/system/cpu/intel_uncore_frequency/package_PP_die_DD/`` with
  ``initial_min_freq_khz``, ``initial_max_freq_khz``, ``min_freq_khz``, ``max_freq_khz``.

A file that is missing or read-only (no write bits, as sysfs shows attributes without a store
method; or a read-only mount, as in a container) takes its knob out for that CPU or die, and
:meth:`capabilities` says why (the first such file per knob).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable

from nrirp.adapters.hostcontrol.files import (
    TrackedFiles,
    raise_problems,
    read_int,
    read_text,
    unwritable,
)
from nrirp.domain.cpuset import CPUSet, CPUSetError
from nrirp.domain.hostcontrol.power import (
    CPUCaps,
    CPUTarget,
    Knob,
    PowerCaps,
    PowerTarget,
    UncoreCaps,
    UncoreTarget,
)
from nrirp.domain.ports.host_control import HostControlError

_UNCORE_DIR = re.compile(r"package_(\d+)_die_(\d+)")
_KNOB_FILES = (
    (Knob.MIN_FREQ, "scaling_min_freq"),
    (Knob.MAX_FREQ, "scaling_max_freq"),
    (Knob.GOVERNOR, "scaling_governor"),
    (Knob.EPP, "energy_performance_preference"),
)


class SysfsCPUPower:
    """CPU classes' settings written to the sysfs tree at ``root``; the values found before
    the first write are kept (in memory, and in ``journal`` when given: see
    :class:`TrackedFiles`) and written back by :meth:`restore` and whenever a setting no
    longer has a class."""

    def __init__(self, root: str = "/sys", journal: str | None = None) -> None:
        self.root = root.rstrip("/") or "/"
        self._cpu_dir = os.path.join(self.root, "devices/system/cpu")
        self._files = TrackedFiles(journal)
        self._caps: PowerCaps | None = None
        self._cstate_paths: dict[int, dict[str, str]] = {}
        """Per CPU, the ``disable`` file of each C-state by name (read once)."""
        self._applied: PowerTarget | None = None

    # ------------------------------------------------------------------ discovery
    def capabilities(self) -> PowerCaps:
        if self._caps is None:
            self._caps = self._discover()
        return self._caps

    def _discover(self) -> PowerCaps:
        unavailable: dict[Knob, str] = {}
        cpus: dict[int, CPUCaps] = {}
        alike: dict[CPUCaps, CPUCaps] = {}  # one value for CPUs alike (planning reuses it)
        policies: dict[int, int] = {}
        for cpu in self._online():
            caps, policy = self._cpu_caps(cpu, unavailable)
            cpus[cpu] = alike.setdefault(caps, caps)
            policies[cpu] = policy
        members: dict[int, int] = {}
        for policy in policies.values():
            members[policy] = members.get(policy, 0) + 1
        shared = {cpu: p for cpu, p in policies.items() if members[p] > 1}
        uncore = self._uncore_caps(unavailable)
        return PowerCaps(cpus=cpus, uncore=uncore, unavailable=unavailable, policies=shared)

    def _online(self) -> CPUSet:
        text = read_text(os.path.join(self._cpu_dir, "online"))
        try:
            return CPUSet.parse(text or "")
        except CPUSetError:
            return CPUSet()

    def _cpu_caps(self, cpu: int, unavailable: dict[Knob, str]) -> tuple[CPUCaps, int]:
        base = os.path.join(self._cpu_dir, f"cpu{cpu}")
        freq = os.path.join(base, "cpufreq")
        knobs: set[Knob] = set()
        if not os.path.isdir(freq):
            for knob, _ in _KNOB_FILES:
                unavailable.setdefault(knob, f"no cpufreq: {freq} is missing")
            min_khz = max_khz = base_khz = None
            policy = cpu
            governors: tuple[str, ...] = ()
        else:
            for knob, name in _KNOB_FILES:
                why = unwritable(os.path.join(freq, name))
                if why is None:
                    knobs.add(knob)
                else:
                    unavailable.setdefault(knob, why)
            min_khz = read_int(os.path.join(freq, "cpuinfo_min_freq"))
            max_khz = read_int(os.path.join(freq, "cpuinfo_max_freq"))
            base_khz = read_int(os.path.join(freq, "base_frequency"))
            if base_khz is None:
                nominal = read_int(os.path.join(base, "acpi_cppc/nominal_freq"))
                base_khz = None if nominal is None else nominal * 1000
            governors = tuple(
                (read_text(os.path.join(freq, "scaling_available_governors")) or "").split()
            )
            policy = self._policy_id(freq, cpu)
        cstates = self._cstates(base, knobs, unavailable)
        caps = CPUCaps(
            min_khz=min_khz,
            max_khz=max_khz,
            base_khz=base_khz,
            governors=governors,
            cstates=cstates,
            knobs=frozenset(knobs),
        )
        return caps, policy

    @staticmethod
    def _policy_id(freq: str, cpu: int) -> int:
        for name in ("related_cpus", "affected_cpus"):
            text = read_text(os.path.join(freq, name))
            if text:
                try:
                    ids = CPUSet.from_ids(int(t) for t in text.replace(",", " ").split())
                except ValueError:
                    continue
                if ids:
                    return ids.min()
        return cpu

    def _cstates(
        self, base: str, knobs: set[Knob], unavailable: dict[Knob, str]
    ) -> tuple[str, ...]:
        idle = os.path.join(base, "cpuidle")
        if not os.path.isdir(idle):
            unavailable.setdefault(Knob.CSTATES, f"no cpuidle: {idle} is missing")
            return ()
        names = []
        problem = None
        for entry in sorted(os.listdir(idle), key=_state_order):
            if not entry.startswith("state"):
                continue
            name = read_text(os.path.join(idle, entry, "name"))
            if name is None:
                continue
            why = unwritable(os.path.join(idle, entry, "disable"))
            if why is None:
                names.append(name)
            elif problem is None:
                problem = why
        if names:
            knobs.add(Knob.CSTATES)
        else:
            unavailable.setdefault(Knob.CSTATES, problem or f"no C-states in {idle}")
        return tuple(names)

    def _uncore_caps(self, unavailable: dict[Knob, str]) -> dict[tuple[int, int], UncoreCaps]:
        top = os.path.join(self._cpu_dir, "intel_uncore_frequency")
        if not os.path.isdir(top):
            unavailable[Knob.UNCORE] = f"no uncore frequency control: {top} is missing"
            return {}
        out = {}
        for entry in sorted(os.listdir(top)):
            match = _UNCORE_DIR.fullmatch(entry)
            if match is None:
                continue
            d = os.path.join(top, entry)
            low = read_int(os.path.join(d, "initial_min_freq_khz"))
            high = read_int(os.path.join(d, "initial_max_freq_khz"))
            why = unwritable(os.path.join(d, "min_freq_khz")) or unwritable(
                os.path.join(d, "max_freq_khz")
            )
            if low is None or high is None:
                why = why or f"no initial_min/max_freq_khz in {d}"
            if why is not None:
                unavailable.setdefault(Knob.UNCORE, why)
                continue
            assert low is not None and high is not None
            out[(int(match[1]), int(match[2]))] = UncoreCaps(low, high)
        if not out:
            unavailable.setdefault(Knob.UNCORE, f"no usable package_*_die_* in {top}")
        return out

    # ------------------------------------------------------------------ applying
    def apply(self, target: PowerTarget) -> None:
        """The first call makes every file match (what a killed daemon left, from the
        journal, included); later ones touch only the CPUs and dies whose target changed."""
        previous = self._applied
        self._applied = target
        problems: list[str] = []
        if previous is None:
            wanted: dict[str, str] = {}
            for cpu, cpu_target in target.cpus.items():
                wanted.update(self._cpu_files(cpu, cpu_target))
            for (package, die), uncore in target.uncore.items():
                wanted.update(self._uncore_files(package, die, uncore))
            self._switch(self._files.paths(), wanted, problems)
        else:
            for cpu in previous.cpus.keys() | target.cpus.keys():
                old, new = previous.cpus.get(cpu), target.cpus.get(cpu)
                if old != new:
                    before = self._cpu_files(cpu, old) if old is not None else {}
                    after = self._cpu_files(cpu, new) if new is not None else {}
                    self._switch(before, after, problems)
            for key in previous.uncore.keys() | target.uncore.keys():
                old_u, new_u = previous.uncore.get(key), target.uncore.get(key)
                if old_u != new_u:
                    before = self._uncore_files(*key, old_u) if old_u is not None else {}
                    after = self._uncore_files(*key, new_u) if new_u is not None else {}
                    self._switch(before, after, problems)
        raise_problems("CPU classes", problems)

    def _switch(self, before: Iterable[str], after: dict[str, str], problems: list[str]) -> None:
        """Files of ``before`` not in ``after`` get their original back; ``after`` is written
        (in an order the kernel accepts)."""
        for path in before:
            if path not in after:
                self._guard(problems, functools.partial(self._files.reset, path))
        for path, value in _ordered(after, self._files):
            self._guard(problems, functools.partial(self._files.set, path, value))

    def restore(self) -> None:
        self._applied = None
        raise_problems("restoring CPU classes", self._files.restore())

    def current(self) -> dict[str, str]:
        """Every file written and its value now (for reports and tests)."""
        return dict(self._files.current)

    def _cpu_files(self, cpu: int, target: CPUTarget) -> dict[str, str]:
        freq = os.path.join(self._cpu_dir, f"cpu{cpu}", "cpufreq")
        out = {}
        if target.min_khz is not None:
            out[os.path.join(freq, "scaling_min_freq")] = str(target.min_khz)
        if target.max_khz is not None:
            out[os.path.join(freq, "scaling_max_freq")] = str(target.max_khz)
        if target.governor is not None:
            out[os.path.join(freq, "scaling_governor")] = target.governor
        if target.epp is not None:
            out[os.path.join(freq, "energy_performance_preference")] = str(target.epp)
        if target.disabled_cstates:
            states = self._cstate_files(cpu)
            for name in target.disabled_cstates:
                path = states.get(name)
                if path is not None:
                    out[path] = "1"
        return out

    def _cstate_files(self, cpu: int) -> dict[str, str]:
        found = self._cstate_paths.get(cpu)
        if found is None:
            idle = os.path.join(self._cpu_dir, f"cpu{cpu}", "cpuidle")
            found = {}
            for entry in os.listdir(idle) if os.path.isdir(idle) else ():
                name = read_text(os.path.join(idle, entry, "name"))
                if name is not None:
                    found[name] = os.path.join(idle, entry, "disable")
            self._cstate_paths[cpu] = found
        return found

    def _uncore_files(self, package: int, die: int, target: UncoreTarget) -> dict[str, str]:
        d = os.path.join(
            self._cpu_dir, "intel_uncore_frequency", f"package_{package:02d}_die_{die:02d}"
        )
        out = {}
        if target.min_khz is not None:
            out[os.path.join(d, "min_freq_khz")] = str(target.min_khz)
        if target.max_khz is not None:
            out[os.path.join(d, "max_freq_khz")] = str(target.max_khz)
        return out

    @staticmethod
    def _guard(problems: list[str], call: Callable[[], None]) -> None:
        try:
            call()
        except HostControlError as exc:
            problems.append(str(exc))


def _state_order(entry: str) -> tuple[int, str]:
    digits = entry[5:]
    return (int(digits) if digits.isdigit() else 1 << 30, entry)


def _ordered(wanted: dict[str, str], files: TrackedFiles) -> list[tuple[str, str]]:
    """The kernel keeps minimum <= maximum: raised maximums first, then the minimums (and
    everything else), then the other maximums."""
    first: list[tuple[str, str]] = []
    middle: list[tuple[str, str]] = []
    last: list[tuple[str, str]] = []
    for path, value in sorted(wanted.items()):
        if not path.endswith(("scaling_max_freq", "max_freq_khz")):
            middle.append((path, value))
            continue
        now = files.current.get(path) or read_text(path) or "0"
        raising = value.isdigit() and now.isdigit() and int(value) > int(now)
        (first if raising else last).append((path, value))
    return first + middle + last
