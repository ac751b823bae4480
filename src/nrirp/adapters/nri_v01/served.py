"""The NRI v0.1 handler as the engine API serves it (``nrirp run --nri-v01``).

``invoke_v01`` answers the exec client's forwarded request; ``write`` is the engine API's
decision writer in that mode: what any API call decides (an agent's CreateContainer, a
Synchronize) is written into the containers' cgroups too.
"""

from __future__ import annotations

from collections.abc import Sequence

from nrirp.adapters.engine_api import translate as tr
from nrirp.adapters.engine_api.gen import engine_pb2 as pb
from nrirp.adapters.nri_v01.handler import V01Handler, V01Outcome
from nrirp.domain.model import Adjustment, Update


def outcome_to_pb(outcome: V01Outcome) -> pb.NriV01Reply:
    reply = pb.NriV01Reply(
        error=outcome.error,
        metadata=outcome.metadata,
        updates=[tr.update_to_pb(u) for u in outcome.updates],
    )
    if outcome.adjustment is not None:
        reply.adjustment.CopyFrom(tr.adjustment_to_pb(outcome.adjustment))
    return reply


class ServedV01:
    """``V01Invoker`` and ``DecisionWriter`` of the engine service, over one handler."""

    def __init__(self, handler: V01Handler) -> None:
        self.handler = handler

    def invoke_v01(self, request_json: bytes) -> pb.NriV01Reply:
        return outcome_to_pb(self.handler.invoke(request_json))

    def write(self, adjustment: Adjustment | None, updates: Sequence[Update]) -> None:
        own = [] if adjustment is None else [Update(adjustment.container_id, adjustment.resources)]
        self.handler.enforce([*own, *updates])
