"""Errors of the fake-machine package."""

from nrirp.domain.ports.documents import DocumentError


class MachineSpecError(DocumentError):
    """A machine spec that cannot be used; the message lists the problems with their paths
    (the first few, and how many more)."""
