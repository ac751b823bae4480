"""Helpers behind the pytest fixtures: a factory of containerd instances and a set of plugin
processes, both cleaning up after themselves and keeping their logs."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from .config import ContainerdOptions
from .containerd import Containerd
from .cri_proto import CriApi
from .image import ImageArchive
from .packages import RuntimeBinaries
from .plugins import PluginProcess

MAX_SOCKET_PATH = 100  # sun_path holds 108 bytes; leave room for containerd's own suffixes


def private_base() -> Path:
    """Where instances' private directories go: ``$NRIRP_E2E_TMP`` or /tmp (short paths, since
    unix socket paths are limited to 108 bytes)."""
    return Path(os.environ.get("NRIRP_E2E_TMP", "/tmp"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:80] or "instance"


class ContainerdFactory:
    """Creates started :class:`Containerd` instances and destroys them, keeping their logs."""

    def __init__(
        self,
        binaries: RuntimeBinaries,
        cri: CriApi,
        image: ImageArchive,
        logs_dir: Path,
        kind: type[Containerd] = Containerd,
    ) -> None:
        self.binaries = binaries
        self.kind = kind
        """The class of the instances (:class:`Containerd`, or a subclass for another version)."""
        self.cri = cri
        self.image = image
        self.logs_dir = logs_dir
        self.instances: dict[Containerd, str] = {}

    def create(
        self, label: str, options: ContainerdOptions | None = None, *, start: bool = True
    ) -> Containerd:
        """A new instance in a fresh private directory, started unless ``start=False``."""
        root = Path(tempfile.mkdtemp(prefix="nrirp-ctrd-", dir=private_base()))
        instance = self.kind(self.binaries, self.cri, self.image, root, options)
        if len(str(instance.layout.ttrpc_address)) > MAX_SOCKET_PATH:
            root.rmdir()
            raise ValueError(f"socket paths below {root} are too long; set NRIRP_E2E_TMP")
        self.instances[instance] = label
        if start:
            try:
                instance.start()
            except Exception:
                self.destroy(instance)
                raise
        return instance

    def logs_dir_for(self, instance: Containerd) -> Path:
        """A fresh directory for the instance's kept logs, named after its label."""
        base = self.logs_dir / _slug(self.instances.get(instance, instance.root.name))
        target, n = base, 1
        while target.exists():
            n += 1
            target = base.with_name(f"{base.name}~{n}")
        return target

    def destroy(self, instance: Containerd) -> list[str]:
        """Tear the instance down completely (see :meth:`Containerd.destroy`), keeping logs."""
        problems = instance.destroy(logs_to=self.logs_dir_for(instance))
        self.instances.pop(instance, None)
        return problems

    def destroy_all(self) -> list[str]:
        """Destroy every instance still alive (the session's safety net)."""
        problems = []
        for instance in list(self.instances):
            problems += self.destroy(instance)
        return problems


class PluginProcesses:
    """Plugin processes started by one test; all are stopped when the test ends."""

    def __init__(self, logs_dir: Path) -> None:
        self.logs_dir = logs_dir
        self.started: list[PluginProcess] = []

    def _log(self, name: str) -> Path:
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        return self.logs_dir / f"{_slug(name)}-{len(self.started)}.log"

    def start(
        self,
        argv: Sequence[str | Path],
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> PluginProcess:
        """Start ``argv`` with its output in a log file of this test."""
        args = [str(a) for a in argv]
        proc = PluginProcess(args, self._log(name or Path(args[0]).name), env=env).start()
        self.started.append(proc)
        return proc

    def python(
        self,
        module: str,
        args: Sequence[str] = (),
        *,
        name: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> PluginProcess:
        """Start ``python -m module args`` with the test's interpreter."""
        proc = PluginProcess.python_module(
            module, args, self._log(name or module.rsplit(".", 1)[-1]), env=env
        ).start()
        self.started.append(proc)
        return proc

    def stop_all(self) -> None:
        """Stop every process still running."""
        for proc in self.started:
            proc.stop()
