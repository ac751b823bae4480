"""The numbers the harness's kubelet puts into CRI ``LinuxContainerResources``.

The Kubernetes arithmetic itself (quantities and defaulting, ``GetPodQOS``, ``MilliCPUToShares``,
``milliCPUToQuota``, ``GetContainerOOMScoreAdjust``, pod totals, the cgroupfs pod cgroup) is not
repeated here: it is :mod:`nrirp.domain.model.kubelet`, the one the simulated runtime
uses, checked against kubelet's numbers in ``tests/domain/test_kubelet.py``. So
what the e2e tests send to the real containerd is exactly what the simulated runtime assumes a
kubelet sends. This module only packs those numbers the way CRI carries them.
"""

from __future__ import annotations

import attrs

from nrirp.domain.model.kubelet import (
    DEFAULT_CFS_PERIOD_US,
    QOSClass,
    Resources,
    oom_score_adj,
    pod_cgroup_parent,
    pod_qos,
    pod_totals,
    quota_from_millis,
    shares_from_millis,
)

__all__ = [
    "LinuxResourceValues",
    "QOSClass",
    "Resources",
    "linux_resources",
    "pod_cgroup_parent",
    "pod_qos",
    "pod_totals",
    "quota_from_millis",
    "shares_from_millis",
]


@attrs.frozen
class LinuxResourceValues:
    """The numbers kubelet puts into CRI ``LinuxContainerResources``."""

    cpu_period: int
    cpu_quota: int
    cpu_shares: int
    memory_limit_in_bytes: int
    oom_score_adj: int
    cpuset_cpus: str = ""
    cpuset_mems: str = ""


def linux_resources(
    res: Resources,
    qos: QOSClass,
    memory_capacity: int,
    *,
    cpuset_cpus: str = "",
    cpuset_mems: str = "",
) -> LinuxResourceValues:
    """kubelet's ``calculateLinuxResources`` plus the container's OOM score adjustment (0 for
    quota and memory limit means "none", as in CRI). Hugepage limits are not sent: the harness's
    containerd has no hugepages to give, so a spec asking for them is refused."""
    if res.hugepage_limits:
        raise ValueError(f"the e2e kubelet does not send hugepage limits: {res.hugepage_limits}")
    return LinuxResourceValues(
        cpu_period=DEFAULT_CFS_PERIOD_US,
        cpu_quota=quota_from_millis(res.cpu_limit) or 0,
        cpu_shares=shares_from_millis(res.cpu_request or 0),
        memory_limit_in_bytes=res.memory_limit or 0,
        oom_score_adj=oom_score_adj(qos, res.memory_request, memory_capacity),
        cpuset_cpus=cpuset_cpus,
        cpuset_mems=cpuset_mems,
    )
