"""v0.1 requests -> domain pods and containers, as NRI v0.2 would report them."""

from __future__ import annotations

import pytest

from nrirp.adapters.nri_v01.protocol import RequestError
from nrirp.adapters.nri_v01.translate import (
    cgroup_parent_of,
    container_of,
    pod_of,
    resources_from_oci,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import CgroupDriver, ContainerState, LinuxResources, QOSClass, Resources
from nrirp.domain.model.pod_spec import ContainerSpec, PodSpec
from tests.support.nri_v01 import V01Pod

SPEC = PodSpec(
    "web",
    "prod",
    containers=(
        ContainerSpec(
            "app",
            Resources.of(requests={"cpu": "500m", "memory": "64Mi"}, limits={"cpu": "1"}),
            annotations={"ctr-note": "x"},
        ),
    ),
    labels={"app": "web"},
    annotations={"cpu.preserve.resource-policy.nri.io": "true"},
)


@pytest.mark.parametrize("driver", [CgroupDriver.CGROUPFS, CgroupDriver.SYSTEMD])
def test_pod_and_container_from_the_requests(driver: CgroupDriver) -> None:
    v01 = V01Pod.of(SPEC, driver=driver)
    pod = pod_of(v01.sandbox())
    assert (pod.id, pod.name, pod.namespace, pod.uid) == (v01.sandbox_id, "web", "prod", v01.uid)
    assert pod.labels["app"] == "web" and pod.labels["io.kubernetes.pod.name"] == "web"
    assert pod.annotations == {"cpu.preserve.resource-policy.nri.io": "true"}  # no CRI ones
    assert pod.cgroup_parent == v01.cgroup_parent and pod.qos_class is QOSClass.BURSTABLE
    ctr = container_of(v01.container("app"), pod)
    assert (ctr.id, ctr.pod_id, ctr.name) == (v01.container_id("app"), pod.id, "app")
    assert ctr.state is ContainerState.CREATING and ctr.pid == v01.pid_base + 1
    assert ctr.cgroups_path == v01.cgroups_path("app")
    assert ctr.annotations["ctr-note"] == "x"
    assert "cpu.preserve.resource-policy.nri.io" not in ctr.annotations  # the pod's own
    assert ctr.labels == {
        "io.kubernetes.container.name": "app",
        "io.kubernetes.pod.name": "web",
        "io.kubernetes.pod.namespace": "prod",
        "io.kubernetes.pod.uid": v01.uid,
    }
    assert ctr.resources == LinuxResources(
        cpu_shares=512, cpu_quota=100000, cpu_period=100000, memory_limit=None
    )


def test_a_pod_first_seen_through_its_container_has_the_same_identity() -> None:
    v01 = V01Pod.of(SPEC)
    from_sandbox = pod_of(v01.sandbox())
    from_container = pod_of(v01.container("app"))
    for field in ("id", "name", "namespace", "uid", "labels", "cgroup_parent", "qos_class"):
        assert getattr(from_container, field) == getattr(from_sandbox, field), field


def test_cgroup_parents() -> None:
    assert cgroup_parent_of("/kubepods/burstable/podu/c1") == "/kubepods/burstable/podu"
    assert cgroup_parent_of("kubepods-podu.slice:cri-containerd:c1") == "kubepods-podu.slice"
    assert cgroup_parent_of("") == ""


def test_oci_resources() -> None:
    resources = resources_from_oci(
        {
            "cpu": {"shares": 2, "quota": -1, "period": 100000, "cpus": "0-3", "mems": ""},
            "memory": {"limit": 1024, "reservation": 512, "swap": 2048},
            "pids": {"limit": 100},
            "hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}],
            "unified": {"memory.high": "max"},
            "devices": [{"allow": False}],
        }
    )
    assert resources == LinuxResources(
        cpu_shares=2,
        cpu_quota=-1,
        cpu_period=100000,
        cpus=CPUSet.parse("0-3"),
        memory_limit=1024,
        memory_reservation=512,
        memory_swap=2048,
        pids_limit=100,
        hugepage_limits={"2MB": 4194304},
        unified={"memory.high": "max"},
    )
    assert resources_from_oci(None) == LinuxResources()


@pytest.mark.parametrize(
    ("resources", "message"),
    [
        ({"cpu": []}, "spec.resources.cpu: expected an object"),
        ({"cpu": {"shares": "2"}}, "spec.resources.cpu.shares: expected an integer"),
        ({"cpu": {"cpus": 3}}, "spec.resources.cpu.cpus: expected a CPU list string"),
        ({"hugepageLimits": [{}]}, "spec.resources.hugepageLimits[0]: expected a pageSize"),
        ({"unified": {"a": 1}}, "spec.resources.unified: expected an object of strings"),
    ],
)
def test_bad_oci_resources_are_named(resources: dict[str, object], message: str) -> None:
    with pytest.raises(RequestError) as caught:
        resources_from_oci(resources)
    assert str(caught.value).startswith(message)
