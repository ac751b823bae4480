"""A machine spec from a discovered :class:`Machine`: the fake machine that discovers as it.

The spec is in the explicit form (every core with its CPUs, cluster, kind and frequencies),
with every cache instance listed with its id and size, the full distance matrix, the
memory-only nodes and the isolated CPUs. Written as a sysfs tree and discovered again
(:class:`~nrirp.adapters.fakehw.FakeHardwareDiscovery`), it gives the same ``Machine``, provided
the memory types are passed along too (sysfs has no file for them): :func:`spec_of_machine`
returns them beside the spec. ``nrirp run --record`` writes the machine this way so that
``nrirp simulate`` replays a recording on the node's own topology.

What a ``Machine`` does not hold is not in the spec either: offline CPUs, PCI devices (for
topology hints), and per-thread frequencies that differ within one core (the first thread's
are kept).
"""

from __future__ import annotations

from collections import defaultdict

from nrirp.adapters.fakehw.spec import (
    ByteSize,
    CacheInstanceSpec,
    CacheLevelSpec,
    CacheScope,
    CoreSpec,
    ExplicitTopology,
    FrequencySpec,
    MachineSpec,
    MemoryNodeSpec,
    NodeSpec,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CPU, CacheType, Machine, MemoryType


def spec_of_machine(
    machine: Machine, name: str = "recorded", description: str = ""
) -> tuple[MachineSpec, dict[int, MemoryType]]:
    """The explicit spec of ``machine`` and the memory type of every node (pass them to
    ``FakeHardwareDiscovery(spec, memory_types)``). Raises ``ValueError`` for a NUMA node
    spanning dies or packages (the spec has no way to say it)."""
    check_describable(machine)
    ids = sorted(machine.nodes)
    # one node is what a kernel without NUMA shows too (with every CPU, whatever the packages):
    # described as such, whatever the CPUs' packages and dies
    numa = len(ids) > 1
    nodes = []
    for node in machine.nodes.values():
        if not node.cpus:
            continue
        parts = _parts(machine, node.cpus)
        # without NUMA, one node per die: the spec's kernel without NUMA merges them into node 0
        for index, ((package, die), cores) in enumerate(sorted(parts.items())):
            nodes.append(
                NodeSpec(
                    id=node.id + index,
                    package=package,
                    die=die,
                    memory=ByteSize(node.memory_bytes if index == 0 else 0),
                    cores=tuple(
                        _core(core_id, threads)
                        for core_id, threads in sorted(cores.items(), key=lambda kv: kv[1][0].id)
                    ),
                )
            )
    memory_nodes = tuple(
        MemoryNodeSpec(memory=ByteSize(node.memory_bytes), id=node.id, type=node.memory_type)
        for node in machine.nodes.values()
        if not node.cpus
    )
    distances = tuple(
        tuple(machine.nodes[a].distances.get(b, 10 if a == b else 20) for b in ids) for a in ids
    )
    spec = MachineSpec(
        name=name,
        description=description,
        explicit=ExplicitTopology(nodes=tuple(nodes)),
        memory_nodes=memory_nodes,
        distances=distances if numa else None,
        caches=_caches(machine),
        isolated=machine.isolated,
        numa=numa,
    )
    return spec, {node.id: node.memory_type for node in machine.nodes.values()}


def check_describable(machine: Machine) -> None:
    """Raise ``ValueError`` when :func:`spec_of_machine` cannot describe ``machine`` (a NUMA
    node spanning dies or packages), without describing it."""
    across = machine.node_across_dies()
    if across is not None:
        raise ValueError(f"{across}: a machine spec cannot describe it")


def _parts(machine: Machine, cpus: CPUSet) -> dict[tuple[int, int], dict[int, list[CPU]]]:
    """The CPUs of ``cpus`` by (package, die), then by core."""
    parts: dict[tuple[int, int], dict[int, list[CPU]]] = defaultdict(dict)
    for cpu_id in cpus:
        cpu = machine.cpus[cpu_id]
        parts[(cpu.package_id, cpu.die_id)].setdefault(cpu.core_id, []).append(cpu)
    return parts


def _core(core_id: int, threads: list[CPU]) -> CoreSpec:
    first = threads[0]
    return CoreSpec(
        id=core_id,
        cpus=CPUSet.from_ids(c.id for c in threads),
        cluster=first.cluster_id,
        type=first.core_type,
        frequency=FrequencySpec(first.base_frequency_khz, first.max_frequency_khz, first.epp),
    )


def _caches(machine: Machine) -> tuple[CacheLevelSpec, ...]:
    levels: dict[tuple[int, CacheType], list[CacheInstanceSpec]] = defaultdict(list)
    for group in machine.caches:
        size = None if group.size_bytes is None else ByteSize(group.size_bytes)
        levels[(group.level, group.type)].append(
            CacheInstanceSpec(cpus=group.cpus, size=size, id=group.id)
        )
    return tuple(
        CacheLevelSpec(level=level, type=kind, shared_by=CacheScope.CORE, instances=tuple(items))
        for (level, kind), items in levels.items()
    )
