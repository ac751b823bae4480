"""The runtime controller: pending changes become the create-time adjustment or updates."""

from __future__ import annotations

import attrs

from nrirp.domain.control.controller import ControlContext
from nrirp.domain.model import (
    RUNTIME_CONTROLLER,
    Adjustment,
    Container,
    HostChange,
    PendingChanges,
    Update,
)


@attrs.frozen
class RuntimeFeatures:
    """What the runtime applies from a creation adjustment besides resources: the scheduling
    class and the I/O priority (NRI >= 0.11 and containerd >= 2.2.1). What it cannot carry
    goes to the host controller, which applies it to the container's tasks once they run."""

    scheduling: bool = True
    io_priority: bool = True


ALL_FEATURES = RuntimeFeatures()


class RuntimeController:
    """Delivers what the runtime can carry (NRI ContainerAdjustment / ContainerUpdate);
    ``features`` says what of a creation's scheduling class it carries (the NRI adapter sets
    it when the runtime connects)."""

    name = RUNTIME_CONTROLLER

    def __init__(self, features: RuntimeFeatures = ALL_FEATURES) -> None:
        self.features = features

    def pre_create(self, ctx: ControlContext, container: Container) -> bool:
        pending = container.pending
        scheduling, io = pending.scheduling, pending.io_priority
        features = self.features
        host = HostChange(
            scheduling=None if features.scheduling else scheduling,
            io_priority=None if features.io_priority else io,
        )
        if not host.is_empty():
            ctx.cache.set_host_change(container.id, host)  # after the container starts
            scheduling = scheduling if features.scheduling else None
            io = io if features.io_priority else None
        ctx.set_adjustment(
            Adjustment(
                container_id=container.id,
                resources=pending.resources,
                annotations=pending.annotations,
                env=pending.env,
                mounts=pending.mounts,
                scheduling=scheduling,
                io_priority=io,
            )
        )
        return True

    def post_stop(self, ctx: ControlContext, container: Container) -> bool:
        return True  # nothing to deliver to a stopped container

    _plain: PendingChanges | None = None
    """The last pending changes seen that were resources alone, for the runtime (the moved
    containers of a pool share theirs: the checks below run once for all of them)."""

    def _update(self, ctx: ControlContext, container: Container) -> bool:
        pending = container.pending
        if pending is self._plain:
            if container.state.holds_resources:
                ctx.add_update(Update(container.id, pending.resources))
            return True
        if RUNTIME_CONTROLLER not in pending.controllers:
            return True
        if not container.state.holds_resources:
            return True  # stopped or gone: an update would only fail
        plain = True
        if pending.annotations or pending.env or pending.mounts:
            plain = False
            ctx.notice(
                self.name,
                "annotations, env and mounts can only be set at creation; dropped",
                container.id,
            )
        if pending.scheduling is not None or pending.io_priority is not None:
            plain = False
            ctx.notice(
                self.name,
                "scheduling and I/O priority of an existing container need the host controller",
                container.id,
            )
        if not pending.resources.is_empty():
            ctx.add_update(Update(container.id, pending.resources))
            if plain:
                self._plain = pending
        return True

    # the same delivery at every hook after creation (one call less per updated container)
    pre_start = _update
    post_start = _update
    post_update = _update
