"""cgroupfs HostControl on tmp trees laid out like cgroup v1 (hybrid) and v2 hosts."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.cgroups import (
    CgroupfsHostControl,
    CgroupVersion,
    container_cgroup_path,
    detect_layout,
    expand_systemd_path,
    v1_writes,
)
from nrirp.adapters.cgroups.mapping import io_weight_to_blkio, weight_to_shares
from nrirp.domain.model import Container, HostChange, Scheduling, SchedulingPolicy
from nrirp.domain.ports.decisions import Severity
from nrirp.domain.ports.host_control import HostControlError, HostTarget

CTR = "/kubepods/burstable/podu1/c1"
V1_FILES = {
    "cpu,cpuacct": ["cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.uclamp.min"],
    "memory": ["memory.limit_in_bytes", "memory.soft_limit_in_bytes"],
    "cpuset": ["cpuset.cpus", "cpuset.mems"],
    "pids": ["pids.max"],
    "blkio": ["blkio.weight"],
    "hugetlb": ["hugetlb.2MB.limit_in_bytes"],
}
V2_FILES = ["memory.high", "memory.max", "cpu.weight", "cpu.max", "cpu.idle", "cpuset.cpus"]


def v1_tree(root: Path, path: str = CTR) -> Path:
    for hierarchy, files in V1_FILES.items():
        directory = root / hierarchy / path.lstrip("/")
        directory.mkdir(parents=True)
        for name in files:
            (directory / name).write_text("")
    (root / "cpu").symlink_to(root / "cpu,cpuacct")
    (root / "unified").mkdir()
    (root / "unified" / "cgroup.controllers").write_text("")
    return root


def v2_tree(root: Path, path: str = CTR) -> Path:
    root.mkdir(exist_ok=True)
    (root / "cgroup.controllers").write_text("cpuset cpu io memory pids\n")
    directory = root / path.lstrip("/")
    directory.mkdir(parents=True)
    for name in V2_FILES:
        (directory / name).write_text("")
    return root


def target(**kw: object) -> HostTarget:
    values: dict[str, object] = {
        "container_id": "c1",
        "pod_id": "p1",
        "cgroup_parent": "/kubepods/burstable/podu1",
        "cgroups_path": CTR,
    }
    values.update(kw)
    return HostTarget(**values)  # type: ignore[arg-type]


def test_detects_hybrid_as_v1_and_unified_as_v2(tmp_path: Path) -> None:
    v1 = detect_layout(str(v1_tree(tmp_path / "v1")))
    assert v1.version is CgroupVersion.V1
    assert v1.controller_dir("cpu") == str(tmp_path / "v1" / "cpu,cpuacct")
    assert v1.controller_dir("cpuacct") == str(tmp_path / "v1" / "cpu,cpuacct")
    assert "unified" not in v1.controllers
    assert detect_layout(str(v2_tree(tmp_path / "v2"))).version is CgroupVersion.V2
    with pytest.raises(HostControlError, match="no cgroup v1 controllers or cgroup v2"):
        (tmp_path / "empty").mkdir()
        detect_layout(str(tmp_path / "empty"))


def test_v2_writes_files_by_name(tmp_path: Path) -> None:
    root = v2_tree(tmp_path)
    control = CgroupfsHostControl(str(root))
    control.apply(target(), HostChange(cgroup={"memory.high": "1073741824", "cpu.idle": "1"}))
    directory = root / CTR.lstrip("/")
    assert (directory / "memory.high").read_text() == "1073741824"
    assert (directory / "cpu.idle").read_text() == "1"


def test_v1_maps_v2_names(tmp_path: Path) -> None:
    root = v1_tree(tmp_path)
    control = CgroupfsHostControl(str(root))
    control.apply(
        target(),
        HostChange(
            cgroup={
                "cpu.weight": "100",
                "cpu.max": "50000 100000",
                "memory.max": "max",
                "memory.low": "1048576",
                "cpuset.cpus": "0-1",
                "pids.max": "64",
                "io.weight": "default 100",
                "hugetlb.2MB.max": "4194304",
                "cpu.uclamp.min": "20",
            }
        ),
    )
    rel = CTR.lstrip("/")

    def read(hierarchy: str, name: str) -> str:
        return (root / hierarchy / rel / name).read_text()

    assert read("cpu,cpuacct", "cpu.shares") == str(weight_to_shares(100))
    assert read("cpu,cpuacct", "cpu.cfs_quota_us") == "50000"
    assert read("cpu,cpuacct", "cpu.cfs_period_us") == "100000"
    assert read("cpu,cpuacct", "cpu.uclamp.min") == "20"
    assert read("memory", "memory.limit_in_bytes") == "-1"
    assert read("memory", "memory.soft_limit_in_bytes") == "1048576"
    assert read("cpuset", "cpuset.cpus") == "0-1"
    assert read("pids", "pids.max") == "64"
    assert read("blkio", "blkio.weight") == str(io_weight_to_blkio(100))
    assert read("hugetlb", "hugetlb.2MB.limit_in_bytes") == "4194304"


def test_v1_without_equivalent_names_setting_and_applies_the_rest(tmp_path: Path) -> None:
    root = v1_tree(tmp_path)
    control = CgroupfsHostControl(str(root))
    with pytest.raises(HostControlError) as err:
        control.apply(target(), HostChange(cgroup={"memory.high": "1G", "pids.max": "9"}))
    assert "container c1: cgroup v1 has no equivalent of memory.high" in str(err.value)
    assert (root / "pids" / CTR.lstrip("/") / "pids.max").read_text() == "9"


def test_errors_name_the_file(tmp_path: Path) -> None:
    root = v2_tree(tmp_path)
    control = CgroupfsHostControl(str(root))
    with pytest.raises(HostControlError, match=r"cgroup file .*/c1/memory\.swap\.max does not"):
        control.apply(target(), HostChange(cgroup={"memory.swap.max": "0"}))
    with pytest.raises(HostControlError, match=r"cgroup .*/podu1/gone of container c1 does not"):
        control.apply(
            target(cgroups_path="/kubepods/burstable/podu1/gone"),
            HostChange(cgroup={"memory.high": "1"}),
        )


def test_refuses_names_and_paths_that_escape(tmp_path: Path) -> None:
    root = v2_tree(tmp_path)
    control = CgroupfsHostControl(str(root))
    with pytest.raises(HostControlError, match=r"invalid cgroup setting name '\.\./x\.y'"):
        control.apply(target(), HostChange(cgroup={"../x.y": "1"}))
    with pytest.raises(HostControlError, match="leaves the hierarchy"):
        control.apply(target(cgroups_path="/../../etc"), HostChange(cgroup={"memory.high": "1"}))


def test_non_cgroup_settings_are_reported(tmp_path: Path) -> None:
    control = CgroupfsHostControl(str(v2_tree(tmp_path)))
    with pytest.raises(HostControlError, match="scheduling is not applied"):
        control.apply(target(), HostChange(scheduling=Scheduling(SchedulingPolicy.BATCH)))


def test_systemd_driver_paths() -> None:
    assert expand_systemd_path("kubepods-burstable-podu1.slice:cri-containerd:abc") == (
        "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podu1.slice/"
        "cri-containerd-abc.scope"
    )
    assert expand_systemd_path("-.slice:docker:x") == "/docker-x.scope"
    assert container_cgroup_path(
        target(cgroups_path="", cgroup_parent="kubepods-besteffort-podu2.slice")
    ) == (
        "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-podu2.slice/"
        "cri-containerd-c1.scope"
    )
    with pytest.raises(HostControlError, match="invalid systemd slice name"):
        expand_systemd_path("kubepods--x.slice:p:n")


def test_cgroupfs_parent_and_proc_fallbacks(tmp_path: Path) -> None:
    assert container_cgroup_path(target(cgroups_path="")) == "/kubepods/burstable/podu1/c1"
    proc = tmp_path / "proc"
    (proc / "77").mkdir(parents=True)
    (proc / "77" / "cgroup").write_text(
        "12:cpu,cpuacct:/kubepods/x\n3:memory:/kubepods/y\n0::/unified/z\n"
    )
    bare = target(cgroups_path="", cgroup_parent="", pid=77)
    assert container_cgroup_path(bare, controller="cpu", proc_root=str(proc)) == "/kubepods/x"
    assert container_cgroup_path(bare, controller="memory", proc_root=str(proc)) == "/kubepods/y"
    assert container_cgroup_path(bare, proc_root=str(proc)) == "/unified/z"
    with pytest.raises(HostControlError, match="cannot locate the cgroup of container c1"):
        container_cgroup_path(target(cgroups_path="", cgroup_parent="", pid=None))


@given(st.integers(2, 262144))
def test_cpu_weight_inverse_of_runc(shares: int) -> None:
    weight = 1 + ((shares - 2) * 9999) // 262142  # runc's conversion
    back = weight_to_shares(weight)
    assert 1 + ((back - 2) * 9999) // 262142 == weight  # same v2 weight after a round trip


@given(st.integers(10, 1000))
def test_io_weight_inverse_of_runc(blkio: int) -> None:
    weight = 1 + (blkio - 10) * 9999 // 990  # runc's conversion
    back = io_weight_to_blkio(weight)
    assert 1 + (back - 10) * 9999 // 990 == weight


def test_missing_v1_controller_is_named() -> None:
    with pytest.raises(HostControlError, match="controller 'blkio' is not mounted"):
        v1_writes("io.weight", "100", {"cpu"})
    with pytest.raises(HostControlError, match=r"invalid cpu\.max"):
        v1_writes("cpu.max", "1 2 3")


def test_pipeline_finds_a_started_container_through_its_pid(tmp_path: Path) -> None:
    # no cgroups path and no cgroup parent: only the pid the runtime reports at post-start
    # locates the cgroup (through /proc/<pid>/cgroup)
    from tests.domain.support import make_container, make_pod, make_rig

    root = v2_tree(tmp_path / "cgroup")
    proc = tmp_path / "proc"
    (proc / "77").mkdir(parents=True)
    (proc / "77" / "cgroup").write_text(f"0::{CTR}\n")
    rig = make_rig(host=CgroupfsHostControl(str(root), proc_root=str(proc)))
    pod = make_pod(cgroup_parent="")
    ctr = make_container(pod, "a")
    real = rig.policy.allocate

    def allocate_with_setting(container: Container) -> None:
        real(container)
        assert rig.policy.ctx is not None
        rig.policy.ctx.cache.set_host_change(container.id, HostChange(cgroup={"cpu.idle": "1"}))

    rig.policy.allocate = allocate_with_setting  # type: ignore[method-assign]
    rig.manager.run_pod(pod)
    rig.manager.create_container(pod, ctr)
    rig.manager.start_container(pod, ctr)
    rig.manager.post_start(pod, attrs.evolve(ctr, pid=77))
    assert (root / CTR.lstrip("/") / "cpu.idle").read_text() == "1"
    assert [n for n in rig.log.notices if n.severity is Severity.ERROR] == []


def test_a_missing_cgroup_is_said_once_for_all_its_files(tmp_path: Path) -> None:
    control = CgroupfsHostControl(str(v2_tree(tmp_path)))
    with pytest.raises(HostControlError) as failed:
        control.apply(
            target(cgroups_path="/kubepods/burstable/podu1/gone"),
            HostChange(cgroup={"memory.high": "1", "cpu.idle": "1"}),
        )
    assert str(failed.value).count("does not exist") == 1
