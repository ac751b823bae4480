"""A decision log that remembers each container's last decision and passes every record on."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from nrirp.domain.ports.decisions import Decision, DecisionLog, Notice, batch_writer


class LastDecisions(DecisionLog):
    """Keeps the last :class:`Decision` per container id (:attr:`last`) and hands every
    decision and notice to ``inner``. Costs one dict store per decision; :meth:`forget_others`
    drops containers that are gone. One writer (the pipeline); readers on the same thread
    (the daemon's status report runs on the pipeline's event loop)."""

    def __init__(self, inner: DecisionLog) -> None:
        self._inner = inner
        self._inner_batch = batch_writer(inner)
        self._last: dict[str, Decision] = {}

    @property
    def last(self) -> Mapping[str, Decision]:
        return self._last

    def decision(self, decision: Decision) -> None:
        self._last[decision.container_id] = decision
        self._inner.decision(decision)

    def decision_batch(self, decisions: Sequence[Decision]) -> None:
        last = self._last
        for decision in decisions:
            last[decision.container_id] = decision
        self._inner_batch(decisions)

    def notice(self, notice: Notice) -> None:
        self._inner.notice(notice)

    def forget_others(self, keep: Collection[str]) -> None:
        """Forget the decisions of containers not in ``keep``."""
        for container_id in [c for c in self._last if c not in keep]:
            del self._last[container_id]
