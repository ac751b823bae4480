"""What can go wrong between the node agent and the API server, independent of the client."""

from __future__ import annotations


class ClusterError(Exception):
    """A request to the API server failed."""


class Unreachable(ClusterError):
    """The API server did not answer (connection refused or lost, timeout, TLS failure)."""


class ApiFailure(ClusterError):
    """The API server answered with an error status (a ``kind: Status`` body)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        super().__init__(f"{code} {reason}: {message}" if message else f"{code} {reason}")


class Gone(ApiFailure):
    """410: the resource version a watch started from is too old; list again."""


class NotFound(ApiFailure):
    """404: no such object, or no such resource type (its CRD is not installed)."""


class Conflict(ApiFailure):
    """409: a stale write or a server-side apply conflict."""


class Forbidden(ApiFailure):
    """403: the agent's service account may not do this (RBAC)."""

    def __init__(self, code: int, reason: str, message: str, *, verb: str, resource: str):
        self.verb = verb
        self.resource = resource
        super().__init__(code, reason, message)

    def explain(self) -> str:
        """One line for the log naming the verb and resource the RBAC rules must allow."""
        return (
            f"RBAC denied: the agent may not {self.verb} {self.resource} "
            "(grant it in the agent's RBAC: its ClusterRole for nodes and node resource "
            "topologies, its Role in the config namespace for configurations; see "
            f"docs/kubernetes.md): {self.message}"
        )


def failure(code: int, reason: str, message: str, *, verb: str, resource: str) -> ApiFailure:
    """The error class for an HTTP error status."""
    if code == 403:
        return Forbidden(code, reason, message, verb=verb, resource=resource)
    kinds: dict[int, type[ApiFailure]] = {404: NotFound, 409: Conflict, 410: Gone}
    return kinds.get(code, ApiFailure)(code, reason, message)
