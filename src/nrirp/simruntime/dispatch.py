"""Delivering one event to the plugins and collecting what they return.

Plugins are called one after another in index order, each only for events in its mask and each
under its own request timeout. A plugin that times out or loses its connection is dropped and the
event goes on as if it had returned nothing; a plugin's own error status stops the event there
and is returned (or raised) to the operation. Callers hold the runtime lock.
"""

from __future__ import annotations

import asyncio
import logging

from nrirp.adapters.nri.api import EVENT_NAMES
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.transport import StatusCode
from nrirp.simruntime.connections import PluginManager
from nrirp.simruntime.errors import (
    AdjustmentRejected,
    OperationFailed,
    PluginFailed,
)
from nrirp.simruntime.events import CONTAINER_NOTIFICATIONS, POD_NOTIFICATIONS
from nrirp.simruntime.merge import CreateMerge, UpdateCollector
from nrirp.simruntime.owners import OwnerTable
from nrirp.simruntime.plugin import CallError, PluginConnection

log = logging.getLogger("nrirp.nri.simruntime")


class Dispatcher:
    """Event delivery for one runtime."""

    def __init__(self, plugins: PluginManager) -> None:
        self.plugins = plugins
        self.options = plugins.options
        self.version = plugins.version

    def _deadline(self) -> float:
        return asyncio.get_running_loop().time() + self.options.request_timeout

    def _subscribers(self, event: int) -> list[PluginConnection]:
        return [p for p in self.plugins.active() if p.subscribed(event)]

    # ------------------------------------------------------------------ notifications

    async def notify(
        self, event: int, pod: api_pb2.PodSandbox, container: api_pb2.Container | None = None
    ) -> PluginFailed | None:
        """Deliver a non-adjusting event; return the first plugin error (delivery stops there,
        as in Go) or None."""
        for plugin in self._subscribers(event):
            try:
                await self._deliver(plugin, event, pod, container)
            except CallError as exc:
                if exc.fatal:
                    continue
                return PluginFailed(plugin.name, EVENT_NAMES[event], exc.code, exc.message)
        return None

    async def _deliver(
        self,
        plugin: PluginConnection,
        event: int,
        pod: api_pb2.PodSandbox,
        container: api_pb2.Container | None,
    ) -> None:
        name = EVENT_NAMES[event]
        deadline = self._deadline()
        if self.version.dedicated_event_rpcs and not plugin.state_change_fallback:
            if container is None:
                request = POD_NOTIFICATIONS[event](pod)
            else:
                request = CONTAINER_NOTIFICATIONS[event](pod, container)
            try:
                await plugin.call(
                    name,
                    request,
                    api_pb2.Empty,
                    deadline=deadline,
                    event=name,
                    fallback_on_unimplemented=True,
                )
                return
            except CallError as exc:
                if exc.fatal or exc.code != StatusCode.UNIMPLEMENTED:
                    raise
            plugin.state_change_fallback = True
            log.warning(
                "plugin %s does not implement %s: StateChange from now on (deprecated)",
                plugin.name,
                name,
            )
        change = api_pb2.StateChangeEvent(event=event, pod=pod)  # type: ignore[arg-type]
        if container is not None:
            change.container.CopyFrom(container)
        await plugin.call("StateChange", change, api_pb2.Empty, deadline=deadline, event=name)

    # ------------------------------------------------------------------ adjusting events

    async def create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container, pristine: api_pb2.Container
    ) -> CreateMerge:
        """CreateContainer to every subscriber, merged; validators after (v0.10+).

        ``container`` is adjusted in place. Raises :class:`~.errors.OperationFailed`.
        """
        owners = OwnerTable()
        merge = CreateMerge(container, self.version, owners)
        for plugin in self._subscribers(api_pb2.CREATE_CONTAINER):
            request = api_pb2.CreateContainerRequest(pod=pod, container=container)
            try:
                reply = await plugin.call(
                    "CreateContainer",
                    request,
                    api_pb2.CreateContainerResponse,
                    deadline=self._deadline(),
                    event="CreateContainer",
                )
            except CallError as exc:
                if exc.fatal:
                    continue
                raise PluginFailed(plugin.name, "CreateContainer", exc.code, exc.message) from None
            merge.apply(reply, plugin.name)
        if self.version.validates_adjustments:
            await self._validate(pod, pristine, merge, owners)
        return merge

    async def _validate(
        self,
        pod: api_pb2.PodSandbox,
        pristine: api_pb2.Container,
        merge: CreateMerge,
        owners: OwnerTable,
    ) -> None:
        validators = self._subscribers(api_pb2.VALIDATE_CONTAINER_ADJUSTMENT)
        if not validators:
            return
        request = api_pb2.ValidateContainerAdjustmentRequest(
            pod=pod,
            container=pristine,
            adjust=merge.adjustment,
            update=merge.updates.updates,
            owners=owners.to_pb(),
            plugins=[
                api_pb2.PluginInstance(name=p.base, index=p.index) for p in self.plugins.active()
            ],
        )
        outcomes = await asyncio.gather(*(self._validate_one(p, request) for p in validators))
        problems = [problem for problem in outcomes if problem is not None]
        if problems:
            raise AdjustmentRejected("; ".join(problems))

    async def _validate_one(
        self, plugin: PluginConnection, request: api_pb2.ValidateContainerAdjustmentRequest
    ) -> str | None:
        name = "ValidateContainerAdjustment"
        try:
            reply = await plugin.call(
                name,
                request,
                api_pb2.ValidateContainerAdjustmentResponse,
                deadline=self._deadline(),
                event=name,
            )
        except CallError as exc:
            return f"validator plugin {plugin.name} failed: {exc.message}"
        if reply.reject:
            return (
                f'validator "{plugin.name}" rejected container adjustment, reason: {reply.reason}'
            )
        return None

    async def update_container(
        self,
        pod: api_pb2.PodSandbox,
        container: api_pb2.Container,
        resources: api_pb2.LinuxResources,
    ) -> UpdateCollector:
        """UpdateContainer to every subscriber; the collector holds the final resources of the
        container (``request``) and the updates of others. Raises on plugin errors/conflicts."""
        collector = UpdateCollector(
            self.version, OwnerTable(), target=container.id, request=resources
        )
        for plugin in self._subscribers(api_pb2.UPDATE_CONTAINER):
            assert collector.request is not None
            request = api_pb2.UpdateContainerRequest(
                pod=pod, container=container, linux_resources=collector.request
            )
            try:
                reply = await plugin.call(
                    "UpdateContainer",
                    request,
                    api_pb2.UpdateContainerResponse,
                    deadline=self._deadline(),
                    event="UpdateContainer",
                )
            except CallError as exc:
                if exc.fatal:
                    continue
                raise PluginFailed(plugin.name, "UpdateContainer", exc.code, exc.message) from None
            collector.merge(reply.update, plugin.name)
        return collector

    async def stop_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> tuple[UpdateCollector, OperationFailed | None]:
        """StopContainer to every subscriber: the updates they ask for, and the error that
        stopped delivery (containerd only logs it)."""
        collector = UpdateCollector(self.version, OwnerTable())
        for plugin in self._subscribers(api_pb2.STOP_CONTAINER):
            request = api_pb2.StopContainerRequest(pod=pod, container=container)
            try:
                reply = await plugin.call(
                    "StopContainer",
                    request,
                    api_pb2.StopContainerResponse,
                    deadline=self._deadline(),
                    event="StopContainer",
                )
                collector.merge(reply.update, plugin.name)
            except CallError as exc:
                if exc.fatal:
                    continue
                error = PluginFailed(plugin.name, "StopContainer", exc.code, exc.message)
                return collector, error
            except OperationFailed as exc:  # a conflict between the plugins' updates
                return collector, exc
        return collector, None

    async def update_pod_sandbox(
        self,
        pod: api_pb2.PodSandbox,
        overhead: api_pb2.LinuxResources | None,
        resources: api_pb2.LinuxResources | None,
    ) -> None:
        """UpdatePodSandbox (v0.10+) to every subscriber; raises the first plugin error."""
        request = api_pb2.UpdatePodSandboxRequest(pod=pod)
        if overhead is not None:
            request.overhead_linux_resources.CopyFrom(overhead)
        if resources is not None:
            request.linux_resources.CopyFrom(resources)
        for plugin in self._subscribers(api_pb2.UPDATE_POD_SANDBOX):
            try:
                await plugin.call(
                    "UpdatePodSandbox",
                    request,
                    api_pb2.UpdatePodSandboxResponse,
                    deadline=self._deadline(),
                    event="UpdatePodSandbox",
                )
            except CallError as exc:
                if exc.fatal:
                    continue
                raise PluginFailed(plugin.name, "UpdatePodSandbox", exc.code, exc.message) from None
