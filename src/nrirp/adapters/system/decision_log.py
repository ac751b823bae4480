"""The DecisionLog port on Python logging: one structured line per decision or notice."""

from __future__ import annotations

import logging

from nrirp.domain.ports.decisions import Decision, Notice, Severity

DECISIONS_LOGGER = "nrirp.decisions"

_LEVELS = {
    Severity.INFO: logging.INFO,
    Severity.WARNING: logging.WARNING,
    Severity.ERROR: logging.ERROR,
}


class LoggingDecisionLog:
    """Logs decisions at INFO (``decision``) and notices at their severity (``notice``).

    Every decision line carries ``operation, container, container_id, pod, namespace, cpus,
    mems, reason`` as structured fields (see :mod:`nrirp.adapters.system.logs`).
    """

    def __init__(self, logger: logging.Logger | None = None) -> None:
        self._log = logger or logging.getLogger(DECISIONS_LOGGER)

    def decision(self, decision: Decision) -> None:
        fields: dict[str, object] = {
            "operation": decision.operation,
            "container": decision.container_name,
            "container_id": decision.container_id,
            "pod": decision.pod_name,
            "namespace": decision.namespace,
            "cpus": "" if decision.cpus is None else str(decision.cpus),
            "mems": "" if decision.mems is None else str(decision.mems),
            "reason": decision.reason,
        }
        if not decision.ok:
            fields["ok"] = False
        self._log.info("decision", extra={"fields": fields})

    def notice(self, notice: Notice) -> None:
        fields: dict[str, object] = {"source": notice.source}
        if notice.container_id:
            fields["container_id"] = notice.container_id
        self._log.log(_LEVELS[notice.severity], "%s", notice.message, extra={"fields": fields})
