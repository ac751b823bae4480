"""What kubelet asks for, as the NRI ``LinuxResources`` containerd hands its plugins.

The arithmetic (requests and limits, shares, quota, QoS, OOM score, cgroup names) is the
domain's, :mod:`nrirp.domain.model.kubelet`; this module only writes its result in protobuf.
"""

from __future__ import annotations

from nrirp.adapters.nri.gen import api_pb2
from nrirp.domain.model.kubelet import Resources, container_resources


def linux_resources(
    res: Resources, *, cpuset_cpus: str = "", cpuset_mems: str = ""
) -> api_pb2.LinuxResources:
    """The NRI ``LinuxResources`` of a container, as containerd builds them from what kubelet's
    ``calculateLinuxResources`` sends: shares always, period always, quota only with a CPU
    limit, memory limit only when limited (containerd drops zero values). The cpusets are the
    text CRI asked for ("" when not restricted)."""
    settings = container_resources(res)
    out = api_pb2.LinuxResources()
    cpu = out.cpu
    if settings.cpu_shares is not None:
        cpu.shares.value = settings.cpu_shares
    if settings.cpu_quota is not None:
        cpu.quota.value = settings.cpu_quota
    if settings.cpu_period is not None:
        cpu.period.value = settings.cpu_period
    cpu.cpus = cpuset_cpus
    cpu.mems = cpuset_mems
    if settings.memory_limit is not None:
        out.memory.limit.value = settings.memory_limit
    for page_size, limit in settings.hugepage_limits.items():
        out.hugepage_limits.add(page_size=page_size, limit=limit)
    return out
