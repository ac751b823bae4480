"""The plugin interface: a base class whose ``async def`` methods a plugin overrides.

The stub serves an event only if the plugin overrides its method; the subscription mask is the
set of overridden event methods (``configure`` may narrow it). Handlers take and return the
generated ``api_pb2`` messages. Raising from a handler fails the call with an error status
(UNKNOWN with the exception's message, or the status of a ``TtrpcError``); from
``validate_container_adjustment`` it rejects the adjustment instead.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping, Sequence

import attrs

from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.stub.errors import PluginDefinitionError

PodSandbox = api_pb2.PodSandbox
Container = api_pb2.Container
LinuxResources = api_pb2.LinuxResources
ContainerAdjustment = api_pb2.ContainerAdjustment
ContainerUpdate = api_pb2.ContainerUpdate

Updates = Iterable[api_pb2.ContainerUpdate] | None
"""What update-returning handlers give back: updates of other containers, or None."""
CreateResult = (
    api_pb2.ContainerAdjustment
    | tuple[api_pb2.ContainerAdjustment | None, Iterable[api_pb2.ContainerUpdate]]
    | api_pb2.CreateContainerResponse
    | None
)
"""What ``create_container`` gives back: an adjustment, ``(adjustment, updates)``, a complete
response, or None for no change."""


class Plugin:
    """Base class of NRI plugins. Override the ``async def`` methods for the events to handle.

    Methods that are not overridden are not subscribed to and, should the runtime call them
    anyway, answer with an empty response. A plugin that overrides no event method is refused.
    """

    after_reply: Callable[[], None] | None = None
    """Not an event: when set (before the stub is made), called after each reply to the
    runtime was handed to the connection, for work that need not keep the runtime waiting.
    Synchronous, quick, never raising; it runs on the event loop before the next request."""

    async def configure(self, request: api_pb2.ConfigureRequest) -> EventMask | int | None:
        """Configure the plugin (config text, runtime name/version, timeouts, NRI version).

        Return the events to subscribe to, or None / 0 for every event the plugin implements.
        Called again after each reconnect. Subscribing to an event without a handler fails.
        """
        return None

    async def synchronize(
        self, pods: Sequence[api_pb2.PodSandbox], containers: Sequence[api_pb2.Container]
    ) -> Updates:
        """The runtime's existing pods and containers (all chunks merged); may return updates.

        The whole synchronization, every chunk included, must finish within the runtime's
        request timeout (2 s by default): keep this fast and defer slow work.
        """
        return None

    async def shutdown(self) -> None:
        """The runtime is shutting down (current runtimes never send this; they just close)."""

    async def run_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        """A pod sandbox was started."""

    async def update_pod_sandbox(
        self,
        pod: api_pb2.PodSandbox,
        overhead: api_pb2.LinuxResources,
        resources: api_pb2.LinuxResources,
    ) -> None:
        """A pod sandbox's resources are being updated (NRI >= 0.10 runtimes)."""

    async def post_update_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        """A pod sandbox's resources were updated (NRI >= 0.10 runtimes)."""

    async def stop_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        """A pod sandbox was stopped."""

    async def remove_pod_sandbox(self, pod: api_pb2.PodSandbox) -> None:
        """A pod sandbox was removed."""

    async def create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> CreateResult:
        """A container is being created: return an adjustment and/or updates of others."""
        return None

    async def post_create_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        """A container was created."""

    async def start_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        """A container is being started."""

    async def post_start_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        """A container was started."""

    async def update_container(
        self,
        pod: api_pb2.PodSandbox,
        container: api_pb2.Container,
        resources: api_pb2.LinuxResources,
    ) -> Updates:
        """A container's resources are being updated to ``resources``; may return updates
        (one for this container supersedes the requested resources)."""
        return None

    async def post_update_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> None:
        """A container's resources were updated."""

    async def stop_container(
        self, pod: api_pb2.PodSandbox, container: api_pb2.Container
    ) -> Updates:
        """A container was stopped; may return updates of other containers."""
        return None

    async def remove_container(self, pod: api_pb2.PodSandbox, container: api_pb2.Container) -> None:
        """A container was removed."""

    async def validate_container_adjustment(
        self, request: api_pb2.ValidateContainerAdjustmentRequest
    ) -> None:
        """Validate the merged adjustment of a container being created (NRI >= 0.10 runtimes).

        Raise to reject: the runtime fails the creation with ``str(error)`` as the reason.
        """


EVENT_METHODS: Mapping[str, int] = {
    "run_pod_sandbox": api_pb2.RUN_POD_SANDBOX,
    "update_pod_sandbox": api_pb2.UPDATE_POD_SANDBOX,
    "post_update_pod_sandbox": api_pb2.POST_UPDATE_POD_SANDBOX,
    "stop_pod_sandbox": api_pb2.STOP_POD_SANDBOX,
    "remove_pod_sandbox": api_pb2.REMOVE_POD_SANDBOX,
    "create_container": api_pb2.CREATE_CONTAINER,
    "post_create_container": api_pb2.POST_CREATE_CONTAINER,
    "start_container": api_pb2.START_CONTAINER,
    "post_start_container": api_pb2.POST_START_CONTAINER,
    "update_container": api_pb2.UPDATE_CONTAINER,
    "post_update_container": api_pb2.POST_UPDATE_CONTAINER,
    "stop_container": api_pb2.STOP_CONTAINER,
    "remove_container": api_pb2.REMOVE_CONTAINER,
    "validate_container_adjustment": api_pb2.VALIDATE_CONTAINER_ADJUSTMENT,
}
"""Event handler method -> the ``api_pb2.Event`` it handles."""

REQUEST_METHODS = ("configure", "synchronize", "shutdown")
"""Handlers of requests that are not events (always served)."""


@attrs.frozen
class Handlers:
    """The handlers a plugin implements (bound methods by name) and the events they cover."""

    methods: Mapping[str, object]
    events: EventMask


def discover_handlers(plugin: object) -> Handlers:
    """Find the handler methods ``plugin`` implements.

    For :class:`Plugin` subclasses a method counts if it is overridden; for other objects, if it
    exists. Every handler must be ``async def``. Raises PluginDefinitionError if a handler is not
    a coroutine function or if no event handler is implemented.
    """
    found: dict[str, object] = {}
    events = EventMask(0)
    for name in (*REQUEST_METHODS, *EVENT_METHODS):
        if not _implements(plugin, name):
            continue
        method = getattr(plugin, name)
        if not inspect.iscoroutinefunction(method):
            raise PluginDefinitionError(
                f"{type(plugin).__name__}.{name} must be an 'async def' method"
            )
        found[name] = method
        event = EVENT_METHODS.get(name)
        if event is not None:
            events |= EventMask.of(event)
    if not events:
        names = ", ".join(EVENT_METHODS)
        raise PluginDefinitionError(
            f"plugin {type(plugin).__name__} implements no NRI event handler (one of: {names})"
        )
    return Handlers(found, events)


def _implements(plugin: object, name: str) -> bool:
    if name in getattr(plugin, "__dict__", ()):
        return True  # assigned on the instance
    attribute = getattr(type(plugin), name, None)
    if isinstance(plugin, Plugin):
        return attribute is not None and attribute is not getattr(Plugin, name)
    if attribute is not None:
        return True
    return callable(getattr(plugin, name, None))
