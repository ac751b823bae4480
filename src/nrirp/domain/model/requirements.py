"""Resource requirements recovered from a container's cgroup settings."""

from __future__ import annotations

import attrs

from nrirp.domain.model.qos import QOSClass
from nrirp.domain.model.resources import LinuxResources
from nrirp.domain.model.shares import cpu_limit_millis, millis_from_shares

# kubelet's OOM score adjustments (pkg/kubelet/qos/policy.go)
GUARANTEED_OOM_SCORE_ADJ = -997
BESTEFFORT_OOM_SCORE_ADJ = 1000
_MIN_BURSTABLE_OOM_SCORE_ADJ = 1000 + GUARANTEED_OOM_SCORE_ADJ  # 3
_MAX_BURSTABLE_OOM_SCORE_ADJ = BESTEFFORT_OOM_SCORE_ADJ - 1  # 999


@attrs.frozen
class Requirements:
    """What a container asked for: CPU in millicores, memory in bytes; ``None`` = no limit."""

    cpu_request: int = 0
    cpu_limit: int | None = None
    memory_request: int = 0
    memory_limit: int | None = None


def burstable_memory_request(oom_score_adj: int, memory_capacity: int) -> int:
    """Invert kubelet's Burstable formula ``adj = 1000 - 1000 * request // capacity``.

    kubelet clamps the score into 3..999, so a score at either end only bounds the request;
    the estimate is the smallest request that yields the observed score.
    """
    adj = min(max(oom_score_adj, _MIN_BURSTABLE_OOM_SCORE_ADJ), _MAX_BURSTABLE_OOM_SCORE_ADJ)
    if adj >= _MAX_BURSTABLE_OOM_SCORE_ADJ:
        return 0
    # smallest r with (1000 * r) // capacity == 1000 - adj
    target = 1000 - adj
    return -(-target * memory_capacity // 1000)


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
    """
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
