"""``KubernetesPod`` gives a container its spec's devices and volume mounts (what topology
hints are made from), as the runtime reports them, and reads ``hostPath`` volume mounts from a
pod manifest."""

from __future__ import annotations

import asyncio
from typing import Any

import attrs
import pytest

from nrirp.adapters.nri.resmgr.translate import container_from_pb
from nrirp.app.embed import KubernetesPod, ManifestError
from nrirp.domain.model import Container, Device, Mount
from nrirp.simruntime import (
    ContainerSpec,
    DeviceSpec,
    MountSpec,
    ObjectStyle,
    RuntimeOptions,
    SimRuntime,
)

UID = "7f0c2b1e-3a4d-4c5b-8e9f-0a1b2c3d4e5f"
CAPACITY = 64 << 30
GPU = DeviceSpec("/dev/dri/card0", "c", 226, 0)
DISK = DeviceSpec("/dev/nvme0n1", "b", 259, 0)


def manifest(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": "db", "namespace": "prod", "uid": UID}, "spec": spec}


VOLUMES = manifest(
    volumes=[
        {"name": "data", "hostPath": {"path": "/mnt/nvme0/db", "type": "Directory"}},
        {"name": "conf", "hostPath": {"path": "/etc/db"}},
        {"name": "scratch", "emptyDir": {}},
    ],
    containers=[
        {
            "name": "pg",
            "volumeMounts": [
                {"name": "data", "mountPath": "/var/lib/pg"},
                {"name": "conf", "mountPath": "/etc/pg", "readOnly": True},
                {"name": "data", "mountPath": "/shared", "mountPropagation": "HostToContainer"},
                {"name": "scratch", "mountPath": "/tmp/scratch"},  # kubelet's own host path
                {"name": "conf", "mountPath": "/etc/one", "subPath": "one.conf"},  # likewise
            ],
        }
    ],
    initContainers=[
        {"name": "init", "volumeMounts": [{"name": "data", "mountPath": "/var/lib/pg"}]}
    ],
)


def reported(kube: KubernetesPod) -> list[Container]:
    """The containers the simulated runtime reports for ``kube``'s spec (only what the spec
    says: no runtime default mounts)."""

    async def run() -> list[Container]:
        options = RuntimeOptions(memory_capacity=CAPACITY, style=ObjectStyle.bare())
        async with SimRuntime(options) as runtime:
            status = await runtime.run_pod_sandbox(kube.spec)
            created = [await runtime.create_container(status, c.name) for c in kube.spec.containers]
            return [container_from_pb(c.container) for c in created]

    return asyncio.run(run())


def test_a_manifests_host_path_volume_mounts_are_the_containers_bind_mounts() -> None:
    kube = KubernetesPod.from_manifest(VOLUMES)
    pg = kube.container("pg", "c1", pod_id="sb", memory_capacity=CAPACITY)
    assert pg.mounts == (
        Mount("/var/lib/pg", "/mnt/nvme0/db", "bind", ("rbind", "rprivate", "rw")),
        Mount("/etc/pg", "/etc/db", "bind", ("rbind", "rprivate", "ro")),
        Mount("/shared", "/mnt/nvme0/db", "bind", ("rbind", "rslave", "rw")),
    )
    init = kube.container("init", "c0", pod_id="sb", memory_capacity=CAPACITY)
    assert [m.destination for m in init.mounts] == ["/var/lib/pg"]
    assert pg.devices == ()


def test_devices_and_mounts_are_what_the_runtime_reports() -> None:
    kube = KubernetesPod.from_manifest(VOLUMES)
    spec = kube.spec
    with_devices = attrs.evolve(
        spec, containers=[attrs.evolve(spec.containers[0], devices=(GPU, DISK))]
    )
    kube = attrs.evolve(kube, spec=with_devices)
    (theirs,) = reported(kube)
    mine = kube.container("pg", theirs.id, pod_id=theirs.pod_id, memory_capacity=CAPACITY)
    assert (
        mine.devices
        == theirs.devices
        == (
            Device("/dev/dri/card0", "c", 226, 0),
            Device("/dev/nvme0n1", "b", 259, 0),
        )
    )
    assert mine.mounts == theirs.mounts and len(mine.mounts) == 3


def test_a_container_spec_without_devices_or_mounts_has_none() -> None:
    kube = KubernetesPod.from_manifest(manifest(containers=[{"name": "c"}]))
    ctr = kube.container("c", "c1", pod_id="sb", memory_capacity=CAPACITY)
    assert (ctr.mounts, ctr.devices) == ((), ())
    spec = ContainerSpec("c", mounts=[MountSpec("/data", "/srv/data")])
    kube = attrs.evolve(kube, spec=attrs.evolve(kube.spec, containers=[spec]))
    ctr = kube.container("c", "c1", pod_id="sb", memory_capacity=CAPACITY)
    assert ctr.mounts == (Mount("/data", "/srv/data", "bind", ("rbind", "rprivate", "rw")),)


@pytest.mark.parametrize(
    ("volume_mount", "message"),
    [
        ({"name": "nope", "mountPath": "/x"}, "volumeMounts[0].name: no volume 'nope'"),
        (
            {"name": "data", "mountPath": "/x", "mountPropagation": "Sideways"},
            "volumeMounts[0].mountPropagation: 'Sideways': expected one of None,",
        ),
        (
            {"name": "data", "mountPath": "/x", "readOnly": "yes"},
            "volumeMounts[0].readOnly: expected a boolean",
        ),
        ({"name": "data", "mountPath": "x"}, "mountPath: 'x': expected an absolute path"),
        ({"name": "data"}, "volumeMounts[0].mountPath: '': expected an absolute path"),
    ],
)
def test_bad_volume_mounts_name_their_path(volume_mount: dict[str, Any], message: str) -> None:
    doc = manifest(
        volumes=[{"name": "data", "hostPath": {"path": "/srv"}}],
        containers=[{"name": "c", "volumeMounts": [volume_mount]}],
    )
    with pytest.raises(ManifestError) as info:
        KubernetesPod.from_manifest(doc)
    assert "spec.containers[0]" in str(info.value) and message in str(info.value)


@pytest.mark.parametrize(
    ("path", "message"),
    [(3, "expected a string, got 3"), ("srv", "'srv': expected an absolute path")],
)
def test_bad_host_paths_name_their_path(path: object, message: str) -> None:
    doc = manifest(volumes=[{"name": "v", "hostPath": {"path": path}}], containers=[{"name": "c"}])
    with pytest.raises(ManifestError) as info:
        KubernetesPod.from_manifest(doc)
    assert str(info.value) == f"spec.volumes[0].hostPath.path: {message}"
