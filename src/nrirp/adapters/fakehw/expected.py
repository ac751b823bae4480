"""The machine a layout describes, built directly (what discovery of its sysfs tree must give)."""

from __future__ import annotations

from nrirp.adapters.fakehw.layout import Layout
from nrirp.domain.topology import CPU, CacheGroup, Machine, NumaNode, classify_memory_types


def machine_of(layout: Layout) -> Machine:
    """The machine as the kernel would present it: offline CPUs left out everywhere."""
    online = layout.online
    node_cpus = {n.id: n.cpus & online for n in layout.nodes}
    types = classify_memory_types(
        {n.id: n.memory_bytes for n in layout.nodes},
        {n for n, cpus in node_cpus.items() if cpus},
        layout.declared_memory_types,
    )
    return Machine.build(
        cpus=[
            CPU(
                id=c.id,
                package_id=c.package,
                die_id=c.die,
                cluster_id=c.cluster,
                core_id=c.core,
                node_id=c.node,
                core_type=c.core_type,
                base_frequency_khz=c.frequency.base_khz,
                max_frequency_khz=c.frequency.max_khz,
                epp=c.frequency.epp,
            )
            for c in layout.cpus
            if c.id in online
        ],
        nodes=[
            NumaNode(
                id=n.id,
                cpus=node_cpus[n.id],
                memory_bytes=n.memory_bytes,
                memory_type=types[n.id],
                distances=dict(layout.distances[n.id]),
            )
            for n in layout.nodes
        ],
        caches=[
            CacheGroup(
                level=g.level, type=g.type, id=g.id, cpus=g.cpus & online, size_bytes=g.size_bytes
            )
            for g in layout.caches
            if g.cpus & online
        ],
        isolated=layout.isolated,
    )
