"""The CPU sets of the devices balloon types prefer to be close to or far from.

Virtual devices (``reference-balloons.md`` §5.2): ``reserved CPUs`` (the reserved cpuset),
``isolated CPUs`` (kernel isolcpus), ``performance cores`` and ``efficient cores`` (the CPU
allocator's high and low priority CPUs). ``loaded-<level>`` devices change with the balloons
and are computed by the engine. Other names are looked up through two hooks:

* a path (``/sys/devices/...``, or a device node the hint source knows) by ``locate``, backed by
  the resource manager's :class:`~nrirp.domain.ports.topology_hints.TopologyHintSource`;
* ``podresourceapi:<resource glob>`` by ``pod_resources``, against the container whose arrival
  creates the balloon (its devices as the kubelet's pod-resources API assigned them).

A device that resolves to no CPU is dropped (as the reference drops it), and reported once.
"""

from __future__ import annotations

from collections.abc import Callable

from nrirp.domain.config import CPUPriority
from nrirp.domain.config.balloons import PODRESOURCEAPI_PREFIX
from nrirp.domain.cpuallocator import CPUAllocator
from nrirp.domain.model import Container
from nrirp.domain.policies.balloons.catalog import (
    EFFICIENT_CORES,
    ISOLATED_CPUS,
    PERFORMANCE_CORES,
    RESERVED_CPUS,
    Catalog,
)

Locate = Callable[[str], tuple[int, ...]]
"""CPU sets (alternatives) local to a device path; empty when the path is unknown."""
PodResources = Callable[[str, Container], tuple[int, ...]]
"""CPU sets local to the devices of a container's pod resources matching a resource glob."""


def no_pod_resources(pattern: str, container: Container) -> tuple[int, ...]:
    """The hook used until pod-resources data reaches the policy: nothing resolves."""
    return ()


class Devices:
    """Resolves device names to CPU sets within the policy's allowed CPUs."""

    def __init__(
        self,
        catalog: Catalog,
        allocator: CPUAllocator,
        locate: Locate,
        pod_resources: PodResources = no_pod_resources,
    ) -> None:
        allowed = catalog.allowed
        priorities = allocator.priorities()
        self._allowed = allowed
        self._virtual = {
            RESERVED_CPUS: catalog.reserved,
            ISOLATED_CPUS: catalog.isolated,
            PERFORMANCE_CORES: priorities[CPUPriority.HIGH].bits & allowed,
            EFFICIENT_CORES: priorities[CPUPriority.LOW].bits & allowed,
        }
        self._locate = locate
        self._pod_resources = pod_resources
        self._paths: dict[str, tuple[int, ...]] = {}
        self.unresolved: dict[str, None] = {}
        """Devices that gave no CPU (for reporting; in the order they were met)."""

    def sets(self, name: str, container: Container | None = None) -> tuple[int, ...]:
        """The device's CPU sets (``()`` when it resolves to nothing)."""
        bits = self._virtual.get(name)
        if bits is not None:
            return (bits,) if bits else ()
        if name.startswith(PODRESOURCEAPI_PREFIX):
            if container is None:
                return ()
            found = self._pod_resources(name[len(PODRESOURCEAPI_PREFIX) :], container)
            return self._usable(name, found, remember=False)
        cached = self._paths.get(name)
        if cached is None:
            cached = self._paths[name] = self._usable(name, self._locate(name), remember=True)
        return cached

    def _usable(self, name: str, found: tuple[int, ...], *, remember: bool) -> tuple[int, ...]:
        out = tuple(dict.fromkeys(b & self._allowed for b in found if b & self._allowed))
        if not out and remember:
            self.unresolved[name] = None
        return out
