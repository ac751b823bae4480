"""The reference's policy-independent gauges, from the machine and the containers' cpusets:
``nri_policy_cpu_{allocation,container_count}`` per CPU and
``nri_policy_mem_node_{capacity,usage,container_count}`` per NUMA node."""

from __future__ import annotations

from collections.abc import Iterable

from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container
from nrirp.domain.policy import MetricSample
from nrirp.domain.topology import Machine

CPU_ALLOCATION = "nri_policy_cpu_allocation"
CPU_CONTAINERS = "nri_policy_cpu_container_count"
NODE_CAPACITY = "nri_policy_mem_node_capacity"
NODE_USAGE = "nri_policy_mem_node_usage"
NODE_CONTAINERS = "nri_policy_mem_node_container_count"

HELP = {
    CPU_ALLOCATION: "Milli-CPU requested from the CPU: each container's request spread evenly "
    "over its cpuset",
    CPU_CONTAINERS: "Containers whose cpuset holds the CPU",
    NODE_CAPACITY: "Memory of the NUMA node in bytes",
    NODE_USAGE: "Memory requested from the node in bytes: each container's request spread "
    "evenly over its memory nodes",
    NODE_CONTAINERS: "Containers whose memory nodes include the node",
}


def system_samples(machine: Machine, containers: Iterable[Container]) -> list[MetricSample]:
    """The samples for every online CPU and every NUMA node. Containers without a cpuset (or
    without memory nodes) count nowhere for it. Containers that share a cpuset are counted
    together, so the cost grows with the distinct cpusets, not the containers."""
    cpu_sets: dict[CPUSet, list[int]] = {}
    mem_sets: dict[CPUSet, list[int]] = {}
    for ctr in containers:
        req = ctr.requirements
        if ctr.cpus is not None and ctr.cpus:
            entry = cpu_sets.setdefault(ctr.cpus, [0, 0])
            entry[0] += req.cpu_request
            entry[1] += 1
        if ctr.mems is not None and ctr.mems:
            entry = mem_sets.setdefault(ctr.mems, [0, 0])
            entry[0] += req.memory_request
            entry[1] += 1
    allocation = dict.fromkeys(machine.online, 0.0)
    cpu_count = dict.fromkeys(machine.online, 0)
    for cpus, (request, count) in cpu_sets.items():
        share = request / len(cpus)
        for cpu in cpus:
            allocation[cpu] = allocation.get(cpu, 0.0) + share
            cpu_count[cpu] = cpu_count.get(cpu, 0) + count
    usage = dict.fromkeys(machine.nodes, 0.0)
    node_count = dict.fromkeys(machine.nodes, 0)
    for mems, (request, count) in mem_sets.items():
        share = request / len(mems)
        for node_id in mems:
            usage[node_id] = usage.get(node_id, 0.0) + share
            node_count[node_id] = node_count.get(node_id, 0) + count
    out = []
    for cpu in sorted(allocation):
        labels = (("cpu_id", str(cpu)),)
        out.append(MetricSample(CPU_ALLOCATION, allocation[cpu], labels, HELP[CPU_ALLOCATION]))
        out.append(MetricSample(CPU_CONTAINERS, cpu_count[cpu], labels, HELP[CPU_CONTAINERS]))
    for node_id in sorted(usage):
        labels = (("node_id", str(node_id)),)
        numa = machine.nodes.get(node_id)
        capacity = float(numa.memory_bytes) if numa is not None else 0.0
        out.append(MetricSample(NODE_CAPACITY, capacity, labels, HELP[NODE_CAPACITY]))
        out.append(MetricSample(NODE_USAGE, usage[node_id], labels, HELP[NODE_USAGE]))
        out.append(
            MetricSample(NODE_CONTAINERS, node_count[node_id], labels, HELP[NODE_CONTAINERS])
        )
    return out
