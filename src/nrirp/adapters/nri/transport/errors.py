"""Status codes and the exceptions the transport raises."""

from __future__ import annotations

import enum


class StatusCode(enum.IntEnum):
    """gRPC status codes, as carried in ttRPC ``Response.status.code``."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16

    @classmethod
    def of(cls, code: int) -> StatusCode | int:
        """Return the enum member for ``code``, or the plain int if the peer sent an unknown one."""
        try:
            return cls(code)
        except ValueError:
            return code


class TtrpcError(Exception):
    """An RPC failed with a gRPC status.

    Raised by client calls for error responses (and for local failures such as a deadline or an
    oversized request); raised by server handlers to answer with a specific status.
    """

    def __init__(self, code: StatusCode | int, message: str) -> None:
        super().__init__(code, message)
        self.code: StatusCode | int = StatusCode.of(int(code))
        self.message = message

    def __str__(self) -> str:
        name = self.code.name if isinstance(self.code, StatusCode) else str(self.code)
        return f"{name}: {self.message}"


class RequestRefused(TtrpcError):
    """Raised by a server handler that declines a request for a reason the caller should read
    (e.g. a container that does not fit): answered with the status (UNKNOWN by default) and
    ``message``, and logged as one line. Any other exception from a handler is logged with its
    traceback: that is for unexpected errors."""

    def __init__(self, message: str, code: StatusCode | int = StatusCode.UNKNOWN) -> None:
        super().__init__(code, message)


class OversizedMessage(TtrpcError):
    """A message exceeds the 4 MiB ttRPC limit; it was refused before anything was written."""

    def __init__(self, length: int, limit: int) -> None:
        super().__init__(
            StatusCode.RESOURCE_EXHAUSTED,
            f"message length {length} exceed maximum message size of {limit}",
        )
        self.length = length
        self.limit = limit


class ConnectionClosed(TtrpcError):
    """The session is closed (locally, by the peer, or after a protocol error).

    Pending and future calls fail with this error; ``__cause__`` holds the underlying error,
    if any.
    """

    def __init__(self, reason: str = "ttrpc: closed") -> None:
        super().__init__(StatusCode.UNAVAILABLE, reason)

    def clone(self) -> ConnectionClosed:
        """A fresh instance with the same message and cause, to raise in another task."""
        twin = ConnectionClosed(self.message)
        twin.__cause__ = self.__cause__
        return twin


class ProtocolError(Exception):
    """The peer violated the mux framing (e.g. an absurd frame length); the session is dropped."""
