"""The DecisionLog port on Python logging: one structured line per decision or notice."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from nrirp.adapters.system.logs import FIELDS, ROWS
from nrirp.domain.ports.decisions import Decision, DecisionLog, Notice, Severity

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
    same lines, rendered in one pass and written at once. Other handlers get a record per
    decision. Below INFO nothing is rendered at all.
    """

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger(DECISIONS_LOGGER)

    def decision(self, decision: Decision) -> None:
        self.decision_batch((decision,))

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        log = self._log
        if not decisions or not log.isEnabledFor(logging.INFO):
            return
        rows = [_fields(decision) for decision in decisions]
        if len(rows) > 1 and _handlers_print_rows(log):
            self._emit({ROWS: rows})
            return
        for fields in rows:
            self._emit({FIELDS: fields})

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


def _fields(decision: Decision) -> dict[str, Any]:
    cpus, mems = decision.cpus, decision.mems
    fields: dict[str, Any] = {
        "operation": decision.operation,
        "container": decision.container,
        "container_id": decision.container_id,
        "pod": decision.pod,
        "namespace": decision.namespace,
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
