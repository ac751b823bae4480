"""System adapters: the real clock, structured logging, the decision log, config file watching."""

from nrirp.adapters.system.clock import SystemClock
from nrirp.adapters.system.config_file import (
    ConfigFileError,
    ConfigFileWatcher,
    FileFingerprint,
    read_config_file,
)
from nrirp.adapters.system.decision_log import LoggingDecisionLog
from nrirp.adapters.system.logs import JsonFormatter, TextFormatter, configure_logging
from nrirp.adapters.system.timers import ThreadTimer, ThreadTimers, TimersClosedError

__all__ = [
    "ConfigFileError",
    "ConfigFileWatcher",
    "FileFingerprint",
    "JsonFormatter",
    "LoggingDecisionLog",
    "SystemClock",
    "TextFormatter",
    "ThreadTimer",
    "ThreadTimers",
    "TimersClosedError",
    "configure_logging",
    "read_config_file",
]
