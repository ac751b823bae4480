"""What the enforcer writes for each resource field, on v1 and v2 hosts."""

from __future__ import annotations

from pathlib import Path

from nrirp.adapters.cgroups import CgroupfsHostControl
from nrirp.adapters.nri_v01.enforce import CgroupEnforcer, shares_to_weight
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import LinuxResources
from nrirp.domain.ports.host_control import HostTarget
from tests.support.nri_v01 import CgroupTree

ALL = LinuxResources(
    cpu_shares=1024,
    cpu_quota=50000,
    cpu_period=100000,
    cpus=CPUSet.parse("2-3"),
    mems=CPUSet.parse("0"),
    memory_limit=1 << 30,
    pids_limit=-1,
    rdt_class="gold",
)


def enforcer(tmp_path: Path, version: str) -> CgroupEnforcer:
    return CgroupEnforcer(CgroupfsHostControl(str(CgroupTree(tmp_path, version).root)))


def test_v1_names_keep_shares_exact(tmp_path: Path) -> None:
    settings, skipped = enforcer(tmp_path, "v1").settings(ALL)
    assert settings == {
        "cpuset.mems": "0",
        "cpuset.cpus": "2-3",
        "cpu.shares": "1024",
        "cpu.cfs_period_us": "100000",
        "cpu.cfs_quota_us": "50000",
        "memory.max": str(1 << 30),
        "pids.max": "max",
    }
    assert skipped == ["RDT class"]


def test_v2_names_convert_shares_like_runc(tmp_path: Path) -> None:
    settings, _ = enforcer(tmp_path, "v2").settings(ALL)
    assert settings["cpu.weight"] == str(shares_to_weight(1024)) == "39"
    assert settings["cpu.max"] == "50000 100000"
    assert shares_to_weight(2) == 1 and shares_to_weight(262144) == 10000
    unlimited, _ = enforcer(tmp_path / "x", "v2").settings(LinuxResources(cpu_quota=-1))
    assert unlimited == {"cpu.max": "max"}


def test_written_files_and_problems(tmp_path: Path) -> None:
    tree = CgroupTree(tmp_path, "v1")
    path = "/kubepods/podu1/c1"
    tree.add(path)
    problems = CgroupEnforcer(CgroupfsHostControl(str(tmp_path))).apply(
        HostTarget("c1", "p1", "/kubepods/podu1", path), ALL
    )
    assert tree.read(path, "cpuset.cpus") == "2-3"
    assert tree.read(path, "memory.limit_in_bytes") == str(1 << 30)
    assert tree.read(path, "cpu.cfs_quota_us") == "50000"
    assert problems == ["container c1: RDT class not enforced"]
    missing = CgroupEnforcer(CgroupfsHostControl(str(tmp_path))).apply(
        HostTarget("c2", "p1", "", "/kubepods/podu1/c2"), LinuxResources(cpus=CPUSet.of(1))
    )
    assert len(missing) == 1 and "does not exist" in missing[0]
