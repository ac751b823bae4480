"""Resolving the compact (count-based) form into CPU and node records."""

from __future__ import annotations

from nrirp.adapters.fakehw.records import CpuLayout, NodeLayout, Problems, check_memory
from nrirp.adapters.fakehw.spec import CompactTopology, Numbering
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.topology import CoreType

MAX_CPUS = 65536


def compact_layout(
    t: CompactTopology, problems: Problems
) -> tuple[list[CpuLayout], list[NodeLayout]]:
    for name in ("packages", "dies_per_package", "nodes_per_die", "cores_per_node"):
        if getattr(t, name) < 1:
            problems.add(f"$.compact.{name}", f"must be at least 1, got {getattr(t, name)}")
    for name in ("threads_per_core", "cores_per_cluster", "efficient_cores_per_cluster"):
        if getattr(t, name) < 1:
            problems.add(f"$.compact.{name}", f"must be at least 1, got {getattr(t, name)}")
    if t.efficient_cores_per_node < 0:
        problems.add("$.compact.efficient_cores_per_node", "must not be negative")
    check_memory(t.memory_per_node, "$.compact.memory_per_node", problems)
    total = t.packages * t.dies_per_package * t.nodes_per_die
    p_cores = total * t.cores_per_node
    e_cores = total * max(t.efficient_cores_per_node, 0)
    n_cpus = p_cores * t.threads_per_core + e_cores
    if problems.items:
        return [], []
    if n_cpus > MAX_CPUS:
        problems.add("$.compact", f"{n_cpus} CPUs is more than {MAX_CPUS} supported")
        return [], []
    ids: list[int] = list(range(n_cpus))
    if t.cpu_ids is not None:
        if len(t.cpu_ids) != n_cpus:
            problems.add(
                "$.compact.cpu_ids", f"has {len(t.cpu_ids)} ids but the machine has {n_cpus} CPUs"
            )
            return [], []
        ids = t.cpu_ids.ids()

    def cpu_id(dense: int) -> int:
        return ids[dense]

    cpus: list[CpuLayout] = []
    nodes: list[NodeLayout] = []
    g_p = g_e = 0  # global P-core / E-core index
    for pkg in range(t.packages):
        core_id = cluster_id = 0
        for die in range(t.dies_per_package):
            for local_node in range(t.nodes_per_die):
                node_id = (pkg * t.dies_per_package + die) * t.nodes_per_die + local_node
                node_cpus: list[int] = []
                for kind, count, per_cluster in (
                    (CoreType.PERFORMANCE, t.cores_per_node, t.cores_per_cluster),
                    (CoreType.EFFICIENT, t.efficient_cores_per_node, t.efficient_cores_per_cluster),
                ):
                    for i in range(count):
                        if i and i % per_cluster == 0:
                            cluster_id += 1
                        if kind is CoreType.PERFORMANCE:
                            threads = [
                                g_p * t.threads_per_core + th
                                if t.numbering is Numbering.SMT_ADJACENT
                                else th * p_cores + g_p
                                for th in range(t.threads_per_core)
                            ]
                            g_p += 1
                            freq = t.frequency
                        else:
                            threads = [p_cores * t.threads_per_core + g_e]
                            g_e += 1
                            freq = t.efficient_frequency
                        for dense in threads:
                            cpus.append(
                                CpuLayout(
                                    cpu_id(dense),
                                    pkg,
                                    die,
                                    cluster_id,
                                    core_id,
                                    node_id,
                                    kind,
                                    freq,
                                )
                            )
                            node_cpus.append(cpu_id(dense))
                        core_id += 1
                    if count:
                        cluster_id += 1
                nodes.append(
                    NodeLayout(
                        id=node_id,
                        cpus=CPUSet.from_ids(node_cpus),
                        memory_bytes=t.memory_per_node,
                        package=pkg,
                        die=die,
                    )
                )
    return cpus, nodes
