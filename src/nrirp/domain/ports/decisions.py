"""Port: the decision log (one structured record per decision) and notices."""

from __future__ import annotations

import enum
from typing import Protocol

import attrs

from nrirp.domain.cpuset import CPUSet


@attrs.frozen
class Decision:
    """What the policy decided for one container, and why."""

    operation: str
    container_id: str
    container_name: str
    pod_name: str
    namespace: str
    cpus: CPUSet | None
    mems: CPUSet | None
    reason: str
    ok: bool = True


class Severity(enum.Enum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


@attrs.frozen
class Notice:
    """Something worth a log line that is not a decision (bad annotation, failed save, ...)."""

    source: str
    message: str
    severity: Severity = Severity.WARNING
    container_id: str | None = None


class DecisionLog(Protocol):
    """Sink for decisions and notices; the daemon logs one line per record."""

    def decision(self, decision: Decision) -> None: ...

    def notice(self, notice: Notice) -> None: ...


class NullDecisionLog:
    """Discards everything."""

    def decision(self, decision: Decision) -> None:
        pass

    def notice(self, notice: Notice) -> None:
        pass
