"""Host control files of a fake machine, laid out as on a real host, and a tree that keeps them.

:func:`write_host` adds to a tree written by :func:`~nrirp.adapters.fakehw.writer.write_sysfs`
and :func:`~nrirp.adapters.fakehw.writer.write_procfs` (``root/sys`` and ``root/proc``):

- ``sys/devices/system/cpu/cpufreq/policyN/``: ``cpuinfo_min_freq``, ``scaling_min_freq``,
  ``scaling_max_freq``, ``scaling_governor``, ``scaling_available_governors``,
  ``energy_performance_available_preferences``, ``related_cpus`` (CPUs with a ``frequency``);
- ``sys/devices/system/cpu/cpuN/cpuidle/stateK/{name,disable,desc}``;
- ``sys/devices/system/cpu/intel_uncore_frequency/package_PP_die_DD/`` with
  ``initial_min_freq_khz``, ``initial_max_freq_khz``, ``min_freq_khz``, ``max_freq_khz``;
- ``sys/fs/resctrl/``: ``info/{L2,L3 (or L3CODE, L3DATA),MB}/...``, ``info/last_cmd_status``,
  the root ``schemata`` (one line per resource over the cache ids of that level),
  ``tasks``, ``cpus_list``;
- ``proc/irq/N/{smp_affinity_list,smp_affinity}`` with a directory per handler name,
  ``proc/irq/default_smp_affinity``, ``proc/interrupts``.

Then the files matching ``read_only`` lose their write bits.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
import tempfile
import weakref

from nrirp.adapters.fakehw.discovery import scratch_dir
from nrirp.adapters.fakehw.host_spec import HostSpec
from nrirp.adapters.fakehw.layout import resolve
from nrirp.adapters.fakehw.records import Layout
from nrirp.adapters.fakehw.spec import MachineSpec
from nrirp.adapters.fakehw.writer import write_procfs, write_sysfs
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CacheType


class _Files:
    def __init__(self, root: str) -> None:
        self.root = root

    def file(self, rel: str, content: str) -> None:
        path = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(content + "\n")

    def directory(self, rel: str) -> None:
        os.makedirs(os.path.join(self.root, rel), exist_ok=True)


def write_host(layout: Layout, root: str) -> None:
    """Write the host control files of ``layout`` into ``root`` (which holds ``sys`` and
    ``proc``); nothing without a host section."""
    host = layout.host
    if host is None:
        return
    files = _Files(root)
    if host.cpufreq is not None:
        _cpufreq(layout, host, files)
    if host.cpuidle:
        _cpuidle(layout, host.cpuidle, files)
    if host.uncore is not None:
        dies = sorted({(c.package, c.die) for c in layout.cpus if c.id in layout.online})
        for package, die in dies:
            base = (
                f"sys/devices/system/cpu/intel_uncore_frequency/package_{package:02d}_die_{die:02d}"
            )
            low, high = str(host.uncore.min_khz), str(host.uncore.max_khz)
            for name, value in (
                ("initial_min_freq_khz", low),
                ("initial_max_freq_khz", high),
                ("min_freq_khz", low),
                ("max_freq_khz", high),
                ("current_freq_khz", high),
            ):
                files.file(f"{base}/{name}", value)
    if host.resctrl is not None:
        _resctrl(layout, host, files)
    if host.interrupts:
        _interrupts(layout, host, files)
    _read_only(root, host.read_only)


def _cpufreq(layout: Layout, host: HostSpec, files: _Files) -> None:
    spec = host.cpufreq
    assert spec is not None
    for c in layout.cpus:
        freq = c.frequency
        if c.id not in layout.online or (freq.max_khz is None and freq.base_khz is None):
            continue
        top = freq.max_khz or freq.base_khz
        policy = f"sys/devices/system/cpu/cpufreq/policy{c.id}"
        for name, value in (
            ("cpuinfo_min_freq", str(spec.min_khz)),
            ("cpuinfo_max_freq", str(top)),
            ("scaling_min_freq", str(spec.min_khz)),
            ("scaling_max_freq", str(top)),
            ("scaling_governor", spec.governor),
            ("scaling_available_governors", " ".join(spec.governors)),
            ("related_cpus", str(c.id)),
        ):
            files.file(f"{policy}/{name}", value)
        if spec.epp_preferences:
            files.file(
                f"{policy}/energy_performance_available_preferences",
                " ".join(spec.epp_preferences),
            )
            if freq.epp is None:
                files.file(f"{policy}/energy_performance_preference", spec.epp_preferences[0])


def _cpuidle(layout: Layout, states: tuple[str, ...], files: _Files) -> None:
    for c in layout.cpus:
        if c.id not in layout.online:
            continue
        for index, name in enumerate(states):
            base = f"sys/devices/system/cpu/cpu{c.id}/cpuidle/state{index}"
            files.file(f"{base}/name", name)
            files.file(f"{base}/desc", f"{name} idle state")
            files.file(f"{base}/disable", "0")


def _resctrl(layout: Layout, host: HostSpec, files: _Files) -> None:
    spec = host.resctrl
    assert spec is not None
    base = "sys/fs/resctrl"
    lines = []
    for level, cache in ((2, spec.l2), (3, spec.l3)):
        if cache is None:
            continue
        ids = _cache_ids(layout, level)
        names = [f"L{level}CODE", f"L{level}DATA"] if cache.cdp else [f"L{level}"]
        for name in names:
            info = f"{base}/info/{name}"
            files.file(f"{info}/cbm_mask", cache.cbm_mask)
            files.file(f"{info}/min_cbm_bits", str(cache.min_cbm_bits))
            files.file(f"{info}/num_closids", str(cache.num_closids))
            files.file(f"{info}/shareable_bits", "0")
            lines.append(f"{name}:" + ";".join(f"{i}={cache.cbm_mask}" for i in ids))
    if spec.mb is not None:
        mb = spec.mb
        info = f"{base}/info/MB"
        files.file(f"{info}/min_bandwidth", str(mb.min_bandwidth))
        files.file(f"{info}/bandwidth_gran", str(mb.bandwidth_gran))
        files.file(f"{info}/num_closids", str(mb.num_closids))
        files.file(f"{info}/delay_linear", "1")
        full = "4294967295" if mb.mbps else "100"
        lines.append("MB:" + ";".join(f"{i}={full}" for i in _cache_ids(layout, 3)))
    files.file(f"{base}/info/last_cmd_status", "ok")
    files.file(f"{base}/schemata", "\n".join(lines))
    files.file(f"{base}/tasks", "")
    files.file(f"{base}/cpus_list", str(layout.online))


def _cache_ids(layout: Layout, level: int) -> list[int]:
    ids = sorted(
        {
            g.id
            for g in layout.caches
            if g.level == level and g.type is not CacheType.INSTRUCTION and g.cpus & layout.online
        }
    )
    return ids or [0]


def _interrupts(layout: Layout, host: HostSpec, files: _Files) -> None:
    online = layout.online
    mask_groups = max(1, (online.max() + 32) // 32)
    rows = ["".ljust(11) + "".join(f"CPU{c}".ljust(11) for c in online)]
    for irq in host.interrupts:
        cpus = irq.cpus if irq.cpus is not None else online
        base = f"proc/irq/{irq.irq}"
        files.file(f"{base}/smp_affinity_list", str(cpus))
        files.file(f"{base}/smp_affinity", _mask(cpus, mask_groups))
        files.file(f"{base}/effective_affinity_list", str(cpus))
        for name in irq.names:
            files.directory(f"{base}/{name}")
        counts = "".join("0".rjust(11) for _ in online)
        rows.append(f"{irq.irq:>4}:{counts}  PCI-MSI {irq.irq}-edge      {', '.join(irq.names)}")
    files.file("proc/irq/default_smp_affinity", _mask(online, mask_groups))
    files.file("proc/interrupts", "\n".join(rows))
    for irq in host.interrupts:
        if irq.read_only:
            for name in ("smp_affinity_list", "smp_affinity"):
                os.chmod(os.path.join(files.root, f"proc/irq/{irq.irq}/{name}"), 0o444)


def _mask(cpus: CPUSet, groups: int) -> str:
    value = cpus.bits
    parts = []
    for _ in range(groups):
        parts.append(f"{value & 0xFFFFFFFF:08x}")
        value >>= 32
    return ",".join(reversed(parts))


def _read_only(root: str, patterns: tuple[str, ...]) -> None:
    if not patterns:
        return
    for directory, _, names in os.walk(root):
        for name in names:
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, root)
            if any(fnmatch.fnmatchcase(rel, p) for p in patterns):
                mode = os.stat(path).st_mode
                os.chmod(path, mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


class FakeHostTree:
    """A fake machine's whole host tree (``sys``, ``proc`` and the host control files) in a
    directory of its own, kept until :meth:`close`; the host adapters run on it, as the
    simulator and the tests do. ``root`` is the directory to use (made, must be empty), else
    a temporary one."""

    def __init__(self, spec: MachineSpec, root: str | None = None) -> None:
        self.layout = resolve(spec, f"machine {spec.name}")
        self._temporary = root is None
        self.root = root or tempfile.mkdtemp(prefix=f"nrirp-host-{spec.name}-", dir=scratch_dir())
        self._cleanup = (
            weakref.finalize(self, shutil.rmtree, self.root, True) if self._temporary else None
        )
        write_sysfs(self.layout, self.sysfs_root)
        write_procfs(self.layout, self.procfs_root)
        write_host(self.layout, self.root)

    @property
    def sysfs_root(self) -> str:
        return os.path.join(self.root, "sys")

    @property
    def procfs_root(self) -> str:
        return os.path.join(self.root, "proc")

    @property
    def resctrl_root(self) -> str:
        return os.path.join(self.root, "sys", "fs", "resctrl")

    def close(self) -> None:
        """Remove a temporary tree (also done when the tree is collected, or at exit)."""
        if self._cleanup is not None:
            self._cleanup()

    def __enter__(self) -> FakeHostTree:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
