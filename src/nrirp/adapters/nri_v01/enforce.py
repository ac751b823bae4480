"""``CgroupEnforcer``: decided resources written into containers' cgroups.

NRI v0.1 cannot return adjustments: the runtime has created the container's cgroup (with what
CRI asked for) before it runs the plugin. So what the policy decides, for the container being
created and for every other container whose settings changed, is written to the cgroup files
through the cgroupfs host control (v1, v2, hybrid; cgroupfs and systemd cgroup paths), named
for the host's hierarchy: ``cpu.shares`` on v1 and ``cpu.weight`` on v2 (runc's conversion),
so that shares survive exactly where the host keeps them.
"""

from __future__ import annotations

from nrirp.adapters.cgroups import CgroupfsHostControl, CgroupVersion
from nrirp.domain.model import HostChange, LinuxResources
from nrirp.domain.ports.host_control import HostControlError, HostTarget

_NOT_ENFORCED = {
    "memory_swap": "memory swap limit",
    "rdt_class": "RDT class",
    "blockio_class": "block I/O class",
}


def shares_to_weight(shares: int) -> int:
    """runc's ``ConvertCPUSharesToCgroupV2Value``: shares 2..262144 -> weight 1..10000."""
    if shares == 0:
        return 0
    return 1 + ((shares - 2) * 9999) // 262142


def _limit(value: int) -> str:
    return "max" if value < 0 else str(value)


class CgroupEnforcer:
    """Writes :class:`LinuxResources` into a container's cgroup."""

    def __init__(self, host: CgroupfsHostControl) -> None:
        self.host = host

    @property
    def v2(self) -> bool:
        return self.host.layout.version is CgroupVersion.V2

    def settings(self, resources: LinuxResources) -> tuple[dict[str, str], list[str]]:
        """The cgroup files to write for ``resources`` on this host, and the fields that cannot
        be written through cgroupfs (named for the operator)."""
        v2 = self.v2
        out: dict[str, str] = {}
        skipped = [what for name, what in _NOT_ENFORCED.items() if getattr(resources, name)]
        r = resources
        # memory nodes before CPUs: a cpuset takes its CPUs whatever the order, but mems first
        # keeps a process from being moved off its node's memory for a moment
        if r.mems is not None:
            out["cpuset.mems"] = str(r.mems)
        if r.cpus is not None:
            out["cpuset.cpus"] = str(r.cpus)
        if r.cpu_shares is not None:
            if v2:
                out["cpu.weight"] = str(max(1, shares_to_weight(r.cpu_shares)))
            else:
                out["cpu.shares"] = str(r.cpu_shares)
        if r.cpu_quota is not None or r.cpu_period is not None:
            if v2:
                quota = "max" if r.cpu_quota is None or r.cpu_quota < 0 else str(r.cpu_quota)
                out["cpu.max"] = quota if r.cpu_period is None else f"{quota} {r.cpu_period}"
            else:
                if r.cpu_period is not None:
                    out["cpu.cfs_period_us"] = str(r.cpu_period)
                if r.cpu_quota is not None:
                    out["cpu.cfs_quota_us"] = str(r.cpu_quota)
        if r.cpu_realtime_runtime is not None or r.cpu_realtime_period is not None:
            if v2:
                skipped.append("realtime CPU runtime/period (no cgroup v2 equivalent)")
            else:
                if r.cpu_realtime_period is not None:
                    out["cpu.rt_period_us"] = str(r.cpu_realtime_period)
                if r.cpu_realtime_runtime is not None:
                    out["cpu.rt_runtime_us"] = str(r.cpu_realtime_runtime)
        if r.memory_limit is not None:
            out["memory.max"] = _limit(r.memory_limit)
        if r.memory_reservation is not None:
            out["memory.low"] = _limit(r.memory_reservation)
        for size, limit in r.hugepage_limits.items():
            out[f"hugetlb.{size}.max"] = _limit(limit)
        if r.pids_limit is not None:
            out["pids.max"] = "max" if r.pids_limit <= 0 else str(r.pids_limit)
        out.update(r.unified)
        return out, skipped

    def apply(self, target: HostTarget, resources: LinuxResources) -> list[str]:
        """Write ``resources`` for ``target``; returns the problems (empty when all was
        written). Settings that could be written are, whatever fails beside them."""
        cgroup, skipped = self.settings(resources)
        problems = [f"container {target.container_id}: {what} not enforced" for what in skipped]
        if cgroup:
            try:
                self.host.apply(target, HostChange(cgroup=cgroup))
            except HostControlError as exc:
                problems.append(str(exc))
        return problems
