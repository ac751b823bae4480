"""The policy's view after a step: its pools (from ``describe()``), which pool or balloon holds
each container's allocation, and each container's scheduling and I/O priority as adjusted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.adapters.nri.resmgr.translate import adjustment_from_pb
from nrirp.app.placement.description import grant_label
from nrirp.app.simulator.results import BalloonView, PoolView
from nrirp.domain.model import HostChange, IOPriority, Scheduling
from nrirp.simruntime import ContainerStatus


def pool_views(description: Mapping[str, Any]) -> tuple[PoolView, ...]:
    """The pools a policy's description lists (``describe()["pools"]``; none for policies
    without pools)."""
    found = description.get("pools")
    if not isinstance(found, list):
        return ()
    return tuple(_pool_view(p) for p in found if isinstance(p, Mapping))


def _pool_view(data: Mapping[str, Any]) -> PoolView:
    grants = data.get("grants")
    grants = grants if isinstance(grants, Mapping) else {}
    labels = {str(cid): grant_label(cid, g) for cid, g in grants.items()}
    parent = data.get("parent")
    return PoolView(
        name=str(data.get("name", "")),
        kind=str(data.get("kind", "")),
        parent=None if parent is None else str(parent),
        cpus=str(data.get("cpus", "")),
        shared=str(data.get("shared", "")),
        reserved=str(data.get("reserved", "")),
        isolated=str(data.get("isolated", "")),
        mems=str(data.get("mems", "")),
        containers=tuple(sorted(labels.values())),
        container_ids=tuple(labels),
    )


def holders(
    pools: tuple[PoolView, ...], balloons: tuple[BalloonView, ...]
) -> tuple[dict[str, str], dict[str, str]]:
    """Who holds each allocation: ``(pool or balloon by container id, balloon by
    namespace/pod/container)`` (balloons show their members by name only)."""
    by_id = {cid: pool.name for pool in pools for cid in pool.container_ids}
    by_label = {label: b.name for b in balloons for label in b.containers}
    return by_id, by_label


def adjusted_settings(
    status: ContainerStatus, host: HostChange | None
) -> tuple[Scheduling | None, IOPriority | None]:
    """The container's scheduling and I/O priority: what the host was told since (a change
    of a running container), else what its creation adjustment set."""
    created = adjustment_from_pb(status.id, status.adjustment)
    scheduling, io_priority = created.scheduling, created.io_priority
    if host is not None:
        scheduling = host.scheduling if host.scheduling is not None else scheduling
        io_priority = host.io_priority if host.io_priority is not None else io_priority
    return scheduling, io_priority
