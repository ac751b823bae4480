"""What the recorder writes reads back as it was: any pod, container and resources the runtime
can report, with any text in names, labels and annotations, through one line of YAML and the
workload's strict loading."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.documents import WORKLOAD, load_document
from nrirp.adapters.recording.format import (
    RecordedContainer,
    RecordedPod,
    container_data,
    pod_data,
)
from nrirp.adapters.recording.lines import yaml_line
from nrirp.domain.config.converter import structure
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import Container, ContainerState, Device, LinuxResources, Mount, Pod

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)
keys = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=60)
maps = st.dictionaries(keys, text, max_size=4)
ints = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
cpusets = st.sets(st.integers(0, 511), min_size=1, max_size=8).map(CPUSet.from_ids)
optional_text = st.none() | text.filter(bool)

resources = st.builds(
    LinuxResources,
    cpu_shares=st.none() | ints,
    cpu_quota=st.none() | ints,
    cpu_period=st.none() | ints,
    cpu_realtime_runtime=st.none() | ints,
    cpu_realtime_period=st.none() | ints,
    cpus=st.none() | cpusets,
    mems=st.none() | cpusets,
    memory_limit=st.none() | ints,
    memory_reservation=st.none() | ints,
    memory_swap=st.none() | ints,
    hugepage_limits=st.dictionaries(st.sampled_from(["2MB", "1GB", "64KB"]), ints, max_size=2),
    rdt_class=optional_text,
    blockio_class=optional_text,
    unified=maps,
    pids_limit=st.none() | ints,
)
pods = st.builds(
    Pod,
    id=keys,
    name=text,
    uid=text,
    namespace=text,
    labels=maps,
    annotations=maps,
    cgroup_parent=text,
    runtime_handler=text,
    resources=st.none() | resources,
    overhead=st.none() | resources,
)
containers = st.builds(
    Container,
    id=keys,
    pod_id=keys,
    name=text,
    state=st.sampled_from(list(ContainerState)),
    labels=maps,
    annotations=maps,
    resources=resources,
    oom_score_adj=st.none() | st.integers(-1000, 1000),
    cgroups_path=text,
    mounts=st.lists(
        st.builds(Mount, destination=text, source=text, type=text, options=st.tuples(text)),
        max_size=2,
    ).map(tuple),
    devices=st.lists(
        st.builds(Device, path=text, type=st.sampled_from("cbu"), major=ints, minor=ints),
        max_size=2,
    ).map(tuple),
    pid=st.none() | st.integers(1, 1 << 31),
)


def through_a_line(data: Any, cls: type[Any]) -> Any:
    line = yaml_line(data)
    assert "\n" not in line and "\r" not in line
    value, issues = structure(load_document(line, WORKLOAD), cls)
    assert issues == []
    return value


@settings(max_examples=300, deadline=None)
@given(pods)
def test_pods_read_back_as_they_were(pod: Pod) -> None:
    assert through_a_line(pod_data(pod), RecordedPod).domain() == _pod_as_reported(pod)


@settings(max_examples=300, deadline=None)
@given(containers)
def test_containers_read_back_as_they_were(ctr: Container) -> None:
    assert through_a_line(container_data(ctr), RecordedContainer).domain() == ctr


def _pod_as_reported(pod: Pod) -> Pod:
    """The pod as the runtime reports it: the QoS class follows from the cgroup parent."""
    return Pod(
        id=pod.id,
        name=pod.name,
        uid=pod.uid,
        namespace=pod.namespace,
        labels=pod.labels,
        annotations=pod.annotations,
        cgroup_parent=pod.cgroup_parent,
        runtime_handler=pod.runtime_handler,
        resources=pod.resources,
        overhead=pod.overhead,
    )
