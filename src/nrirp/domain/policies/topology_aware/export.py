"""What the policy shows: topology zones (NodeResourceTopology), metrics and a description."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.domain.policies.topology_aware.allocations import Allocations
from nrirp.domain.policies.topology_aware.grants import Grant
from nrirp.domain.policies.topology_aware.pools import Pool, PoolKind
from nrirp.domain.policy import MetricSample, TopologyZone, ZoneAttribute, ZoneResource

_ZONE_TYPES = {
    PoolKind.ROOT: "virtual node",
    PoolKind.SOCKET: "socket",
    PoolKind.DIE: "die",
    PoolKind.NUMA: "numa node",
    PoolKind.L3: "L3 cache",
}

_METRIC = "nri_policy_topologyaware_zone_"


def _cpu_numbers(alloc: Allocations, pool: Pool) -> tuple[int, int, int]:
    """(capacity, allocatable, available) mCPU of a pool.

    capacity: every CPU of the pool; allocatable: the CPUs not reserved; available: what a new
    container could still get (free shared capacity plus free isolated CPUs)."""
    supply = alloc.supply
    capacity = 1000 * len(pool.cpus)
    allocatable = capacity - 1000 * len(supply.reserved[pool.id])
    available = max(supply.allocatable_shared(pool), 0) + 1000 * len(supply.isolated[pool.id])
    return capacity, allocatable, available


def topology_zones(alloc: Allocations) -> list[TopologyZone]:
    zones = []
    supply = alloc.supply
    for pool in alloc.tree.pools:
        capacity, allocatable, available = _cpu_numbers(alloc, pool)
        mem_capacity = alloc.memory.capacity(pool.mems)
        mem_available = max(mem_capacity - alloc.memory.usage(pool.mems), 0)
        zones.append(
            TopologyZone(
                name=pool.name,
                type=_ZONE_TYPES[pool.kind],
                parent=pool.parent.name if pool.parent is not None else "",
                resources=(
                    ZoneResource("cpu", capacity, allocatable, available),
                    ZoneResource("memory", mem_capacity, mem_capacity, mem_available),
                ),
                attributes=(
                    ZoneAttribute("memory set", str(pool.mems)),
                    ZoneAttribute("shared cpuset", str(supply.sharable[pool.id])),
                    ZoneAttribute("reserved cpuset", str(supply.reserved[pool.id])),
                    ZoneAttribute("isolated cpuset", str(supply.isolated_all[pool.id])),
                ),
            )
        )
    return zones


def metrics(alloc: Allocations) -> list[MetricSample]:
    out: list[MetricSample] = []
    supply = alloc.supply
    for pool in alloc.tree.pools:
        labels = (("zone", pool.name),)
        capacity, _, _ = _cpu_numbers(alloc, pool)
        shared_capacity = 1000 * len(supply.sharable[pool.id])
        assigned = supply.shared_granted[pool.id]
        mem_capacity = alloc.memory.capacity(pool.mems)
        mem_assigned = alloc.memory.usage(pool.mems)
        containers = sum(supply.count[p.id] for p in pool.walk())
        shared_containers = sum(len(supply.members[p.id]) for p in pool.walk())
        values = {
            "cpu_capacity": capacity,
            "cpu_shared_capacity": shared_capacity,
            "cpu_shared_assigned": assigned,
            "cpu_shared_available": max(supply.allocatable_shared(pool), 0),
            "mem_capacity": mem_capacity,
            "mem_assigned": mem_assigned,
            "mem_available": max(mem_capacity - mem_assigned, 0),
            "container_count": containers,
            "shared_container_count": shared_containers,
        }
        for name, value in values.items():
            out.append(MetricSample(_METRIC + name, float(value), labels))
    return out


def describe(alloc: Allocations) -> Mapping[str, Any]:
    supply = alloc.supply
    res = alloc.resources
    pools = []
    by_pool: dict[int, list[str]] = {}
    for cid, grant in alloc.grants.items():
        by_pool.setdefault(grant.pool.id, []).append(cid)
    for pool in alloc.tree.pools:
        pools.append(
            {
                "name": pool.name,
                "kind": pool.kind.value,
                "parent": pool.parent.name if pool.parent is not None else None,
                "cpus": str(pool.cpus),
                "mems": str(pool.mems),
                "shared": str(supply.sharable[pool.id]),
                "reserved": str(supply.reserved[pool.id]),
                "isolated": str(supply.isolated[pool.id]),
                "shared_granted_mcpu": supply.shared_granted[pool.id],
                "reserved_granted_mcpu": supply.reserved_granted[pool.id],
                "grants": {cid: _grant(alloc.grants[cid]) for cid in by_pool.get(pool.id, [])},
            }
        )
    return {
        "policy": "topology-aware",
        "available": str(res.available),
        "reserved": str(res.reserved),
        "isolated": str(res.isolated),
        "memory_limit": res.memory_limit,
        "pools": pools,
    }


def _grant(grant: Grant) -> dict[str, object]:
    """A grant as described, keyed by container id: the container's ``namespace``, ``pod``
    and ``container`` (its name; docs/core.md's vocabulary), then what it holds."""
    parts = grant.label.split("/", 2)
    if len(parts) == 3:
        namespace, pod, name = parts
    else:  # a container of no known pod: its label is its name (or id)
        namespace, pod, name = grant.namespace, "", grant.label
    return {"namespace": namespace, "pod": pod, "container": name} | grant.describe()
