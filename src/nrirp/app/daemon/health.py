"""The daemon's health: is it alive (``/healthz``), is it ready (``/readyz``)?

* **alive**: the event loop that serves NRI runs: its heartbeat (:meth:`Health.beat`, every
  second) is younger than :data:`STALL_SECONDS`. A loop stuck in a handler fails it, and the
  kubelet restarts the container.
* **ready**: the policy started with a valid configuration and what drives the daemon is in
  service (its :class:`ServingState`): over NRI, a connection to the runtime is registered and
  the runtime has synchronized over it (a pre-launched plugin: registered; containerd sends
  such plugins no Synchronize), and losing the connection makes it not ready until the next
  one is synchronized; in the engine-API modes, the API's socket is served.

:class:`RuntimeConnection` follows the NRI connection (the plugin's observer and the stub's
close hook) and reports it to the metrics recorder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from nrirp.adapters.metrics import MetricsRecorder


class ServingState(Protocol):
    """Whether what drives the daemon (the NRI connection, the engine API) is in service."""

    def not_serving(self) -> tuple[str, ...]:
        """Why it is not in service (empty: it is)."""
        ...

    def serving(self) -> str:
        """What holds while it is in service (the readiness answer's reason)."""
        ...

    def report(self) -> dict[str, Any]:
        """The status report's ``runtime`` section: ``kind`` (``nri``, ``engine-api``,
        ``nri-v01``), ``connected``, ``synchronized``, ``runtime``, ``connections``,
        ``last_loss``."""
        ...


STALL_SECONDS = 30.0
"""A heartbeat older than this means the event loop is stuck."""


class RuntimeConnection:
    """The state of the connection to the runtime, from the plugin's and the stub's hooks.

    Every method runs on the event loop; readers on other threads see whole values."""

    def __init__(self, recorder: MetricsRecorder | None = None) -> None:
        self._recorder = recorder
        self.connected = False
        self.synchronized = False
        self.connections = 0
        self.runtime = ""
        """``name version`` of the runtime of the current (or last) connection."""
        self.last_loss = ""
        """Why the last connection went down ("" if none did)."""
        self.prelaunched = False
        """Set by the daemon: a pre-launched plugin is never synchronized (containerd 1.7)."""

    def configured(self, runtime: str, version: str) -> None:
        self.connected = True
        self.synchronized = False
        self.connections += 1
        self.runtime = f"{runtime} {version}".strip()
        if self._recorder is not None:
            self._recorder.runtime_connected()

    def synchronized_now(self) -> None:
        """The runtime synchronized over the current connection (the plugin's observer
        calls it ``synchronized``; here that name is the state)."""
        self.synchronized = True
        if self._recorder is not None:
            self._recorder.runtime_synchronized()

    def lost(self, reason: BaseException | None) -> None:
        """The stub's close hook: the connection went down (``None``: closed by us)."""
        self.connected = False
        self.synchronized = False
        self.last_loss = str(reason) if reason is not None else "closed by the daemon"
        if self._recorder is not None:
            self._recorder.runtime_disconnected()

    @property
    def in_service(self) -> bool:
        """Registered, and synchronized unless pre-launched."""
        return self.connected and (self.synchronized or self.prelaunched)

    def not_serving(self) -> tuple[str, ...]:
        if not self.connected:
            lost = f" (last loss: {self.last_loss})" if self.last_loss else ""
            return (f"runtime: not connected{lost}",)
        if not self.in_service:
            return ("runtime: registered, not synchronized yet",)
        return ()

    def serving(self) -> str:
        return f"runtime: {self.runtime or 'connected'}, synchronized"

    def report(self) -> dict[str, Any]:
        return {
            "kind": "nri",
            "connected": self.connected,
            "synchronized": self.synchronized,
            "runtime": self.runtime,
            "connections": self.connections,
            "last_loss": self.last_loss,
        }

    def observer(self) -> ConnectionHooks:
        """The plugin's observer (a ``ConnectionObserver``) for this state."""
        return ConnectionHooks(self)


@attrs.frozen
class ConnectionHooks:
    """Adapts :class:`RuntimeConnection` to the plugin's ``ConnectionObserver``."""

    connection: RuntimeConnection

    def configured(self, runtime: str, version: str) -> None:
        self.connection.configured(runtime, version)

    def synchronized(self) -> None:
        self.connection.synchronized_now()


@attrs.frozen
class Verdict:
    """An answer of a health endpoint: ``ok`` and the reasons (why not, or what holds)."""

    ok: bool
    reasons: tuple[str, ...]

    def text(self) -> str:
        return ("ok" if self.ok else "not ok") + "".join(f"\n{r}" for r in self.reasons) + "\n"


class Health:
    """Liveness and readiness of the daemon (see the module docstring). ``started``,
    ``config_valid`` and ``serving`` are read at every check."""

    def __init__(
        self,
        serving: ServingState,
        started: Callable[[], bool],
        config_valid: Callable[[], bool],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.serving = serving
        self._started = started
        self._config_valid = config_valid
        self._clock = clock
        self._last_beat = clock()

    def beat(self) -> None:
        """The event loop is running (called from it, every second)."""
        self._last_beat = self._clock()

    def liveness(self) -> Verdict:
        age = self._clock() - self._last_beat
        if age > STALL_SECONDS:
            return Verdict(False, (f"event loop: no heartbeat for {age:.0f} s",))
        return Verdict(True, ())

    def readiness(self) -> Verdict:
        problems = []
        if not self._started():
            problems.append("policy: not started")
        if not self._config_valid():
            problems.append("configuration: none valid in force")
        problems.extend(self.serving.not_serving())
        if problems:
            return Verdict(False, tuple(problems))
        return Verdict(True, (self.serving.serving(),))
