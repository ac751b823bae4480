"""The DecisionLog port on Python logging: one structured line per decision or notice."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from nrirp.adapters.system.logs import FIELDS
from nrirp.domain.ports.decisions import Decision, DecisionLog, Notice, Severity
from nrirp.domain.ports.documents import clip

DECISIONS_LOGGER = "nrirp.decisions"

_LEVELS = {
    Severity.INFO: logging.INFO,
    Severity.WARNING: logging.WARNING,
    Severity.ERROR: logging.ERROR,
}


class LoggingDecisionLog(DecisionLog):
    """Logs decisions at INFO (``decision``) and notices at their severity (``notice``).

    Every decision line carries ``operation, container, container_id, pod, namespace, cpus,
    mems, reason`` as structured fields (see :mod:`nrirp.adapters.system.logs`). The decisions
    of one operation are one log record with a row per decision when every handler it reaches
    prints rows (those :func:`~nrirp.adapters.system.logs.configure_logging` installs do): the
    same lines, rendered in one pass and written at once. That record is made with as little
    as can be on the request's path: the decisions become fields when it is formatted (on the
    daemon's log thread, ``log_in_background``). Other handlers get a record per decision, its
    fields in ``extra`` as usual. Below INFO nothing is rendered at all.
    """

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger(DECISIONS_LOGGER)

    def decision(self, decision: Decision) -> None:
        self.decision_batch((decision,))

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        log = self._log
        if not decisions or not log.isEnabledFor(logging.INFO):
            return
        if _handlers_print_rows(log):
            log.handle(_DecisionRecord(log.name, tuple(decisions)))
            return
        for decision in decisions:
            self._emit({FIELDS: _fields(decision)})

    def _emit(self, extra: dict[str, Any]) -> None:
        """``info("decision", extra=extra)`` without looking up the caller (the lines do not
        show it, and the look-up walks the stack for every record)."""
        log = self._log
        log.handle(log.makeRecord(log.name, logging.INFO, "", 0, "decision", (), None, None, extra))

    def notice(self, notice: Notice) -> None:
        fields: dict[str, object] = {"source": notice.source}
        if notice.container_id:
            fields["container_id"] = notice.container_id
        self._log.log(_LEVELS[notice.severity], "%s", notice.message, extra={FIELDS: fields})


_START = getattr(logging, "_startTime", time.time())


class _DecisionRecord(logging.LogRecord):
    """The record of an operation's decisions for handlers that print rows: made on the
    request's path with the time and the decisions alone (``LogRecord.__init__`` and the
    fields of each decision cost CreateContainer more under the Go harness than the few
    microseconds they take in a loop, ``docs/benchmarks.md``, *Log lines at the default
    level*); its ``fields`` (one decision) or ``field_rows`` (several) are made when read,
    by the formatter. What ``LogRecord.__init__`` would set is here as class attributes, not
    in the record's ``__dict__``: a formatter that says it ``renders_rows`` must read
    attributes (as ours do), not ``%(name)s``-style through ``__dict__``."""

    msg = "decision"
    args = ()
    levelno = logging.INFO
    levelname = "INFO"
    pathname = ""
    filename = ""
    module = ""
    lineno = 0
    funcName = ""
    exc_info = None
    exc_text = None
    stack_info = None
    thread = None
    threadName = None
    process = None
    processName = None
    taskName = None  # Python 3.12's LogRecord has it

    def __init__(self, name: str, decisions: tuple[Decision, ...]) -> None:  # no super(): lean
        created = time.time()
        self.name = name
        self.created = created
        self.msecs = int((created - int(created)) * 1000) + 0.0
        self.relativeCreated = (created - _START) * 1000
        self.decisions = decisions

    @property
    def fields(self) -> dict[str, Any] | None:
        decisions = self.decisions
        return _fields(decisions[0]) if len(decisions) == 1 else None

    @property
    def field_rows(self) -> list[dict[str, Any]] | None:
        decisions = self.decisions
        return [_fields(decision) for decision in decisions] if len(decisions) > 1 else None


def _fields(decision: Decision) -> dict[str, Any]:
    cpus, mems = decision.cpus, decision.mems
    fields: dict[str, Any] = {
        "operation": decision.operation,
        # a runtime's names cut as messages quote them (a hostile runtime's are unbounded)
        "container": clip(decision.container),
        "container_id": clip(decision.container_id),
        "pod": clip(decision.pod),
        "namespace": clip(decision.namespace),
        "cpus": "" if cpus is None else str(cpus),
        "mems": "" if mems is None else str(mems),
        "reason": decision.reason,
    }
    if not decision.ok:
        fields["ok"] = False
    return fields


def _handlers_print_rows(logger: logging.Logger) -> bool:
    """Whether every handler a record of ``logger`` reaches prints records with rows."""
    current: Any = logger
    while current is not None:
        for handler in current.handlers:
            if not getattr(handler.formatter, "renders_rows", False):
                return False
        if not current.propagate:
            break
        current = current.parent
    return True
