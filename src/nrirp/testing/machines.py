"""Fake machines by catalogue name, built once per process."""

from __future__ import annotations

import functools

from nrirp.domain.topology import Machine


@functools.cache
def fake_machine(name: str) -> Machine:
    """The catalogue machine ``name`` (``nrirp hardware --list-machines``: ``box-16``,
    ``server-4s-144``, ``sparse-8s-4096``, ...) or the machine a spec file describes.
    Raises ``UnknownMachineError`` naming the known ones."""
    from nrirp.app.embed.machines import named_machine

    named = named_machine(name, None)
    assert named.machine is not None
    return named.machine


def machine_names() -> list[str]:
    """The catalogue's machine names."""
    from nrirp.adapters.fakehw import machine_names as names

    return names()
