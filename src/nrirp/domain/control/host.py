"""The host controller: settings the runtime cannot carry go to the HostControl port."""

from __future__ import annotations

from nrirp.domain.control.controller import ControlContext
from nrirp.domain.model import HOST_CONTROLLER, Container, ContainerState
from nrirp.domain.ports.host_control import HostControl, HostControlError, HostTarget


class HostController:
    """Applies pending :class:`HostChange` settings once the container's process exists."""

    name = HOST_CONTROLLER

    def __init__(self, host: HostControl) -> None:
        self._host = host

    def pre_create(self, ctx: ControlContext, container: Container) -> bool:
        return not self._has_work(container)  # nothing exists on the host yet

    def pre_start(self, ctx: ControlContext, container: Container) -> bool:
        return not self._has_work(container)  # no process yet

    def post_start(self, ctx: ControlContext, container: Container) -> bool:
        return self._apply(ctx, container)

    def post_update(self, ctx: ControlContext, container: Container) -> bool:
        if container.state in (ContainerState.RUNNING, ContainerState.PAUSED):
            return self._apply(ctx, container)
        if container.state.holds_resources:
            return not self._has_work(container)  # wait for post-start
        return True  # stopped: drop

    def post_stop(self, ctx: ControlContext, container: Container) -> bool:
        try:
            self._host.forget(self._target(ctx, container))
        except HostControlError as exc:
            ctx.notice(self.name, str(exc), container.id)
        return True

    def _has_work(self, container: Container) -> bool:
        return HOST_CONTROLLER in container.pending.controllers

    def _apply(self, ctx: ControlContext, container: Container) -> bool:
        if not self._has_work(container):
            return True
        try:
            self._host.apply(self._target(ctx, container), container.pending.host)
        except HostControlError as exc:
            ctx.notice(self.name, str(exc), container.id)
        return True

    @staticmethod
    def _target(ctx: ControlContext, container: Container) -> HostTarget:
        pod = ctx.cache.pod(container.pod_id)
        return HostTarget(
            container_id=container.id,
            pod_id=container.pod_id,
            cgroup_parent=pod.cgroup_parent if pod else "",
            cgroups_path=container.cgroups_path,
            cpus=container.cpus,
            pid=container.pid,
        )
