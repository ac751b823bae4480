"""What a policy may set on containers besides resources: the pipeline subscribes to the runtime
events those settings need, and to no others.

A policy says so with an optional method, ``container_settings() -> ContainerSettings``, for the
configuration in force (called under the pipeline's serialization after start and after each
reconfiguration). A policy without it is taken to use everything (:data:`ALL_SETTINGS`), so the
pipeline never misses an event a policy needs.
"""

from __future__ import annotations

from typing import Protocol

import attrs


@attrs.frozen
class ContainerSettings:
    """Per-container settings a policy may give besides cpus, mems, memory and CPU quota or
    shares, RDT and block I/O classes (what every runtime takes in a creation adjustment or
    an update)."""

    scheduling: bool = True
    """A scheduling class or I/O priority (``cache.set_scheduling``): carried by runtimes with
    NRI >= 0.11, applied to the container's tasks by the host controller otherwise."""
    host: bool = True
    """Settings only the host controller applies (``cache.set_host_change``: cgroup files,
    ...), once the container's process runs."""


ALL_SETTINGS = ContainerSettings()
NO_SETTINGS = ContainerSettings(scheduling=False, host=False)


class SettingsDeclaring(Protocol):
    """A policy that says which per-container settings its configuration uses."""

    def container_settings(self) -> ContainerSettings: ...


def container_settings(policy: object) -> ContainerSettings:
    """What ``policy`` may set, by its ``container_settings()`` (:data:`ALL_SETTINGS` when it
    has none)."""
    method = getattr(policy, "container_settings", None)
    if not callable(method):
        return ALL_SETTINGS
    settings = method()
    if not isinstance(settings, ContainerSettings):
        raise TypeError(
            f"{type(policy).__name__}.container_settings() returned {settings!r}, "
            "not a ContainerSettings"
        )
    return settings
