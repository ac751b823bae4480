"""The CPUs and memory the policy manages: ``availableResources`` and ``reservedResources``."""

from __future__ import annotations

import attrs

from nrirp.domain.config.resources import CPUResource
from nrirp.domain.config.topology_aware import TopologyAwarePolicySpec
from nrirp.domain.cpuallocator import CPUAllocationError, CPUAllocator
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.memalloc import human_bytes
from nrirp.domain.policy import PolicyError
from nrirp.domain.topology import Machine


@attrs.frozen
class ManagedResources:
    """``available``: every CPU the policy hands out; ``reserved`` (within it) for system
    containers; ``isolated``: kernel-isolated available CPUs that are not reserved;
    ``memory_limit``: bytes containers may be granted in total (``None``: no limit)."""

    available: CPUSet
    reserved: CPUSet
    isolated: CPUSet
    memory_limit: int | None


def _whole_cpus(amount_milli: int) -> int:
    return -(-amount_milli // 1000)


def resolve_resources(
    machine: Machine, spec: TopologyAwarePolicySpec, allocator: CPUAllocator
) -> ManagedResources:
    """Apply the config to the machine; raises :class:`PolicyError` naming what does not fit."""
    online = machine.online
    available = _available_cpus(online, spec.available_resources.cpu, allocator)
    if not available:
        raise PolicyError("availableResources.cpu leaves no CPU to manage")
    reserved = _reserved_cpus(machine, available, spec.reserved_resources.cpu, allocator)
    isolated = (machine.isolated & available) - reserved
    return ManagedResources(available, reserved, isolated, _memory_limit(machine, spec))


def _memory_limit(machine: Machine, spec: TopologyAwarePolicySpec) -> int | None:
    """Bytes containers may be granted in total; refuses a config that leaves none."""
    total = sum(n.memory_bytes for n in machine.nodes.values())
    given, kept = spec.available_resources.memory, spec.reserved_resources.memory
    if given is None and kept is None:
        return None
    limit = total if given is None else min(total, given.int_value())
    if given is not None and limit <= 0:
        raise PolicyError(
            f"availableResources.memory {given} leaves no memory for containers "
            f"(leave it out for all of the machine's {human_bytes(total)})"
        )
    if kept is not None:
        of = (
            f"the machine's {human_bytes(total)}"
            if given is None or limit == total
            else f"availableResources.memory {given}"
        )
        if kept.int_value() >= limit:
            raise PolicyError(
                f"reservedResources.memory {kept} leaves no memory for containers (of {of})"
            )
        limit -= kept.int_value()
    return limit


def _available_cpus(online: CPUSet, cpu: CPUResource | None, allocator: CPUAllocator) -> CPUSet:
    if cpu is None:
        return online
    if cpu.cpuset is not None:
        if cpu.exclude:
            return online - cpu.cpuset
        missing = cpu.cpuset - online
        if missing:
            raise PolicyError(
                f"availableResources.cpu {cpu}: CPUs {missing} are not online (online: {online})"
            )
        return cpu.cpuset
    assert cpu.amount is not None
    count = _whole_cpus(cpu.amount.milli_value())
    try:
        return allocator.allocate(online, count)
    except CPUAllocationError as exc:
        raise PolicyError(f"availableResources.cpu {cpu}: {exc}") from None


def _reserved_cpus(
    machine: Machine, available: CPUSet, cpu: CPUResource | None, allocator: CPUAllocator
) -> CPUSet:
    if cpu is None:
        return CPUSet()
    if cpu.cpuset is not None:
        reserved = available - cpu.cpuset if cpu.exclude else cpu.cpuset
        outside = reserved - available
        if outside:
            raise PolicyError(
                f"reservedResources.cpu {cpu}: CPUs {outside} are not among the available "
                f"CPUs ({available})"
            )
        if reserved == available:
            raise PolicyError(
                f"reservedResources.cpu {cpu} reserves every available CPU ({available})"
            )
        return reserved
    assert cpu.amount is not None
    count = _whole_cpus(cpu.amount.milli_value())
    if count >= len(available):
        raise PolicyError(
            f"reservedResources.cpu {cpu} needs {count} CPUs, leaving none of the "
            f"{len(available)} available CPUs for other containers"
        )
    preferred = available - machine.isolated
    source = preferred if len(preferred) >= count else available
    try:
        return allocator.allocate(source, count)
    except CPUAllocationError as exc:
        raise PolicyError(f"reservedResources.cpu {cpu}: {exc}") from None
