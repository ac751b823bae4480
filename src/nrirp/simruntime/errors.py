"""Errors raised by the simulated runtime's CRI-like API."""

from __future__ import annotations


class SimRuntimeError(Exception):
    """Base class of every error the simulated runtime raises."""


class NotFound(SimRuntimeError, LookupError):
    """No pod or container with the given id (or name) exists in the runtime's model."""


class InvalidState(SimRuntimeError):
    """The operation is not allowed in the object's current state (e.g. start a stopped one)."""


class InvalidRequest(SimRuntimeError, ValueError):
    """The request itself is malformed (bad quantities, duplicate names, bad identifiers)."""


class Unsupported(SimRuntimeError):
    """The emulated NRI version has no such operation (e.g. UpdatePodSandbox before v0.10)."""


class OperationFailed(SimRuntimeError):
    """A CRI-like operation failed because of NRI: a plugin error, a conflict, a rejection.

    ``plugin`` names the plugin at fault (``NN-name``) when there is a single one.
    """

    def __init__(self, message: str, *, plugin: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.plugin = plugin

    def __str__(self) -> str:
        return self.message


class PluginFailed(OperationFailed):
    """A plugin answered with an error status of its own; the operation fails with it."""

    def __init__(self, plugin: str, method: str, code: int, detail: str) -> None:
        super().__init__(
            f'plugin "{plugin}" failed to handle {method}: {detail} (code {code})', plugin=plugin
        )
        self.method = method
        self.code = code
        self.detail = detail


class AdjustmentConflict(OperationFailed):
    """Two plugins tried to set the same field of a container (Go's exact message)."""

    def __init__(self, plugin: str, other: str, subject: str) -> None:
        # Go formats the names with %q: always double quotes
        super().__init__(
            f'plugins "{plugin}" and "{other}" both tried to set {subject}', plugin=plugin
        )
        self.other = other
        self.subject = subject


class AdjustmentRejected(OperationFailed):
    """A validator plugin rejected (or failed to validate) the merged adjustment."""


class InvalidAdjustment(OperationFailed):
    """Plugins asked for something the container runtime cannot apply (e.g. a bad cpuset),
    or an update targeted the container being created."""


class PluginStartError(SimRuntimeError):
    """A pre-launched plugin could not be started, did not register or failed to configure."""
