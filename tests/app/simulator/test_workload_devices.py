"""Workload containers with devices and mounts: parsing, errors with paths, and what the
simulated runtime hands the plugin in CreateContainer."""

from __future__ import annotations

import pytest

from nrirp.app.simulator import WorkloadError, parse_workload
from nrirp.app.simulator.workload import CreatePod
from nrirp.domain.model.kubelet import InvalidSpec, QOSClass
from nrirp.domain.model.pod_spec import (
    DEFAULT_VOLUME_OPTIONS,
    ContainerSpec,
    DeviceSpec,
    MountSpec,
    PodSpec,
)
from nrirp.simruntime.emulation import HEAD
from nrirp.simruntime.objects import NodeSettings, build_container, build_pod_sandbox

WORKLOAD = """
steps:
  - createPod:
      name: gpu
      containers:
        - name: app
          devices:
            - {path: /dev/dri/card0, type: c, major: 226, minor: 0}
            - {path: /dev/nvme0n1, type: b, major: 259}
          mounts:
            - {source: /sys/devices/pci0000:af/0000:af:00.0, destination: /gpu, options: [ro]}
            - {source: /mnt/fast, destination: /data}
"""


def test_devices_and_mounts_parse_into_the_container_spec() -> None:
    (step,) = parse_workload(WORKLOAD).steps
    assert isinstance(step.action, CreatePod)
    (spec,) = step.action.pod_spec().containers
    assert spec.devices == (
        DeviceSpec("/dev/dri/card0", "c", 226, 0),
        DeviceSpec("/dev/nvme0n1", "b", 259, 0),
    )
    assert spec.mounts == (
        MountSpec("/gpu", "/sys/devices/pci0000:af/0000:af:00.0", ("ro",)),
        MountSpec("/data", "/mnt/fast", DEFAULT_VOLUME_OPTIONS),
    )


@pytest.mark.parametrize(
    ("container", "expected"),
    [
        (
            "{name: a, devices: [{path: dev/x, major: 1}]}",
            "containers[0].devices[0].path (step 1): invalid value 'dev/x': expected an absolute",
        ),
        (
            "{name: a, devices: [{path: /dev/x, type: p}]}",
            "devices[0].type (step 1): invalid value 'p': expected 'c', 'b' or 'u'",
        ),
        (
            "{name: a, devices: [{path: /dev/x, major: -1}]}",
            "devices[0].major (step 1): invalid value -1: must not be negative",
        ),
        (
            "{name: a, devices: [{path: /dev/x, mode: rw}]}",
            "devices[0].mode (step 1): unknown field",
        ),
        ("{name: a, devices: [{major: 1}]}", "devices[0].path (step 1): required field missing"),
        (
            "{name: a, mounts: [{source: data, destination: /d}]}",
            "mounts[0].source (step 1): invalid value 'data': expected an absolute path",
        ),
        (
            "{name: a, mounts: [{source: /a, destination: /d}, {source: /b, destination: /d}]}",
            "mounts[1].destination (step 1): another mount is already at '/d'",
        ),
        (
            "{name: a, mounts: [{source: /a}]}",
            "mounts[0].destination (step 1): required field missing",
        ),
    ],
)
def test_device_and_mount_errors_name_the_path(container: str, expected: str) -> None:
    text = f"- createPod: {{name: p, containers: [{container}]}}\n"
    with pytest.raises(WorkloadError) as info:
        parse_workload(text)
    assert expected in str(info.value)


def test_specs_refuse_bad_values() -> None:
    with pytest.raises(InvalidSpec, match="device type 'x'"):
        DeviceSpec("/dev/a", "x")
    with pytest.raises(InvalidSpec, match="device major -1"):
        DeviceSpec("/dev/a", "c", -1)
    with pytest.raises(InvalidSpec, match="source 'rel': must be an absolute path"):
        MountSpec("/d", "rel")
    with pytest.raises(InvalidSpec, match="two mounts at '/d'"):
        ContainerSpec("a", mounts=[MountSpec("/d", "/a"), MountSpec("/d", "/b")])
    with pytest.raises(InvalidSpec, match="devices must be DeviceSpec"):
        ContainerSpec("a", devices=["/dev/a"])  # type: ignore[list-item]


def test_the_nri_container_carries_devices_and_volumes() -> None:
    spec = ContainerSpec(
        "app",
        devices=[DeviceSpec("/dev/dri/card0", "c", 226, 0)],
        mounts=[
            MountSpec("/data", "/mnt/fast"),
            MountSpec("/etc/hosts", "/srv/hosts", ("rbind", "ro")),  # replaces the default one
        ],
    )
    node = NodeSettings(version=HEAD)
    pod = build_pod_sandbox(
        PodSpec("web", containers=[spec]), pod_id="p" * 64, uid="u", pid=100, seen_at="t", node=node
    )
    ctr = build_container(
        pod,
        QOSClass.BESTEFFORT,
        spec,
        cid="c" * 64,
        attempt=0,
        created_at=1,
        node=node,
        host_network=False,
    )
    (device,) = ctr.linux.devices
    assert (device.path, device.type, device.major, device.minor) == ("/dev/dri/card0", "c", 226, 0)
    by_destination = {m.destination: m for m in ctr.mounts}
    assert by_destination["/data"].source == "/mnt/fast"
    assert list(by_destination["/data"].options) == list(DEFAULT_VOLUME_OPTIONS)
    assert by_destination["/etc/hosts"].source == "/srv/hosts"
    assert [m.destination for m in ctr.mounts].count("/etc/hosts") == 1
    assert "/proc" in by_destination  # the runtime's default mounts stay
