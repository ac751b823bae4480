from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.model import (
    LinuxResources,
    Pod,
    QOSClass,
    qos_from_cgroup_parent,
    qos_from_resources,
    quota_from_millis,
    shares_from_millis,
)

G, B, BE = QOSClass.GUARANTEED, QOSClass.BURSTABLE, QOSClass.BESTEFFORT


@pytest.mark.parametrize(
    ("parent", "expected"),
    [
        # cgroupfs driver
        ("/kubepods/besteffort/pod1234-abcd", BE),
        ("/kubepods/burstable/pod1234-abcd", B),
        ("/kubepods/pod1234-abcd", G),
        ("kubepods/burstable/pod1234", B),
        # systemd driver, full path and bare slice name
        ("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod12_34.slice", BE),
        ("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod12_34.slice", B),
        ("/kubepods.slice/kubepods-pod12_34.slice", G),
        ("kubepods-burstable-pod12_34.slice", B),
        ("kubepods-besteffort-pod12_34.slice", BE),
        ("kubepods-pod12_34.slice", G),
        # a custom cgroup root in front
        ("/custom/kubepods/burstable/podx", B),
        # parents that say nothing
        ("", None),
        ("/system.slice/foo.service", None),
        ("/kubepods", None),
        ("/kubepods.slice", None),
        ("/mypods/burstable/pod1", None),
    ],
)
def test_qos_from_cgroup_parent(parent: str, expected: QOSClass | None) -> None:
    assert qos_from_cgroup_parent(parent) is expected


_COMPONENTS = st.sampled_from(
    [
        "kubepods",
        "KubePods",
        "besteffort",
        "burstable",
        "BestEffort",
        "custom",
        "pod",
        "podx",
        "Pod1-2",
        "podkubepods",
        "pod1.slice",
        "kubepods.slice",
        "kubepods-burstable.slice",
        "kubepods-besteffort-pod1_2.slice",
        "kubepods-pod1.slice",
        "",
        "x-y",
    ]
)


@given(st.lists(_COMPONENTS, max_size=6), st.booleans())
def test_qos_from_cgroup_parent_remembered_per_parent_path(
    components: list[str], rooted: bool
) -> None:
    """The class of a pod component's parent path, remembered, is what reading the whole path
    gives, twice in a row (the second from memory)."""
    from nrirp.domain.model.kubelet import _qos_of

    parent = ("/" if rooted else "") + "/".join(components)
    expected = _qos_of(parent)
    assert qos_from_cgroup_parent(parent) is expected
    assert qos_from_cgroup_parent(parent) is expected


def test_pod_seen_is_the_pod_evolved() -> None:
    """Pod.seen copies every other field as it is (as attrs.evolve does)."""
    import attrs

    pod = Pod(
        id="p",
        name="n",
        uid="u",
        namespace="ns",
        labels={"a": "1"},
        annotations={"b": "2"},
        cgroup_parent="/kubepods/besteffort/podu",
        runtime_handler="runc",
        resources=LinuxResources(cpu_shares=2),
        overhead=LinuxResources(cpu_shares=4),
        created_at=1.0,
    )
    assert pod.seen(created_at=7.0, qos_class=G) == attrs.evolve(pod, created_at=7.0, qos_class=G)
    assert pod.seen(created_at=None, qos_class=None) == attrs.evolve(
        pod, created_at=None, qos_class=None
    )


def test_pod_takes_qos_from_parent_unless_given() -> None:
    assert Pod(id="p", cgroup_parent="/kubepods/besteffort/podp").qos_class is BE
    assert Pod(id="p", cgroup_parent="").qos_class is None
    assert Pod(id="p", cgroup_parent="/kubepods/besteffort/podp", qos_class=G).qos_class is G


def _res(request: int, limit: int | None = None, mem: int | None = None) -> LinuxResources:
    return LinuxResources(
        cpu_shares=shares_from_millis(request),
        cpu_quota=quota_from_millis(limit) if limit else None,
        cpu_period=100_000 if limit else None,
        memory_limit=mem,
    )


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        ([], BE),
        ([_res(0)], BE),
        ([LinuxResources()], BE),
        ([_res(250)], B),
        ([_res(0, mem=1 << 20)], B),
        ([_res(1000, 1000, 1 << 30)], G),
        ([_res(1500, 1500, 1 << 30), _res(100, 100, 1 << 20)], G),
        ([_res(1000, 2000, 1 << 30)], B),  # request below limit
        ([_res(1000, 1000, None)], B),  # no memory limit
        ([_res(1000, 1000, 1 << 30), _res(0)], B),  # one container without limits
        ([_res(5, 5, 1 << 30)], G),  # tiny quota is clamped to 1000us by kubelet too
    ],
)
def test_qos_from_resources(containers: list[LinuxResources], expected: QOSClass) -> None:
    assert qos_from_resources(containers) is expected
