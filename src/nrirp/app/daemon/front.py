"""What drives the daemon: the runtime over NRI (``nri_front.NriFront``: our plugin, its stub
and service) or a node agent over the engine API (``engine_api.EngineApiService``, with or
without NRI v0.1). The daemon's composition builds the one its mode needs and nothing of the
others; ``nrirp run`` starts, runs and stops it the same way in every mode, and its
:class:`~nrirp.app.daemon.health.ServingState` says when it is in service (readiness and the
status report's ``runtime`` section)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from nrirp.app.daemon.health import ServingState


class FrontStartError(Exception):
    """The front cannot start serving (e.g. the engine API's socket is in use)."""


class FrontRegistrationError(Exception):
    """A pre-launched NRI plugin could not register with the runtime."""


class DaemonFront(Protocol):
    """One mode's way of receiving what the resource manager handles."""

    @property
    def name(self) -> str:
        """What the status report calls it (``90-resource-manager``, ``engine API``)."""
        ...

    @property
    def state(self) -> ServingState:
        """Whether it is in service."""
        ...

    def start(self) -> None:
        """Bind what must be bound before the daemon serves (raises
        :class:`FrontStartError`)."""
        ...

    async def run(self) -> None:
        """Serve until :meth:`stop` (raises :class:`FrontRegistrationError`)."""
        ...

    def stop(self) -> None:
        """Make :meth:`run` return (from the event loop, e.g. a signal handler)."""
        ...

    def configuration_changed(self) -> None:
        """A reload changed the configuration in force (NRI: subscribe to other events if
        it needs them)."""
        ...
