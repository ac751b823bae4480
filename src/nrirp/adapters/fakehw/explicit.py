"""Resolving the explicit (core-by-core) form into CPU and node records."""

from __future__ import annotations

from nrirp.adapters.fakehw.records import CpuLayout, NodeLayout, Problems, check_memory
from nrirp.adapters.fakehw.spec import ExplicitTopology
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CoreType


def explicit_layout(
    t: ExplicitTopology, problems: Problems
) -> tuple[list[CpuLayout], list[NodeLayout]]:
    cpus: list[CpuLayout] = []
    nodes: list[NodeLayout] = []
    owner: dict[int, str] = {}
    node_paths: dict[int, str] = {}
    core_paths: dict[tuple[int, int], str] = {}
    if not t.nodes:
        problems.add("$.explicit.nodes", "at least one node is needed")
    for n_index, node in enumerate(t.nodes):
        npath = f"$.explicit.nodes[{n_index}]"
        if node.id in node_paths:
            problems.add(
                f"{npath}.id", f"node {node.id} is already defined at {node_paths[node.id]}"
            )
        node_paths[node.id] = npath
        for name in ("id", "package", "die"):
            if getattr(node, name) < 0:
                problems.add(f"{npath}.{name}", f"must not be negative, got {getattr(node, name)}")
        check_memory(node.memory, f"{npath}.memory", problems)
        if not node.cores:
            problems.add(f"{npath}.cores", "a CPU node needs at least one core")
        node_cpus = CPUSet()
        for c_index, core in enumerate(node.cores):
            cpath = f"{npath}.cores[{c_index}]"
            key = (node.package, core.id)
            if core.id < 0:
                problems.add(f"{cpath}.id", f"must not be negative, got {core.id}")
            if key in core_paths:
                problems.add(
                    f"{cpath}.id",
                    f"core {core.id} of package {node.package} is already defined at "
                    f"{core_paths[key]}",
                )
            core_paths[key] = cpath
            if not core.cpus:
                problems.add(f"{cpath}.cpus", "a core needs at least one CPU")
            for cpu in core.cpus:
                if cpu in owner:
                    problems.add(f"{cpath}.cpus", f"cpu {cpu} already belongs to {owner[cpu]}")
                owner[cpu] = cpath
            cluster = core.id if core.cluster is None else core.cluster
            if cluster < 0:
                problems.add(f"{cpath}.cluster", f"must not be negative, got {cluster}")
            default = t.efficient_frequency if core.type is CoreType.EFFICIENT else t.frequency
            freq = default if core.frequency is None else core.frequency
            for cpu in core.cpus:
                cpus.append(
                    CpuLayout(
                        cpu, node.package, node.die, cluster, core.id, node.id, core.type, freq
                    )
                )
            node_cpus |= core.cpus
        nodes.append(
            NodeLayout(
                id=node.id,
                cpus=node_cpus,
                memory_bytes=node.memory,
                package=node.package,
                die=node.die,
            )
        )
    clusters: dict[tuple[int, int], tuple[int, str]] = {}
    for record in cpus:
        where = clusters.setdefault(
            (record.package, record.cluster), (record.die, owner[record.id])
        )
        if where[0] != record.die:
            problems.add(
                owner[record.id] + ".cluster",
                f"cluster {record.cluster} of package {record.package} is on die {where[0]} "
                f"at {where[1]}, this core is on die {record.die}",
            )
    return cpus, nodes
