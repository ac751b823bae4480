"""What a policy asks of the host as a whole, beyond each container's own settings."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol

import attrs

from nrirp.domain.config.enums import TurboDomain
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.hostcontrol.classes import ClassSettings
from nrirp.domain.hostcontrol.interrupts import InterruptPlan

_NO_CLASSES: Mapping[str, ClassSettings] = MappingProxyType({})
_NO_CPUS: Mapping[str, CPUSet] = MappingProxyType({})


@attrs.frozen
class HostAssignment:
    """The CPU classes and interrupt affinity a policy's placement calls for.

    ``cpu_classes``: class name -> the CPUs that carry it now (a CPU in no set has no class:
    the host's own settings); ``classes``: the configured classes by name;
    ``turbo_domain``: where ``turboPriority`` is arbitrated; ``interrupts``: the interrupt
    plan, ``None`` when the policy steers no interrupts. Equal assignments mean nothing to do,
    so a policy may build a new one per operation, or keep one while nothing changes (the
    cheaper comparison: the same object).
    """

    cpu_classes: Mapping[str, CPUSet] = attrs.field(default=_NO_CPUS)
    classes: Mapping[str, ClassSettings] = attrs.field(default=_NO_CLASSES)
    turbo_domain: TurboDomain = TurboDomain.PACKAGE
    interrupts: InterruptPlan | None = None


NO_ASSIGNMENT = HostAssignment()


class HostAssigning(Protocol):
    """A policy that places CPU classes and steers interrupts (the built-in ones do).

    The resource manager asks after every committed operation; the answer must be quick when
    nothing changed (return the same object)."""

    def host_assignment(self) -> HostAssignment: ...


class ResourceExporting(Protocol):
    """A policy that exports each container's allocation (``resources.sh``)."""

    def exported_resources(self, container_id: str) -> Mapping[str, str] | None:
        """``KEY: value`` pairs for the container, ``None`` when it has no allocation."""
        ...
