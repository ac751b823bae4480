"""Resource requirements recovered from a container's cgroup settings."""

from __future__ import annotations

import attrs

from nrirp.domain.model.kubelet import (
    QOSClass,
    burstable_memory_request,
    cpu_limit_millis,
    millis_from_shares,
)
from nrirp.domain.model.resources import LinuxResources


@attrs.frozen
class Requirements:
    """What a container asked for: CPU in millicores, memory in bytes; ``None`` = no limit."""

    cpu_request: int = 0
    cpu_limit: int | None = None
    memory_request: int = 0
    memory_limit: int | None = None


def estimate_requirements(
    resources: LinuxResources,
    qos: QOSClass,
    *,
    oom_score_adj: int | None = None,
    memory_capacity: int = 0,
) -> Requirements:
    """Requirements as the reference estimates them.

    CPU request from shares (exact inverse of kubelet), CPU limit from quota/period, memory
    limit from the memory limit. Memory request: the limit for Guaranteed, recovered from the OOM
    score adjustment for Burstable when it and the node's memory capacity are known, else 0.

    Remembered for the last few resources objects (by identity: the NRI adapter hands the very
    same object to every container of one wire form, hundreds in a Synchronize).
    """
    key = (id(resources), qos._value_, oom_score_adj, memory_capacity)
    known = _ESTIMATES.get(key)
    if known is not None and known[0] is resources:
        return known[1]
    estimated = _estimate(resources, qos, oom_score_adj, memory_capacity)
    if len(_ESTIMATES) >= 256:
        _ESTIMATES.clear()
    _ESTIMATES[key] = (resources, estimated)  # the object kept: its id is not reused meanwhile
    return estimated


_ESTIMATES: dict[tuple[int, str, int | None, int], tuple[LinuxResources, Requirements]] = {}


def _estimate(
    resources: LinuxResources, qos: QOSClass, oom_score_adj: int | None, memory_capacity: int
) -> Requirements:
    cpu_request = millis_from_shares(resources.cpu_shares) if resources.cpu_shares else 0
    cpu_limit = cpu_limit_millis(resources.cpu_quota, resources.cpu_period)
    memory_limit = (
        resources.memory_limit if resources.memory_limit and resources.memory_limit > 0 else None
    )
    memory_request = 0
    if qos is QOSClass.GUARANTEED and memory_limit is not None:
        memory_request = memory_limit
    elif qos is QOSClass.BURSTABLE and oom_score_adj is not None and memory_capacity > 0:
        memory_request = burstable_memory_request(oom_score_adj, memory_capacity)
        if memory_limit is not None:
            memory_request = min(memory_request, memory_limit)
    return Requirements(
        cpu_request=cpu_request,
        cpu_limit=cpu_limit,
        memory_request=memory_request,
        memory_limit=memory_limit,
    )
