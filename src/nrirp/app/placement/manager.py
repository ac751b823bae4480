"""The placement a running resource manager holds (an engine's, the daemon's): what the
policy decided for each container, and its pools or balloons."""

from __future__ import annotations

from nrirp.app.placement.description import groups_from_description, reserved_cpus
from nrirp.app.placement.model import PlacedContainer, Placement, with_groups_of
from nrirp.domain.pipeline import ResourceManager


def placement_of(manager: ResourceManager) -> Placement:
    """Where ``manager``'s policy put every container it holds (stopped ones left out)."""
    description = manager.describe()
    groups, by_id = groups_from_description(description)
    pods = {p.id: p for p in manager.pods()}
    placed = []
    for ctr in manager.containers():
        if not ctr.state.holds_resources:
            continue
        pod = pods.get(ctr.pod_id)
        qos = pod.qos_class.value if pod is not None and pod.qos_class is not None else ""
        placed.append(
            PlacedContainer(
                id=ctr.id,
                namespace=pod.namespace if pod is not None else "",
                pod=pod.name if pod is not None else ctr.pod_id,
                name=ctr.name or ctr.id,
                cpus=ctr.resources.cpus,
                mems=ctr.resources.mems,
                memory=ctr.resources.memory_limit,
                qos=qos,
            )
        )
    return Placement(
        machine=manager.machine,
        policy=manager.policy.name,
        groups=groups,
        containers=with_groups_of(placed, groups, by_id),
        reserved=reserved_cpus(description, groups),
    )
