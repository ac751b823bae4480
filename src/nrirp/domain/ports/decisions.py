"""Port: the decision log (one structured record per decision) and notices."""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from nrirp.domain.cpuset import CPUSet


@attrs.frozen
class Decision:
    """What the policy decided for one container, and why.

    The container is named as everywhere records name one (log lines, the simulator's JSON,
    ``docs/core.md``): ``namespace``, ``pod`` (the pod's name), ``container`` (its name) and
    ``container_id``.
    """

    operation: str
    container_id: str
    container: str
    pod: str
    namespace: str
    cpus: CPUSet | None
    mems: CPUSet | None
    reason: str
    ok: bool = True

    @property
    def container_name(self) -> str:
        """Former name of :attr:`container` (kept for readers written against it)."""
        return self.container

    @property
    def pod_name(self) -> str:
        """Former name of :attr:`pod` (kept for readers written against it)."""
        return self.pod


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
    """Sink for decisions and notices; the daemon logs one line per record.

    The resource manager hands over all decisions of an operation at once, when it commits,
    through :meth:`decision_batch`: an operation can decide for hundreds of containers (an
    exclusive container moves every shared container of its pool), and a sink can record them
    together for much less than one at a time. Implementations that subclass this protocol get
    a :meth:`decision_batch` that calls :meth:`decision` for each; a sink written before the
    method existed (only :meth:`decision` and :meth:`notice`) is still accepted: see
    :func:`batch_writer`.
    """

    def decision(self, decision: Decision) -> None: ...

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        """All decisions of one operation, in the order they were made."""
        for decision in decisions:
            self.decision(decision)

    def notice(self, notice: Notice) -> None: ...


class NullDecisionLog(DecisionLog):
    """Discards everything."""

    def decision(self, decision: Decision) -> None:
        pass

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        pass

    def notice(self, notice: Notice) -> None:
        pass


def batch_writer(log: DecisionLog) -> Callable[[Sequence[Decision]], None]:
    """How to hand ``log`` the decisions of an operation: its :meth:`~DecisionLog.decision_batch`,
    or one :meth:`~DecisionLog.decision` call per decision for a sink that predates the method
    (checked once, when the resource manager is built)."""
    batch = getattr(log, "decision_batch", None)
    if callable(batch):
        return batch  # type: ignore[no-any-return]
    decision = log.decision

    def one_by_one(decisions: Sequence[Decision]) -> None:
        for each in decisions:
            decision(each)

    return one_by_one
