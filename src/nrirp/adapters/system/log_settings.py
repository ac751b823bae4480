"""The configuration's ``log`` block applied to the ``nrirp`` loggers.

``log.debug`` lists loggers to log at debug level: ``*`` is every ``nrirp`` logger, another
name is ``nrirp.<name>`` (a name that starts with ``nrirp`` is taken as it is): e.g.
``decisions``, ``resmgr``, ``nri.stub``, ``daemon``. ``log.source`` adds the logging call's
location to each line as the field ``src`` (``module:line``). Applying a new block undoes what
the previous one set.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from nrirp.adapters.system.logs import FIELDS, record_fields

ROOT = "nrirp"


def logger_name(name: str) -> str:
    """The logger a ``log.debug`` entry names."""
    if name == "*":
        return ROOT
    return name if name == ROOT or name.startswith(ROOT + ".") else f"{ROOT}.{name}"


class _SourceFilter(logging.Filter):
    """Adds ``src=module:line`` to records that come from a logging call."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.pathname:
            fields = dict(record_fields(record))
            fields.setdefault("src", f"{record.module}:{record.lineno}")
            setattr(record, FIELDS, fields)
        return True


class LogSettings:
    """Applies ``log.debug`` and ``log.source`` (:meth:`apply`), undoing the previous ones;
    ``base_level`` is the root level from the command line, which ``*`` lowers to debug."""

    def __init__(self, base_level: int | None = None) -> None:
        root = logging.getLogger(ROOT)
        self._base_level = root.level if base_level is None else base_level
        self._debugged: list[str] = []
        self._filter = _SourceFilter()
        self._source = False

    def apply(self, debug: Sequence[str], source: bool) -> None:
        for name in self._debugged:
            logger = logging.getLogger(name)
            logger.setLevel(self._base_level if name == ROOT else logging.NOTSET)
        self._debugged = []
        for entry in debug:
            name = logger_name(entry)
            logging.getLogger(name).setLevel(logging.DEBUG)
            self._debugged.append(name)
        if source != self._source:
            for handler in logging.getLogger(ROOT).handlers:
                if source:
                    handler.addFilter(self._filter)
                else:
                    handler.removeFilter(self._filter)
            self._source = source
