"""The runtime controller: pending changes become the create-time adjustment or updates."""

from __future__ import annotations

from nrirp.domain.control.controller import ControlContext
from nrirp.domain.model import RUNTIME_CONTROLLER, Adjustment, Container, PendingChanges, Update


class RuntimeController:
    """Delivers what the runtime can carry (NRI ContainerAdjustment / ContainerUpdate)."""

    name = RUNTIME_CONTROLLER

    def pre_create(self, ctx: ControlContext, container: Container) -> bool:
        pending = container.pending
        ctx.set_adjustment(
            Adjustment(
                container_id=container.id,
                resources=pending.resources,
                annotations=pending.annotations,
                env=pending.env,
                mounts=pending.mounts,
                scheduling=pending.scheduling,
                io_priority=pending.io_priority,
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
