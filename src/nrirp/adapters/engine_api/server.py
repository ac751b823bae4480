"""``EngineApiServer``: the engine API served by grpcio on a unix socket, mode 0600.

Only the socket's owner (root, on a node) can connect: the socket is created with umask 0177
and checked after binding. A socket file left behind by a dead server is replaced; one a live
server answers on is not (:class:`SocketInUseError`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import threading
from concurrent.futures import ThreadPoolExecutor

import grpc

from nrirp.adapters.engine_api.service import EngineService

DEFAULT_SOCKET = "/run/nrirp/engine.sock"
SOCKET_MODE = 0o600
_umask_lock = threading.Lock()


class EngineApiError(RuntimeError):
    """The engine API cannot be served; the message says why."""


class SocketInUseError(EngineApiError):
    """Another server answers on the socket."""


def _answers(path: str) -> bool:
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(0.5)
        probe.connect(path)
        return True
    except OSError:
        return False
    finally:
        probe.close()


def prepare_socket_path(path: str) -> None:
    """Create the socket's directory (0755) and remove a dead server's socket file."""
    directory = os.path.dirname(os.path.abspath(path))
    try:
        os.makedirs(directory, mode=0o755, exist_ok=True)
    except OSError as exc:
        raise EngineApiError(f"cannot create {directory}: {exc.strerror}") from None
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise EngineApiError(f"{path} exists and is not a socket; remove it or choose another")
    if _answers(path):
        raise SocketInUseError(f"another server answers on {path}")
    os.unlink(path)


class EngineApiServer:
    """Serves ``service`` on ``socket_path`` with ``workers`` threads."""

    def __init__(self, socket_path: str, service: EngineService, workers: int = 4) -> None:
        self.socket_path = socket_path
        self.service = service
        self._workers = workers
        service.max_waiting = max(0, workers - 1)  # a thread stays free for other calls
        self._server: grpc.Server | None = None

    def start(self) -> None:
        """Bind and serve (returns at once). Raises :class:`EngineApiError`."""
        prepare_socket_path(self.socket_path)
        server = grpc.server(
            ThreadPoolExecutor(max_workers=self._workers, thread_name_prefix="engine-api"),
            options=[("grpc.so_reuseport", 0)],
        )
        server.add_generic_rpc_handlers(self.service.handlers())
        with _umask_lock:
            old = os.umask(0o177)
            try:
                bound = server.add_insecure_port(f"unix:{self.socket_path}")
            except RuntimeError as exc:
                raise EngineApiError(f"cannot listen on {self.socket_path}: {exc}") from None
            finally:
                os.umask(old)
        if not bound:
            raise EngineApiError(f"cannot listen on {self.socket_path}")
        os.chmod(self.socket_path, SOCKET_MODE)
        server.start()
        self._server = server

    def stop(self, grace: float | None = 1.0) -> None:
        """Stop serving (calls in flight get ``grace`` seconds) and remove the socket."""
        server, self._server = self._server, None
        self.service.updates.close()
        if server is not None:
            server.stop(grace).wait()
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.socket_path)
