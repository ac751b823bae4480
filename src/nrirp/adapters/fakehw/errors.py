"""Errors of the fake-machine package."""


class MachineSpecError(ValueError):
    """A machine spec that cannot be used; the message lists every problem with its path."""
