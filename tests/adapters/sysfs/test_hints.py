"""SysfsTopologyHints on hand-built sysfs trees: devices, mounts, odd content, virtual devices."""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from nrirp.adapters.sysfs import SysfsTopologyHints
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Device, Mount
from nrirp.domain.topology import HintOrigin, TopologyHint

GPU = "/devices/pci0000:00/0000:00:02.0"
BRIDGE = "/devices/pci0000:80/0000:80:01.0"
NVME = f"{BRIDGE}/0000:81:00.0"
SATA = "/devices/pci0000:00/0000:00:1f.2"


class Tree:
    """A sysfs tree under construction."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def file(self, rel: str, content: str | bytes) -> None:
        path = self.root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content + "\n")

    def dir(self, rel: str) -> None:
        (self.root / rel.lstrip("/")).mkdir(parents=True, exist_ok=True)

    def link(self, rel: str, target_rel: str) -> None:
        """A relative symlink at ``rel`` to ``target_rel`` (both relative to the root)."""
        path = self.root / rel.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        target = self.root / target_rel.lstrip("/")
        path.symlink_to(os.path.relpath(target, path.parent))

    def device(self, kind: str, number: str, device_dir: str) -> None:
        self.dir(device_dir)
        self.link(f"/dev/{kind}/{number}", device_dir)


@pytest.fixture
def tree(tmp_path: Path) -> Tree:
    t = Tree(tmp_path / "sys")
    # a GPU with both attributes, its DRM node below it
    t.file(f"{GPU}/local_cpulist", "0-3")
    t.file(f"{GPU}/numa_node", "0")
    t.device("char", "226:0", f"{GPU}/drm/card0")
    # an NVMe drive behind a bridge: partition -> namespace -> controller -> PCI function
    t.file(f"{NVME}/local_cpulist", "8-15")
    t.file(f"{NVME}/numa_node", "1")
    t.file(f"{BRIDGE}/local_cpulist", "8-15")
    t.file(f"{BRIDGE}/numa_node", "1")
    t.device("block", "259:0", f"{NVME}/nvme/nvme0/nvme0n1")
    t.device("block", "259:1", f"{NVME}/nvme/nvme0/nvme0n1/nvme0n1p1")
    # a SATA controller whose firmware reports no NUMA node
    t.file(f"{SATA}/local_cpulist", "0-15")
    t.file(f"{SATA}/numa_node", "-1")
    t.device("block", "8:0", f"{SATA}/ata1/host0/target0:0:0/0:0:0:0/block/sda")
    t.device("block", "8:16", f"{SATA}/ata2/host1/target1:0:0/1:0:0:0/block/sdb")
    # md RAID over sda and the NVMe partition
    t.device("block", "9:0", "/devices/virtual/block/md0")
    t.link(
        "/devices/virtual/block/md0/slaves/sda", f"{SATA}/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    )
    t.link("/devices/virtual/block/md0/slaves/nvme0n1p1", f"{NVME}/nvme/nvme0/nvme0n1/nvme0n1p1")
    # a virtual char device (no hints), as /dev/null is
    t.device("char", "1:3", "/devices/virtual/mem/null")
    return t


def ctr(*, devices: tuple[Device, ...] = (), mounts: tuple[Mount, ...] = ()) -> Container:
    return Container(id="c1", pod_id="p1", name="app", devices=devices, mounts=mounts)


def hints_of(tree: Tree, container: Container, **kw: object) -> dict[str, TopologyHint]:
    return SysfsTopologyHints(str(tree.root), **kw).hints(container)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- devices
def test_char_device_walks_up_to_its_pci_function(tree: Tree) -> None:
    found = hints_of(tree, ctr(devices=(Device("/dev/dri/card0", "c", 226, 0),)))
    assert found == {
        f"/sys{GPU}": TopologyHint(
            f"/sys{GPU}",
            cpus=CPUSet.parse("0-3"),
            nodes=CPUSet.of(0),
            origin=HintOrigin.DEVICES,
            path="/dev/dri/card0",
        )
    }


def test_block_partition_and_disk_share_the_controller_hint(tree: Tree) -> None:
    devices = (Device("/dev/nvme0n1p1", "b", 259, 1), Device("/dev/nvme0n1", "b", 259, 0))
    found = hints_of(tree, ctr(devices=devices))
    assert list(found) == [f"/sys{NVME}"]  # the first device to name a provider wins
    hint = found[f"/sys{NVME}"]
    assert (hint.cpus, hint.nodes, hint.path) == (
        CPUSet.parse("8-15"),
        CPUSet.of(1),
        "/dev/nvme0n1p1",
    )


def test_unknown_numa_node_gives_a_cpu_only_hint(tree: Tree) -> None:
    found = hints_of(tree, ctr(devices=(Device("/dev/sda", "b", 8, 0),)))
    assert found[f"/sys{SATA}"].cpus == CPUSet.parse("0-15")
    assert found[f"/sys{SATA}"].nodes == CPUSet()


def test_numa_node_without_cpu_list_gives_a_node_hint(tree: Tree) -> None:
    (tree.root / GPU.lstrip("/") / "local_cpulist").unlink()
    found = hints_of(tree, ctr(devices=(Device("/dev/dri/card0", "c", 226, 0),)))
    assert found[f"/sys{GPU}"].cpus == CPUSet()
    assert found[f"/sys{GPU}"].nodes == CPUSet.of(0)


def test_md_raid_gives_the_hints_of_its_members(tree: Tree) -> None:
    found = hints_of(tree, ctr(devices=(Device("/dev/md0", "b", 9, 0),)))
    assert set(found) == {f"/sys{SATA}", f"/sys{NVME}"}
    assert {h.path for h in found.values()} == {"/dev/md0"}


@pytest.mark.parametrize(
    "device",
    [
        Device("/dev/null", "c", 1, 3),  # virtual, no slaves
        Device("/dev/missing", "c", 10, 200),  # no /sys/dev entry
        Device("/dev/fifo", "p", 0, 0),  # not a device node type with a number
        Device("/dev/weird", "c", 0, 5),  # major 0
        Device("/dev/nvme0n1", "c", 259, 0),  # block number looked up as char
    ],
)
def test_devices_without_locality_give_nothing(tree: Tree, device: Device) -> None:
    assert hints_of(tree, ctr(devices=(device,))) == {}


def test_links_leaving_the_tree_give_nothing(tree: Tree, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "devices" / "pci0000:00" / "0000:00:03.0"
    outside.mkdir(parents=True)
    (outside / "local_cpulist").write_text("0\n")
    (tree.root / "dev" / "char" / "226:1").symlink_to(outside)
    (tree.root / "dev" / "char" / "226:2").symlink_to(tree.root / "dev" / "char" / "nowhere")
    devices = (Device("/dev/a", "c", 226, 1), Device("/dev/b", "c", 226, 2))
    assert hints_of(tree, ctr(devices=devices)) == {}


# ---------------------------------------------------------------------- odd content
@pytest.mark.parametrize(
    ("cpulist", "numa", "expected_cpus", "expected_nodes"),
    [
        ("0-3", "zero", "0-3", ""),  # odd node: cpus still count
        ("0-3,", "0", "", "0"),  # odd cpu list: node still counts
        ("", "0", "", "0"),
        (b"\xff\xfe", "0", "", "0"),  # not text
        ("4-7", "-1", "4-7", ""),
    ],
)
def test_odd_attribute_is_skipped_alone(
    tree: Tree,
    cpulist: str | bytes,
    numa: str,
    expected_cpus: str,
    expected_nodes: str,
) -> None:
    tree.file(f"{GPU}/local_cpulist", cpulist)
    tree.file(f"{GPU}/numa_node", numa)
    found = hints_of(tree, ctr(devices=(Device("/dev/dri/card0", "c", 226, 0),)))
    hint = found[f"/sys{GPU}"]
    assert (str(hint.cpus), str(hint.nodes)) == (expected_cpus, expected_nodes)


def test_unusable_level_is_passed_for_the_one_above(
    tree: Tree, caplog: pytest.LogCaptureFixture
) -> None:
    tree.file(f"{NVME}/local_cpulist", "garbage")
    tree.file(f"{NVME}/numa_node", "-1")
    with caplog.at_level(logging.DEBUG, logger="nrirp.adapters.sysfs.hints"):
        found = hints_of(tree, ctr(devices=(Device("/dev/nvme0n1", "b", 259, 0),)))
    assert list(found) == [f"/sys{BRIDGE}"]
    assert any("local_cpulist ignored" in r.getMessage() for r in caplog.records)


def test_unreadable_attributes_never_raise(tree: Tree) -> None:
    for name in ("local_cpulist", "numa_node"):
        path = tree.root / GPU.lstrip("/") / name
        path.unlink()
        path.mkdir()  # reading a directory fails with EISDIR
    found = hints_of(tree, ctr(devices=(Device("/dev/dri/card0", "c", 226, 0),)))
    assert found == {}


def test_nothing_anywhere_gives_no_hint(tree: Tree) -> None:
    tree.device("char", "240:0", "/devices/platform/serial8250/tty/ttyS0")
    assert hints_of(tree, ctr(devices=(Device("/dev/ttyS0", "c", 240, 0),))) == {}


# ---------------------------------------------------------------------- mounts
def test_mount_of_a_sysfs_device_directory(tree: Tree) -> None:
    mount = Mount("/gpu", f"/sys{GPU}", options=("ro", "rbind"))  # read-only still counts
    found = hints_of(tree, ctr(mounts=(mount,)))
    hint = found[f"/sys{GPU}"]
    assert (hint.origin, hint.path, hint.cpus) == (
        HintOrigin.MOUNTS,
        f"/sys{GPU}",
        CPUSet.parse("0-3"),
    )
    below = Mount("/nvme", f"/sys{NVME}/nvme/nvme0")
    assert list(hints_of(tree, ctr(mounts=(below,)))) == [f"/sys{NVME}"]
    missing = Mount("/x", "/sys/devices/pci0000:00/0000:00:09.0")
    assert hints_of(tree, ctr(mounts=(missing,))) == {}


def fake_stat(table: dict[str, os.stat_result]) -> Callable[[str], os.stat_result]:
    def stat_path(path: str) -> os.stat_result:
        try:
            return table[path]
        except KeyError:
            raise FileNotFoundError(2, "No such file or directory", path) from None

    return stat_path


def regular_on(major: int, minor: int) -> os.stat_result:
    return os.stat_result((stat.S_IFDIR | 0o755, 1, os.makedev(major, minor), 1, 0, 0, 0, 0, 0, 0))


def node(mode: int, major: int, minor: int) -> os.stat_result:
    return os.stat_result(
        (mode | 0o600, 1, 5, 1, 0, 0, 0, 0, 0, 0), {"st_rdev": os.makedev(major, minor)}
    )


HOST = {
    "/mnt/fast": regular_on(259, 1),  # a directory on the NVMe partition
    "/mnt/tmp": regular_on(0, 42),  # tmpfs
    "/dev/dri/card0": node(stat.S_IFCHR, 226, 0),
    "/dev/sda": node(stat.S_IFBLK, 8, 0),
    "/var/lib/kubelet/pods/u/etc-hosts": regular_on(8, 16),
}


def test_host_paths_resolve_through_stat(tree: Tree) -> None:
    mounts = (
        Mount("/data", "/mnt/fast", options=("rbind", "rw")),
        Mount("/card", "/dev/dri/card0", options=("rbind", "rw")),
        Mount("/disk", "/dev/sda", options=("rbind", "rw")),
    )
    found = hints_of(tree, ctr(mounts=mounts), resolve_host_paths=True, stat_path=fake_stat(HOST))
    assert {k: v.path for k, v in found.items()} == {
        f"/sys{NVME}": "/mnt/fast",
        f"/sys{GPU}": "/dev/dri/card0",
        f"/sys{SATA}": "/dev/sda",
    }
    assert {h.origin for h in found.values()} == {HintOrigin.MOUNTS}


@pytest.mark.parametrize(
    "mount",
    [
        Mount("/data", "/mnt/fast", options=("rbind", "ro")),  # read-only
        Mount("/etc/hosts", "/var/lib/kubelet/pods/u/etc-hosts", options=("rbind", "rw")),
        Mount("/dev/termination-log", "/mnt/fast", options=("rw",)),
        Mount("/usr/lib/x", "/mnt/fast", options=("rw",)),
        Mount("/tmp", "/mnt/tmp", options=("rw",)),  # no device
        Mount("/gone", "/mnt/gone", options=("rw",)),  # stat fails
        Mount("/proc", "proc", type="proc", options=("nosuid",)),  # not a path
    ],
)
def test_host_paths_that_give_nothing(tree: Tree, mount: Mount) -> None:
    found = hints_of(tree, ctr(mounts=(mount,)), resolve_host_paths=True, stat_path=fake_stat(HOST))
    assert found == {}


def test_host_paths_are_only_resolved_on_the_host_sysfs(tree: Tree) -> None:
    mount = Mount("/data", "/mnt/fast", options=("rbind", "rw"))
    calls: list[str] = []

    def stat_path(path: str) -> os.stat_result:
        calls.append(path)
        return HOST[path]

    source = SysfsTopologyHints(str(tree.root), stat_path=stat_path)
    assert not source.resolve_host_paths
    assert source.hints(ctr(mounts=(mount,))) == {}
    assert calls == []
    assert SysfsTopologyHints("/sys").resolve_host_paths


def test_mounts_come_before_devices_for_the_same_provider(tree: Tree) -> None:
    container = ctr(
        devices=(Device("/dev/dri/card0", "c", 226, 0),),
        mounts=(Mount("/gpu", f"/sys{GPU}"),),
    )
    (hint,) = hints_of(tree, container).values()
    assert hint.origin is HintOrigin.MOUNTS


# ---------------------------------------------------------------------- the real tree
@pytest.mark.skipif(not os.path.isdir("/sys/dev/block"), reason="no sysfs on this host")
def test_every_device_of_this_host_resolves_without_errors() -> None:
    source = SysfsTopologyHints("/sys")
    devices = tuple(
        Device(f"/dev/x{kind}{number}", kind[0], *map(int, number.split(":")))
        for kind in ("char", "block")
        for number in os.listdir(f"/sys/dev/{kind}")
    )
    assert devices
    found = source.hints(ctr(devices=devices))
    for provider, hint in found.items():
        assert provider.startswith("/sys/devices/")
        assert os.path.isdir(provider)
        assert not hint.is_empty()
