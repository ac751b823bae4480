"""Errors raised by the plugin stub."""

from __future__ import annotations


class StubError(Exception):
    """Base class of the stub's errors."""


class PluginDefinitionError(StubError):
    """The plugin object cannot be served: no handlers, a handler that is not ``async def``."""


class IdentityError(StubError):
    """The plugin's name or index is missing or invalid."""


class RegistrationError(StubError):
    """Connecting, registering or being configured by the runtime failed."""


class NotConnectedError(StubError):
    """The stub has no established connection to the runtime (not started, or it went down)."""


class UpdateFromHandlerError(StubError):
    """``await stub.update_containers()`` was attempted while an event handler is running.

    The runtime holds its lock while it waits for the handler's reply, and serves
    UpdateContainers only under that lock: awaiting the update from the handler would block the
    reply until the runtime's request timeout, and the runtime would then drop the plugin. Use
    ``stub.schedule_update_containers()``, which sends the request after the reply.
    """
