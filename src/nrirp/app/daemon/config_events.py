"""What follows when a configuration comes into force (at start, by a reload) or a reload
fails: the status report's source and generation, the metrics, the HTTP endpoints, the log
settings, the followers (the node agent's ``agent`` block), and one warning per field that has
no effect here (``domain/config/unapplied.py``). Every reload, from the config file or from a
custom resource, reaches it through the one reload path (``app/composition/reloads.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from nrirp.adapters.metrics import MetricsRecorder
from nrirp.adapters.system.log_settings import LogSettings
from nrirp.app.composition.reloads import ReloadOutcome, ReloadRequest
from nrirp.app.daemon.observability import Observability
from nrirp.app.daemon.status import ConfigState
from nrirp.domain.config import PolicyConfig
from nrirp.domain.config.unapplied import DAEMON, Environment, unapplied_fields

log = logging.getLogger("nrirp.daemon")


class ConfigEvents:
    """Called by the daemon at start (:meth:`started`) and, as a listener of the reload path,
    when every reload starts and ends (:meth:`reload_started`, :meth:`reload_ended`), whatever
    the configuration's source (a file, a custom resource). ``on_reloaded`` (optional) runs
    after a reload changed the configuration (the daemon checks there that the NRI events
    subscribed to still fit it); each of :attr:`followers` gets the configuration in force at
    start and after every change."""

    def __init__(
        self,
        *,
        state: ConfigState,
        recorder: MetricsRecorder,
        observability: Observability,
        log_settings: LogSettings,
        environment: Environment = DAEMON,
        on_reloaded: Callable[[], None] | None = None,
    ) -> None:
        self.state = state
        self.recorder = recorder
        self.observability = observability
        self.log_settings = log_settings
        self.environment = environment
        self.on_reloaded = on_reloaded
        self.followers: list[Callable[[PolicyConfig | None], None]] = []

    def started(self, source: str, config: PolicyConfig | None) -> None:
        """``config`` (``None``: the policy's defaults) from ``source`` is in force."""
        self.state.loaded(source)
        self.recorder.config_loaded(self.state.generation)
        self._in_force(config, source)

    def reload_started(self, request: ReloadRequest) -> None:
        self.state.reload_started(request.trigger, request.source)

    def reload_ended(self, request: ReloadRequest, outcome: ReloadOutcome) -> None:
        """A reload ended: ``applied`` (its configuration is in force, ``changed`` or in force
        already), ``invalid``, ``refused`` or ``failed`` (the old configuration stays; the
        outcome says why)."""
        self.state.reloaded(
            request.trigger,
            outcome.result,
            outcome.detail,
            source=request.source,
            source_generation=request.generation,
            changed=outcome.changed,
            problems=outcome.problems,
        )
        self.recorder.config_reloaded(outcome.result, self.state.generation)
        if outcome.applied and outcome.changed:
            self._in_force(outcome.config, self.state.source)
            if self.on_reloaded is not None:
                self.on_reloaded()

    def _in_force(self, config: PolicyConfig | None, source: str) -> None:
        if config is not None:
            self.log_settings.apply(config.log.debug, config.log.source)
            for field in unapplied_fields(config, self.environment):
                log.warning(
                    "configuration %s: %s",
                    source,
                    field,
                    extra={"fields": {"field": field.path, "value": field.value}},
                )
        else:
            self.log_settings.apply((), False)
        self.observability.apply(config)
        for follow in self.followers:
            follow(config)
