"""The controller layer: enforcement of policy decisions after the policy has run."""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Sequence
from typing import Protocol

from nrirp.domain.cache import Cache
from nrirp.domain.model import Adjustment, Container, Update
from nrirp.domain.ports.decisions import Notice, Severity


class Hook(enum.Enum):
    """Points in a container's life where controllers act."""

    PRE_CREATE = "pre-create"
    PRE_START = "pre-start"
    POST_START = "post-start"
    POST_UPDATE = "post-update"
    POST_STOP = "post-stop"


class ControlContext:
    """Collects what controllers produce during one pipeline operation."""

    def __init__(self, operation: str, cache: Cache) -> None:
        self.operation = operation
        self.cache = cache
        self.adjustment: Adjustment | None = None
        self._updates: dict[str, Update] = {}
        self.notices: list[Notice] = []

    def set_adjustment(self, adjustment: Adjustment) -> None:
        self.adjustment = adjustment

    def add_update(self, update: Update) -> None:
        """Add an update; several for one container merge (later fields win)."""
        prior = self._updates.get(update.container_id)
        if prior is not None:
            update = Update(
                update.container_id,
                prior.resources.merged(update.resources),
                ignore_failure=prior.ignore_failure and update.ignore_failure,
            )
        self._updates[update.container_id] = update

    @property
    def updates(self) -> tuple[Update, ...]:
        return tuple(self._updates.values())

    def notice(self, source: str, message: str, container_id: str | None = None) -> None:
        self.notices.append(Notice(source, message, Severity.WARNING, container_id))


class Controller(Protocol):
    """Acts on pending changes in its domain. Every hook returns whether the container's
    pending changes for this controller are done (``False`` keeps them for a later hook)."""

    @property
    def name(self) -> str: ...

    def pre_create(self, ctx: ControlContext, container: Container) -> bool: ...

    def pre_start(self, ctx: ControlContext, container: Container) -> bool: ...

    def post_start(self, ctx: ControlContext, container: Container) -> bool: ...

    def post_update(self, ctx: ControlContext, container: Container) -> bool: ...

    def post_stop(self, ctx: ControlContext, container: Container) -> bool: ...


def invoke(controller: Controller, hook: Hook, ctx: ControlContext, container: Container) -> bool:
    """Call ``controller``'s method for ``hook``."""
    if hook is Hook.PRE_CREATE:
        return controller.pre_create(ctx, container)
    if hook is Hook.PRE_START:
        return controller.pre_start(ctx, container)
    if hook is Hook.POST_START:
        return controller.post_start(ctx, container)
    if hook is Hook.POST_STOP:
        return controller.post_stop(ctx, container)
    return controller.post_update(ctx, container)


class ControllerRegistry:
    """Controllers by name, in registration order (the order they act in)."""

    def __init__(self, controllers: Sequence[Controller] = ()) -> None:
        self._controllers: dict[str, Controller] = {}
        for controller in controllers:
            self.register(controller)

    def register(self, controller: Controller) -> None:
        if controller.name in self._controllers:
            raise ValueError(f"controller {controller.name!r} is already registered")
        self._controllers[controller.name] = controller

    def get(self, name: str) -> Controller | None:
        return self._controllers.get(name)

    def names(self) -> list[str]:
        return list(self._controllers)

    def __iter__(self) -> Iterator[Controller]:
        return iter(list(self._controllers.values()))


def enforce(
    registry: ControllerRegistry,
    ctx: ControlContext,
    subject: str | None = None,
    subject_hook: Hook | None = None,
    pending: Sequence[Container] | None = None,
) -> None:
    """Run the controller layer for one operation.

    The subject container (the one the operation is about) gets ``subject_hook`` from every
    controller; every other container with pending changes gets ``POST_UPDATE`` from each
    controller it is marked for. A controller that reports done has its mark cleared.
    ``pending`` is ``ctx.cache.pending_containers()`` when the caller has it already (it
    scans every container).
    """
    cache = ctx.cache
    if subject is not None and subject_hook is not None:
        ctr = cache.container(subject)
        if ctr is not None:
            for controller in registry:
                current = cache.require_container(subject)
                if invoke(controller, subject_hook, ctx, current):
                    cache.clear_pending(subject, controller.name)
    order = _order(registry)
    by_name = {controller.name: controller for controller in registry}
    for ctr in cache.pending_containers() if pending is None else pending:
        cid = ctr.id
        if cid == subject and subject_hook is not None:
            continue  # had its own hook; what is left is deferred on purpose
        controllers = ctr.pending.controllers
        names = sorted(controllers, key=order) if len(controllers) > 1 else controllers
        for name in names:
            marked = by_name.get(name)
            if marked is None:
                ctx.notice("control", f"no controller {name!r} to deliver changes", cid)
                cache.clear_pending(cid, name)
                continue
            current = cache.require_container(cid)
            if marked.post_update(ctx, current):
                cache.clear_pending(cid, name)


def _order(registry: ControllerRegistry) -> Callable[[str], tuple[int, str]]:
    names = registry.names()

    def key(name: str) -> tuple[int, str]:
        return (names.index(name) if name in names else len(names), name)

    return key
