"""Errors the resource manager raises to its callers (the adapters)."""

from __future__ import annotations


class PipelineError(Exception):
    """Base class of resource manager errors."""


class NotStartedError(PipelineError):
    """An operation arrived before :meth:`ResourceManager.start` or after a failed start."""


class ReentrantCallError(PipelineError):
    """A pipeline operation was called from inside a running operation (use inject_event)."""


class StateRestoreError(PipelineError):
    """The saved state could not be restored; nothing was changed."""


class OperationFailedError(PipelineError):
    """The policy (or a controller) failed an operation; the cache is as it was before.

    ``reason`` is the policy's own message; ``str()`` gives the full sentence that adapters
    return to the runtime (e.g. to fail a container creation). ``internal`` tells a bug (an
    unexpected exception, the cause, worth a traceback) from an ordinary refusal (a container
    that does not fit: one line with the reason is the whole story).
    """

    def __init__(
        self, operation: str, subject: str, reason: str, *, internal: bool = False
    ) -> None:
        super().__init__(f"{operation} {subject}: {reason}")
        self.operation = operation
        self.subject = subject
        self.reason = reason
        self.internal = internal
