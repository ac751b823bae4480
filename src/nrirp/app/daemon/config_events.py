"""What follows when a configuration comes into force (at start, by a reload) or a reload
fails: the status report's source and generation, the metrics, the HTTP endpoints, the log
settings, and one warning per field that has no effect here (``domain/config/unapplied.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from nrirp.adapters.metrics import MetricsRecorder
from nrirp.adapters.system.log_settings import LogSettings
from nrirp.app.daemon.observability import Observability
from nrirp.app.daemon.status import ConfigState
from nrirp.domain.config import PolicyConfig
from nrirp.domain.config.unapplied import DAEMON, Environment, unapplied_fields

log = logging.getLogger("nrirp.daemon")


class ConfigEvents:
    """Called by the daemon at start (:meth:`started`) and after every reload
    (:meth:`reload_ended`), whatever the configuration's source (a file, a custom resource).
    ``on_reloaded`` (optional) runs after a reload was applied (the daemon checks there that
    the NRI events subscribed to still fit the configuration)."""

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

    def started(self, source: str, config: PolicyConfig | None) -> None:
        """``config`` (``None``: the policy's defaults) from ``source`` is in force."""
        self.state.loaded(source)
        self.recorder.config_loaded(self.state.generation)
        self._in_force(config, source)

    def reload_ended(
        self, trigger: str, result: str, config: PolicyConfig | None, detail: str = ""
    ) -> None:
        """A reload ended: ``applied`` (``config`` is in force), ``invalid`` or ``refused``
        (the old configuration stays; ``detail`` says why)."""
        self.state.reloaded(trigger, result, detail)
        self.recorder.config_reloaded(result, self.state.generation)
        if result == "applied":
            self._in_force(config, self.state.source)
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
