"""A private containerd 1.7 with NRI, started and torn down by the e2e harness.

Everything of an instance lives below one directory; the only thing containerd 1.7 puts elsewhere is
its shim sockets in ``/run/containerd/s`` (hard-coded), which teardown removes for its own shims.
Processes are only ever signalled by PID: containerd itself, the shims whose ``-address`` is this
instance's socket, and plugin processes this containerd started.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import grpc

from .cgroups import remove_cgroup_tree
from .config import ContainerdOptions, Layout, render_config
from .cri_proto import CriApi
from .image import ImageArchive, import_image
from .mounts import mounts_under, unmount_under
from .packages import RuntimeBinaries
from .plugins import executable_plugin_wrapper, python_plugin_wrapper
from .processes import cmdline, pid_alive, shims_of, terminate

SHIM_SOCKET_DIR = Path("/run/containerd/s")
K8S_NAMESPACE = "k8s.io"


class ContainerdError(RuntimeError):
    """containerd failed to start, answer or shut down; the message carries its log tail."""


@attrs.frozen
class PrelaunchedPlugin:
    """A plugin installed in ``plugin_path``; containerd starts it on its next start."""

    path: Path
    config_path: Path | None
    log_path: Path


def shim_socket(address: str | Path, namespace: str, shim_id: str) -> Path:
    """Where containerd 1.7 puts a shim's socket: ``/run/containerd/s/sha256(address/ns/id)``."""
    digest = hashlib.sha256(os.path.join(str(address), namespace, shim_id).encode()).hexdigest()
    return SHIM_SOCKET_DIR / digest


def _children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat_line = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat_line.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            found.append(int(entry.name))
    return found


class Containerd:
    """One containerd instance: config, process, CRI channel, plugins, teardown."""

    def __init__(
        self,
        binaries: RuntimeBinaries,
        cri: CriApi,
        image: ImageArchive,
        root: Path,
        options: ContainerdOptions | None = None,
    ) -> None:
        self.binaries = binaries
        self.cri = cri
        self.image = image
        self.layout = Layout(root)
        self.options = options or ContainerdOptions()
        self._proc: subprocess.Popen[bytes] | None = None
        self._channel: grpc.Channel | None = None
        self._image_imported = False
        self._cgroups: set[str] = set()
        self.starts = 0

    # --- paths -----------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The instance's private directory."""
        return self.layout.root

    @property
    def address(self) -> Path:
        """containerd's gRPC socket."""
        return self.layout.address

    @property
    def nri_socket(self) -> Path:
        """The NRI socket external plugins connect to."""
        return self.layout.nri_socket

    @property
    def plugin_dir(self) -> Path:
        """NRI ``plugin_path`` (pre-launched plugins)."""
        return self.layout.plugin_dir

    @property
    def plugin_config_dir(self) -> Path:
        """NRI ``plugin_config_path``."""
        return self.layout.plugin_config_dir

    @property
    def log_path(self) -> Path:
        """containerd's stdout+stderr (appended across restarts)."""
        return self.layout.log

    @property
    def config_path(self) -> Path:
        return self.layout.config

    # --- process ---------------------------------------------------------------------------
    @property
    def pid(self) -> int | None:
        """containerd's PID while it runs."""
        return self._proc.pid if self.running and self._proc is not None else None

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _env(self) -> dict[str, str]:
        path = [str(d) for d in self.binaries.bin_dirs]
        path += ["/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"]
        return {
            "PATH": ":".join(path),
            "HOME": str(Path.home()),
            "TMPDIR": str(self.layout.tmp),
            "LANG": "C.UTF-8",
        }

    def start(self, timeout: float = 30.0) -> None:
        """Write the config, start containerd in its own session and wait until CRI answers.

        The first start also imports the test image. A later start reuses the same state.
        """
        if self.running:
            raise ContainerdError("containerd is already running")
        for d in self.layout.directories():
            d.mkdir(parents=True, exist_ok=True)
        self.layout.config.write_text(self._render_config())
        for stale in (self.layout.address, self.layout.ttrpc_address, self.layout.nri_socket):
            stale.unlink(missing_ok=True)
        self.starts += 1
        with open(self.layout.log, "ab") as log:
            log.write(f"=== nrirp e2e harness: containerd start #{self.starts} ===\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                self._command(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self._env(),
                cwd=self.root,
                start_new_session=True,  # setsid: Ctrl-C at the terminal must not reach it
            )
        self._wait_ready(timeout)
        if not self._image_imported:
            import_image(self.binaries.ctr, self.layout.address, self.image, K8S_NAMESPACE)
            self._wait_image(timeout)
            self._image_imported = True

    def _render_config(self) -> str:
        """The config file's text (a subclass for another containerd writes its schema)."""
        return render_config(self.layout, self.binaries.runc, self.options)

    def _command(self) -> list[str]:
        """containerd's command line (a subclass may wrap it, e.g. in a mount namespace)."""
        return [str(self.binaries.containerd), "--config", str(self.layout.config)]

    def _fail(self, message: str) -> ContainerdError:
        return ContainerdError(f"{message}\n--- {self.log_path} (tail) ---\n{self.log_tail()}")

    def _wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last_error = ""
        while time.monotonic() < deadline:
            if self._proc is not None and self._proc.poll() is not None:
                raise self._fail(f"containerd exited with status {self._proc.returncode} at start")
            if not self._is_socket(self.layout.address):
                time.sleep(0.01)
                continue
            if self._channel is None:
                # dial only once the socket exists: a failed dial costs a 1 s gRPC backoff
                self._channel = grpc.insecure_channel(f"unix://{self.layout.address}")
            try:
                self.runtime().Version(self.cri.pb.VersionRequest(), timeout=1)
            except grpc.RpcError as exc:
                last_error = str(exc)
                self._channel.close()
                self._channel = None
                time.sleep(0.02)
                continue
            if not self.options.nri_enabled or self._is_socket(self.layout.nri_socket):
                return
            time.sleep(0.02)
        raise self._fail(
            f"containerd did not become ready within {timeout}s "
            f"(CRI error: {last_error or 'none'}, NRI socket present: "
            f"{self._is_socket(self.layout.nri_socket)})"
        )

    def _wait_image(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        request = self.cri.pb.ImageStatusRequest(image=self.cri.pb.ImageSpec(image=self.image.ref))
        while time.monotonic() < deadline:
            if self.images().ImageStatus(request, timeout=5).image.id:
                return
            time.sleep(0.05)
        raise self._fail(f"CRI does not see the imported image {self.image.ref}")

    @staticmethod
    def _is_socket(path: Path) -> bool:
        try:
            return stat.S_ISSOCK(path.stat().st_mode)
        except FileNotFoundError:
            return False

    def stop(self, timeout: float = 10.0) -> None:
        """Stop containerd: SIGTERM, then SIGKILL after ``timeout`` s (its PID only).

        Pods and shims keep running, as with a real runtime restart. Pre-launched plugin processes
        it started are ended too (they would exit on EOF anyway).
        """
        self._stop(signal_timeout=timeout)

    def kill(self) -> None:
        """SIGKILL containerd at once (a crash, for tests); pods and shims keep running."""
        self._stop(signal_timeout=0.0)

    def _stop(self, signal_timeout: float) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        if self._proc is None or self._proc.poll() is not None:
            return
        children = [c for c in _children(self._proc.pid) if not self._is_shim(c)]
        terminate(self._proc.pid, signal_timeout, self._proc)
        for child in children:  # plugin processes: give them a moment to see EOF and exit
            if pid_alive(child):
                terminate(child, 2.0)

    def _is_shim(self, pid: int) -> bool:
        argv = cmdline(pid)
        return bool(argv) and Path(argv[0]).name.startswith("containerd-shim")

    def restart(self, timeout: float = 30.0) -> None:
        """stop() then start() with the same state."""
        self.stop()
        self.start(timeout)

    # --- clients ---------------------------------------------------------------------------
    @property
    def channel(self) -> grpc.Channel:
        """The gRPC channel to the running containerd (renewed at every start)."""
        if self._channel is None:
            raise ContainerdError("containerd is not running")
        return self._channel

    def runtime(self) -> Any:
        """A CRI ``RuntimeServiceStub`` bound to the current channel."""
        return self.cri.grpc.RuntimeServiceStub(self.channel)

    def images(self) -> Any:
        """A CRI ``ImageServiceStub`` bound to the current channel."""
        return self.cri.grpc.ImageServiceStub(self.channel)

    # --- logs ------------------------------------------------------------------------------
    def log_text(self) -> str:
        """containerd's whole log so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, lines: int = 60) -> str:
        """The last ``lines`` lines of containerd's log."""
        return "\n".join(self.log_text().splitlines()[-lines:])

    # --- NRI plugins -----------------------------------------------------------------------
    def install_plugin(
        self, index: int | str, name: str, executable: str | bytes, config: str | None = None
    ) -> Path:
        """Write an executable ``NN-name`` into ``plugin_path`` (and ``NN-name.conf`` if given).

        It is started by containerd's next :meth:`start`. ``executable`` is the file's content.
        """
        idx = f"{int(index):02d}" if isinstance(index, int) else index
        if not (len(idx) == 2 and idx.isdigit()):
            raise ValueError(f"plugin index must be two digits, got {index!r}")
        if not name or "/" in name or any(c.isspace() for c in name):
            # one unparsable name aborts containerd's discovery of *all* plugins: refuse it here
            raise ValueError(f"plugin name must be non-empty, without '/' or spaces: {name!r}")
        path = self.plugin_dir / f"{idx}-{name}"
        path.parent.mkdir(parents=True, exist_ok=True)
        data = executable.encode() if isinstance(executable, str) else executable
        path.write_bytes(data)
        path.chmod(0o755)
        if config is not None:
            self.plugin_config_dir.mkdir(parents=True, exist_ok=True)
            (self.plugin_config_dir / f"{idx}-{name}.conf").write_text(config)
        return path

    def install_python_plugin(
        self,
        index: int | str,
        name: str,
        module: str,
        args: Sequence[str] = (),
        *,
        config: str | None = None,
        pythonpath: Sequence[Path] = (),
    ) -> PrelaunchedPlugin:
        """Install ``python -m module args`` as a pre-launched plugin; output goes to a log."""
        log = self.root / "plugin-logs" / f"{int(index):02d}-{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        path = self.install_plugin(
            index, name, python_plugin_wrapper(module, args, log, pythonpath=pythonpath), config
        )
        return PrelaunchedPlugin(path, self._config_of(path, config), log)

    def install_executable_plugin(
        self,
        index: int | str,
        name: str,
        executable: Path,
        args: Sequence[str] = (),
        *,
        config: str | None = None,
    ) -> PrelaunchedPlugin:
        """Install a plugin binary (with arguments) behind a logging wrapper script."""
        log = self.root / "plugin-logs" / f"{int(index):02d}-{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        path = self.install_plugin(
            index, name, executable_plugin_wrapper(executable, args, log), config
        )
        return PrelaunchedPlugin(path, self._config_of(path, config), log)

    def _config_of(self, plugin: Path, config: str | None) -> Path | None:
        return None if config is None else self.plugin_config_dir / f"{plugin.name}.conf"

    # --- teardown --------------------------------------------------------------------------
    def track_cgroup(self, cgroup_parent: str) -> None:
        """Remember a pod cgroup to remove at teardown (containerd never removes it)."""
        self._cgroups.add(cgroup_parent)

    def forget_cgroup(self, cgroup_parent: str) -> None:
        """The pod cgroup was removed already."""
        self._cgroups.discard(cgroup_parent)

    def leftover_shims(self) -> list[int]:
        """PIDs of shims still serving this instance."""
        return [s.pid for s in shims_of(self.layout.address)]

    def save_logs(self, target: Path) -> None:
        """Copy containerd's log and the pre-launched plugins' logs into ``target``."""
        target.mkdir(parents=True, exist_ok=True)
        if self.log_path.exists():
            shutil.copy2(self.log_path, target / "containerd.log")
        plugin_logs = self.root / "plugin-logs"
        if plugin_logs.is_dir():
            shutil.copytree(plugin_logs, target / "plugin-logs", dirs_exist_ok=True)

    def destroy(self, logs_to: Path | None = None) -> list[str]:
        """Remove every pod, stop containerd, clean up shims, mounts, cgroups and the directory.

        With ``logs_to``, the logs are saved there once containerd has stopped. Returns the
        problems met (empty when everything was cleaned); never raises for a cleanup step, so
        one failure does not leave the rest behind.
        """
        from .kubelet import remove_all_pods  # kubelet.py imports this module

        problems: list[str] = []
        if self.running:
            try:
                remove_all_pods(self.runtime(), self.cri.pb)
            except Exception as exc:  # keep cleaning: the fallback below handles the rest
                problems.append(f"CRI pod removal failed: {exc}")
        self.stop()
        if logs_to is not None and self.root.exists():
            try:
                self.save_logs(logs_to)
            except OSError as exc:
                problems.append(f"could not save logs to {logs_to}: {exc}")
        problems += self._force_remove_runc_containers()
        problems += self._kill_shims()
        left = unmount_under(self.root)
        problems += [f"still mounted: {m}" for m in left]
        for parent in sorted(self._cgroups):
            problems += remove_cgroup_tree(parent)
        self._cgroups.clear()
        if not mounts_under(self.root):
            shutil.rmtree(self.root, ignore_errors=True)
            if self.root.exists():
                problems.append(f"could not remove {self.root}")
        else:
            problems.append(f"kept {self.root}: mounts remain below it")
        return problems

    def _runc(self, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.binaries.runc), "--root", str(root), *args],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def _force_remove_runc_containers(self) -> list[str]:
        problems: list[str] = []
        if not self.layout.runc_root.is_dir():
            return problems
        for ns_root in sorted(p for p in self.layout.runc_root.iterdir() if p.is_dir()):
            listed = self._runc(ns_root, "list", "--format", "json")
            if listed.returncode != 0:
                problems.append(f"runc list in {ns_root} failed: {listed.stderr.strip()}")
                continue
            for container in json.loads(listed.stdout or "null") or []:
                deleted = self._runc(ns_root, "delete", "--force", container["id"])
                if deleted.returncode != 0:
                    problems.append(f"runc delete {container['id']}: {deleted.stderr.strip()}")
        return problems

    def _kill_shims(self) -> list[str]:
        problems = []
        for shim in shims_of(self.layout.address):
            terminate(shim.pid, 5.0)
            if pid_alive(shim.pid):
                problems.append(f"shim {shim.pid} survived SIGKILL")
            shim_socket(shim.address, shim.namespace, shim.id).unlink(missing_ok=True)
        return problems
