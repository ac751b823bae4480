"""Fake hardware discovery: a spec written as a sysfs tree and read by the real adapter."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping

from nrirp.adapters.fakehw.layout import resolve
from nrirp.adapters.fakehw.spec import MachineSpec
from nrirp.adapters.fakehw.writer import write_procfs, write_sysfs
from nrirp.adapters.sysfs import SysfsDiscovery
from nrirp.domain.ports.hardware import HardwareDiscoveryError
from nrirp.domain.topology import Machine, MemoryType


class FakeHardwareDiscovery:
    """HardwareDiscovery for a fake machine.

    :meth:`discover` writes the spec's sysfs tree (and procfs ``meminfo``) into a temporary
    directory and runs :class:`~nrirp.adapters.sysfs.SysfsDiscovery` on it, so fakes exercise
    the real adapter; later calls answer the same (immutable) machine while the memory types
    are the same (a big machine's tree takes seconds to write and read).
    Memory types the spec states are passed as configuration (sysfs has no such file), and
    ``memory_types`` adds or replaces overrides.
    """

    def __init__(
        self, spec: MachineSpec, memory_types: Mapping[int, MemoryType] | None = None
    ) -> None:
        self.spec = spec
        self.layout = resolve(spec, f"machine {spec.name}")
        self.memory_types = {**self.layout.declared_memory_types, **(memory_types or {})}
        self._discovered: tuple[frozenset[tuple[int, MemoryType]], Machine] | None = None

    def discover(self) -> Machine:
        types = frozenset(self.memory_types.items())
        found = self._discovered
        if found is not None and found[0] == types:
            return found[1]
        machine = self._discover()
        self._discovered = (types, machine)
        return machine

    def _discover(self) -> Machine:
        with tempfile.TemporaryDirectory(
            prefix=f"nrirp-{self.spec.name}-", dir=scratch_dir()
        ) as root:
            write_sysfs(self.layout, root + "/sys")
            write_procfs(self.layout, root + "/proc")
            try:
                return SysfsDiscovery(root + "/sys", self.memory_types, root + "/proc").discover()
            except HardwareDiscoveryError as exc:  # named by the machine, not the scratch tree
                raise HardwareDiscoveryError(self._named(str(exc), root)) from None

    def _named(self, message: str, root: str) -> str:
        """``message`` about the scratch tree at ``root``, told of the machine instead."""
        prefix = f"inconsistent hardware under {root}/sys"
        if message.startswith(prefix):
            return f"machine {self.spec.name}{message[len(prefix) :]}"
        return message.replace(root, f"(machine {self.spec.name})")


def scratch_dir() -> str | None:
    """A memory-backed directory for throw-away trees when there is one (None: the default).

    A big machine's tree is over 100k tiny files: on tmpfs that is about ten times faster to
    write and remove than on a journaling disk file system.
    """
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None
