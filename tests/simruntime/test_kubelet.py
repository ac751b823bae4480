"""kubelet's settings written as the NRI LinuxResources containerd hands its plugins."""

from __future__ import annotations

from nrirp.domain.model.kubelet import Resources
from nrirp.simruntime.kubelet import linux_resources

GIB = 1 << 30


def test_linux_resources_carry_what_containerd_sets() -> None:
    besteffort = linux_resources(Resources())
    assert besteffort.cpu.shares.value == 2 and besteffort.cpu.period.value == 100_000
    assert not besteffort.cpu.HasField("quota")
    assert not besteffort.memory.HasField("limit")
    limited = linux_resources(
        Resources.of(limits={"cpu": "500m", "memory": "1Gi", "hugepages-1Gi": "2Gi"}),
        cpuset_cpus="0-1",
    )
    assert (limited.cpu.shares.value, limited.cpu.quota.value) == (512, 50_000)
    assert limited.memory.limit.value == GIB
    assert limited.cpu.cpus == "0-1"
    assert [(h.page_size, h.limit) for h in limited.hugepage_limits] == [("1GB", 2 * GIB)]
