"""PCI devices in machine specs: validation, the written sysfs entries, and FakeTopologyHints
(which must agree with what SysfsTopologyHints reads from the written tree)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nrirp.adapters.fakehw import (
    FakeTopologyHints,
    MachineSpec,
    MachineSpecError,
    device_hints,
    load_machine,
    resolve,
    spec_from_data,
    spec_from_yaml,
    spec_to_data,
    write_sysfs,
)
from nrirp.adapters.sysfs import SysfsDiscovery, SysfsTopologyHints
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, Device, Mount
from nrirp.domain.topology import HintOrigin, TopologyHint

BASE = "name: dev\ncompact: {packages: 2, cores_per_node: 2}\n"  # node 0: cpus 0-1, node 1: 2-3


def spec_with(devices: str) -> MachineSpec:
    return spec_from_yaml(BASE + "devices:\n" + devices, "test.yaml")


def errors_of(devices: str) -> str:
    with pytest.raises(MachineSpecError) as info:
        spec_with(devices)
    return str(info.value)


def test_device_defaults_follow_the_node() -> None:
    layout = resolve(
        spec_with(
            "  - {pci: '0000:3b:00.0', node: 1}\n"
            "  - {pci: '0000:00:1f.2'}\n"
            "  - {pci: '0000:5e:00.0', node: 0, cpus: '1', path: /dev/nvme0n1, type: b,"
            " major: 259, minor: 0}\n"
        )
    )
    gpu, sata, nvme = layout.devices
    assert (gpu.sysfs_dir, gpu.node, gpu.cpus) == (
        "/devices/pci0000:3b/0000:3b:00.0",
        1,
        CPUSet.parse("2-3"),
    )
    assert (sata.node, sata.cpus) == (-1, CPUSet.parse("0-3"))  # unknown node: every CPU
    assert (nvme.cpus, nvme.path, nvme.type, nvme.major) == (CPUSet.of(1), "/dev/nvme0n1", "b", 259)


@pytest.mark.parametrize(
    ("devices", "expected"),
    [
        (
            "  - {pci: '3b:00.0'}\n",
            "expected a PCI address like 0000:3b:00.0, got '3b:00.0' @ $.devices[0].pci",
        ),
        ("  - {pci: '0000:3B:00.0'}\n", "@ $.devices[0].pci"),
        (
            "  - {pci: '0000:3b:00.0'}\n  - {pci: '0000:3b:00.0'}\n",
            "0000:3b:00.0 is already defined at $.devices[0] @ $.devices[1].pci",
        ),
        (
            "  - {pci: '0000:3b:00.0', node: 5}\n",
            "5 is not a node with online CPUs (or -1) @ $.devices[0].node",
        ),
        (
            "  - {pci: '0000:3b:00.0', cpus: '7'}\n",
            "must be online CPUs, got '7' @ $.devices[0].cpus",
        ),
        (
            "  - {pci: '0000:3b:00.0', path: dev/x, major: 1}\n",
            "expected a device node under /dev/, got 'dev/x'",
        ),
        (
            "  - {pci: '0000:3b:00.0', path: /dev/x, type: p, major: 1}\n",
            "expected 'c' or 'b', got 'p' @ $.devices[0].type",
        ),
        ("  - {pci: '0000:3b:00.0', path: /dev/x}\n", "need major > 0 and minor >= 0, got 0:0"),
        (
            "  - {pci: '0000:3b:00.0', major: 8}\n",
            "a device number needs the device node's path @ $.devices[0].path",
        ),
        (
            "  - {pci: '0000:3b:00.0', path: /dev/a, major: 8}\n"
            "  - {pci: '0000:3c:00.0', path: /dev/b, major: 8}\n",
            "8:0 is already used at $.devices[0] @ $.devices[1].minor",
        ),
        ("  - {pci: '0000:3b:00.0', colour: red}\n", "extra fields found (colour) @ $.devices[0]"),
    ],
)
def test_device_problems_are_named_by_path(devices: str, expected: str) -> None:
    assert expected in errors_of(devices)


def test_devices_round_trip_through_data() -> None:
    spec = spec_with("  - {pci: '0000:3b:00.0', node: 1, path: /dev/dri/card0, major: 226}\n")
    assert spec_from_data(spec_to_data(spec), "again") == spec


def test_writer_writes_attributes_and_device_links(tmp_path: Path) -> None:
    spec = spec_with(
        "  - {pci: '0000:3b:00.0', node: 1, path: /dev/dri/card0, type: c, major: 226, minor: 0}\n"
        "  - {pci: '0000:5e:00.0', path: /dev/nvme0n1, type: b, major: 259, minor: 0}\n"
    )
    root = tmp_path / "sys"
    write_sysfs(resolve(spec), root)
    gpu = root / "devices/pci0000:3b/0000:3b:00.0"
    assert (gpu / "numa_node").read_text() == "1\n"
    assert (gpu / "local_cpulist").read_text() == "2-3\n"
    assert (root / "devices/pci0000:5e/0000:5e:00.0/numa_node").read_text() == "-1\n"
    char = root / "dev/char/226:0"
    assert os.readlink(char) == "../../devices/pci0000:3b/0000:3b:00.0/dev/card0"
    assert (char / "dev").read_text() == "226:0\n"
    block = root / "dev/block/259:0"
    assert os.readlink(block) == "../../devices/pci0000:5e/0000:5e:00.0/block/nvme0n1"
    # the devices change nothing that discovery reads
    plain = tmp_path / "plain"
    write_sysfs(resolve(spec_from_yaml(BASE)), plain)
    assert SysfsDiscovery(str(root)).discover() == SysfsDiscovery(str(plain)).discover()


def test_fake_hints_match_sysfs_hints_for_the_catalogue_machine(tmp_path: Path) -> None:
    layout = resolve(load_machine("server-4s-144"))
    write_sysfs(layout, tmp_path / "sys")
    container = Container(
        id="c",
        pod_id="p",
        devices=(
            Device("/dev/dri/card0", "c", 226, 0),
            Device("/dev/nvme0n1", "b", 259, 0),
            Device("/dev/null", "c", 1, 3),
        ),
        mounts=(Mount("/nvme", "/sys/devices/pci0000:5e/0000:5e:00.0"),),
    )
    from_tree = SysfsTopologyHints(str(tmp_path / "sys")).hints(container)
    fake = FakeTopologyHints.from_layout(layout).hints(container)
    assert fake == from_tree
    gpu = fake["/sys/devices/pci0000:af/0000:af:00.0"]
    assert (gpu.nodes, gpu.cpus, gpu.origin) == (
        CPUSet.of(2),
        CPUSet.parse("36-53,108-125"),
        HintOrigin.DEVICES,
    )
    assert fake["/sys/devices/pci0000:5e/0000:5e:00.0"].origin is HintOrigin.MOUNTS


def test_fake_hints_from_a_table() -> None:
    hint = TopologyHint("/sys/devices/pci0000:00/0000:00:02.0", nodes=CPUSet.of(0))
    fake = FakeTopologyHints({"/dev/dri/card0": hint, "/mnt/gpu": hint})
    only_device = Container(id="c", pod_id="p", devices=(Device("/dev/dri/card0", "c", 226, 0),))
    assert fake.hints(only_device) == {
        hint.provider: TopologyHint(hint.provider, nodes=CPUSet.of(0), path="/dev/dri/card0")
    }
    both = Container(
        id="c",
        pod_id="p",
        devices=(Device("/dev/dri/card0", "c", 226, 0),),
        mounts=(Mount("/gpu", "/mnt/gpu"),),
    )
    (found,) = fake.hints(both).values()
    assert (found.origin, found.path) == (HintOrigin.MOUNTS, "/mnt/gpu")
    assert FakeTopologyHints().hints(both) == {}
    assert device_hints(resolve(spec_from_yaml(BASE))) == {}
