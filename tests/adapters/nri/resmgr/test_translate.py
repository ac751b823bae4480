"""Translation between NRI messages and domain values: presence, fields, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.nri.gen import api_pb2
from nrirp.adapters.nri.resmgr.translate import (
    TranslationError,
    adjustment_from_pb,
    adjustment_to_pb,
    container_from_pb,
    pod_from_pb,
    resources_from_pb,
    resources_to_pb,
    update_from_pb,
    update_to_pb,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    Adjustment,
    ContainerState,
    IOPriority,
    IOPriorityClass,
    LinuxResources,
    Mount,
    QOSClass,
    Scheduling,
    SchedulingPolicy,
    Update,
)

INT64 = st.integers(-(1 << 63), (1 << 63) - 1)
UINT64 = st.integers(0, (1 << 64) - 1)
NAMES = st.text("abcdefghijklmnopqrstuvwxyz.-_0123456789", min_size=1, max_size=12)
CPUSETS = st.frozensets(st.integers(0, 300), min_size=1, max_size=20).map(CPUSet.from_ids)


def optional(strategy: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.none() | strategy


RESOURCES = st.builds(
    LinuxResources,
    cpu_shares=optional(UINT64),
    cpu_quota=optional(INT64),
    cpu_period=optional(UINT64),
    cpu_realtime_runtime=optional(INT64),
    cpu_realtime_period=optional(UINT64),
    cpus=optional(CPUSETS),
    mems=optional(CPUSETS),
    memory_limit=optional(INT64),
    memory_reservation=optional(INT64),
    memory_swap=optional(INT64),
    hugepage_limits=st.dictionaries(st.sampled_from(["2MB", "1GB", "64KB"]), UINT64),
    rdt_class=optional(st.text(max_size=8)),
    blockio_class=optional(st.text(max_size=8)),
    unified=st.dictionaries(NAMES, st.text(max_size=8), max_size=3),
    pids_limit=optional(INT64),
)

SCHEDULING = st.builds(
    Scheduling,
    policy=st.sampled_from(list(SchedulingPolicy)),
    nice=optional(st.integers(-20, 19).filter(bool)),
    priority=optional(st.integers(1, 99)),
    flags=st.lists(
        st.sampled_from(
            [
                "reset-on-fork",
                "reclaim",
                "dl-overrun",
                "keep-policy",
                "keep-params",
                "util-clamp-min",
                "util-clamp-max",
            ]
        ),
        unique=True,
        max_size=3,
    ).map(tuple),
    runtime=optional(st.integers(1, 1 << 40)),
    deadline=optional(st.integers(1, 1 << 40)),
    period=optional(st.integers(1, 1 << 40)),
)

ADJUSTMENTS = st.builds(
    Adjustment,
    container_id=NAMES,
    resources=RESOURCES,
    annotations=st.dictionaries(NAMES, st.text(max_size=8), max_size=3),
    env=st.dictionaries(NAMES, st.text(max_size=8), max_size=3),
    mounts=st.lists(
        st.builds(
            Mount,
            destination=NAMES.map(lambda n: "/" + n),
            source=NAMES.map(lambda n: "/src/" + n),
            type=st.sampled_from(["bind", "tmpfs"]),
            options=st.lists(st.sampled_from(["ro", "rbind", "nosuid"]), max_size=3).map(tuple),
        ),
        max_size=2,
        unique_by=lambda m: m.destination,
    ).map(tuple),
    scheduling=optional(SCHEDULING),
    io_priority=optional(
        st.builds(
            IOPriority, io_class=st.sampled_from(list(IOPriorityClass)), priority=st.integers(0, 7)
        )
    ),
)


@settings(max_examples=300)
@given(RESOURCES)
def test_resources_round_trip(resources: LinuxResources) -> None:
    wire = resources_to_pb(resources).SerializeToString()
    assert resources_from_pb(api_pb2.LinuxResources.FromString(wire)) == resources


@settings(max_examples=200)
@given(ADJUSTMENTS)
def test_adjustment_round_trip(adjustment: Adjustment) -> None:
    wire = adjustment_to_pb(adjustment).SerializeToString()
    back = adjustment_from_pb(adjustment.container_id, api_pb2.ContainerAdjustment.FromString(wire))
    assert back == adjustment


@given(st.builds(Update, container_id=NAMES, resources=RESOURCES, ignore_failure=st.booleans()))
def test_update_round_trip(update: Update) -> None:
    wire = update_to_pb(update).SerializeToString()
    assert update_from_pb(api_pb2.ContainerUpdate.FromString(wire)) == update


def test_presence_zero_is_set_and_absent_is_none() -> None:
    pb = api_pb2.LinuxResources()
    pb.cpu.quota.value = 0
    pb.memory.limit.value = 0
    res = resources_from_pb(pb)
    assert res.cpu_quota == 0 and res.memory_limit == 0
    assert res.cpu_shares is None and res.cpu_period is None and res.memory_swap is None
    assert res.set_fields() == ("cpu_quota", "memory_limit")


def test_only_set_fields_are_written() -> None:
    pb = resources_to_pb(LinuxResources(cpus=CPUSet.parse("2-3"), cpu_shares=0))
    assert pb.cpu.cpus == "2-3"
    assert pb.cpu.HasField("shares") and pb.cpu.shares.value == 0
    assert not pb.cpu.HasField("quota") and not pb.cpu.HasField("period")
    assert not pb.HasField("memory") and not pb.HasField("pids")
    assert not pb.HasField("rdt_class") and not pb.HasField("blockio_class")
    empty = adjustment_to_pb(Adjustment("c1"))
    assert empty.ByteSize() == 0  # nothing set, nothing owned in the runtime's merge


def test_out_of_range_values_name_the_field() -> None:
    with pytest.raises(TranslationError, match="cpu shares -1"):
        resources_to_pb(LinuxResources(cpu_shares=-1))
    with pytest.raises(TranslationError, match="memory limit"):
        resources_to_pb(LinuxResources(memory_limit=1 << 64))


def test_bad_cpuset_from_runtime_names_container() -> None:
    pb = api_pb2.Container(id="c1", pod_sandbox_id="p1", name="web")
    pb.linux.resources.cpu.cpus = "0-x"
    with pytest.raises(TranslationError, match=r"container web: invalid cpu.cpus '0-x'"):
        container_from_pb(pb)


def test_unknown_scheduling_flag_is_refused() -> None:
    adj = Adjustment("c1", scheduling=Scheduling(SchedulingPolicy.FIFO, flags=("turbo",)))
    with pytest.raises(TranslationError, match="unknown scheduling flag 'turbo'"):
        adjustment_to_pb(adj)


def test_util_clamp_sets_both_clamp_flags() -> None:
    adj = Adjustment("c1", scheduling=Scheduling(SchedulingPolicy.OTHER, flags=("util-clamp",)))
    flags = list(adjustment_to_pb(adj).linux.scheduler.flags)
    assert flags == [api_pb2.SCHED_FLAG_UTIL_CLAMP_MIN, api_pb2.SCHED_FLAG_UTIL_CLAMP_MAX]


def test_pod_from_pb() -> None:
    pb = api_pb2.PodSandbox(
        id="pod-1",
        name="web",
        uid="u-1",
        namespace="prod",
        labels={"app": "web"},
        annotations={"a": "b"},
        runtime_handler="runc",
    )
    pb.linux.cgroup_parent = "/kubepods/burstable/podu-1"
    pb.linux.pod_resources.cpu.shares.value = 512
    pod = pod_from_pb(pb)
    assert (pod.id, pod.name, pod.uid, pod.namespace) == ("pod-1", "web", "u-1", "prod")
    assert dict(pod.labels) == {"app": "web"} and dict(pod.annotations) == {"a": "b"}
    assert pod.cgroup_parent == "/kubepods/burstable/podu-1"
    assert pod.qos_class is QOSClass.BURSTABLE
    assert pod.runtime_handler == "runc"
    assert pod.resources == LinuxResources(cpu_shares=512)
    assert pod.overhead is None


def test_container_from_pb() -> None:
    pb = api_pb2.Container(
        id="c-1",
        pod_sandbox_id="pod-1",
        name="app",
        state=api_pb2.CONTAINER_RUNNING,
        labels={"l": "1"},
        annotations={"k": "v"},
        pid=4242,
    )
    pb.mounts.add(destination="/data", source="/host", type="bind", options=["rw"])
    pb.linux.cgroups_path = "/kubepods/burstable/pod-1/c-1"
    pb.linux.oom_score_adj.value = 0
    pb.linux.devices.add(path="/dev/null", type="c", major=1, minor=3)
    pb.linux.resources.cpu.shares.value = 102
    pb.linux.resources.cpu.cpus = "0-1"
    pb.linux.resources.memory.limit.value = 64 << 20
    ctr = container_from_pb(pb)
    assert (ctr.id, ctr.pod_id, ctr.name) == ("c-1", "pod-1", "app")
    assert ctr.state is ContainerState.RUNNING
    assert ctr.pid == 4242 and ctr.oom_score_adj == 0
    assert ctr.cgroups_path == "/kubepods/burstable/pod-1/c-1"
    assert ctr.mounts == (Mount("/data", "/host", "bind", ("rw",)),)
    assert [d.path for d in ctr.devices] == ["/dev/null"]
    assert ctr.resources == LinuxResources(
        cpu_shares=102, cpus=CPUSet.parse("0-1"), memory_limit=64 << 20
    )
    bare = container_from_pb(api_pb2.Container(id="c-2", pod_sandbox_id="pod-1"))
    assert bare.pid is None and bare.oom_score_adj is None
    assert bare.state is ContainerState.UNKNOWN and bare.resources.is_empty()


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (api_pb2.CONTAINER_CREATED, ContainerState.CREATED),
        (api_pb2.CONTAINER_PAUSED, ContainerState.PAUSED),
        (api_pb2.CONTAINER_STOPPED, ContainerState.STOPPED),
    ],
)
def test_container_states(state: int, expected: ContainerState) -> None:
    pb = api_pb2.Container(id="c", pod_sandbox_id="p", state=state)  # type: ignore[arg-type]
    assert container_from_pb(pb).state is expected


def test_missing_ids_are_refused() -> None:
    with pytest.raises(TranslationError, match="pod sandbox without an id"):
        pod_from_pb(api_pb2.PodSandbox(name="x"))
    with pytest.raises(TranslationError, match="container without an id"):
        container_from_pb(api_pb2.Container(name="x"))


def _plain_update_pb(update: Update) -> api_pb2.ContainerUpdate:
    """The update built the plain way: its resources message copied in."""
    pb = api_pb2.ContainerUpdate(
        container_id=update.container_id, ignore_failure=update.ignore_failure
    )
    pb.linux.resources.CopyFrom(resources_to_pb(update.resources))
    return pb


CPUSET_ONLY = st.builds(
    LinuxResources, cpus=optional(CPUSETS | st.just(CPUSet())), mems=optional(CPUSETS)
)


@settings(max_examples=200)
@given(
    st.builds(
        Update,
        container_id=NAMES,
        resources=RESOURCES | CPUSET_ONLY,
        ignore_failure=st.booleans(),
    )
)
def test_update_is_written_in_place_with_the_same_content(update: Update) -> None:
    fast, plain = update_to_pb(update), _plain_update_pb(update)
    assert fast == plain  # map entries may be serialized in another order, as protobuf allows
    if update.resources.only_cpusets():
        assert fast.SerializeToString() == plain.SerializeToString()
    assert fast.linux.HasField("resources")  # present even when it sets nothing


def test_objects_of_a_synchronization_share_their_repeated_parts() -> None:
    """Hundreds of containers stay in the cache: a mount seen before is the same object, and
    equal strings (label keys, a pod's name in its containers' labels) are one string."""
    containers = []
    for n in range(3):
        pb = api_pb2.Container(
            id=f"c-{n}",
            pod_sandbox_id="pod-1",
            labels={"io.kubernetes.pod.name": "web"},
            annotations={"io.kubernetes.cri.sandbox-name": "web"},
        )
        pb.mounts.add(destination="/proc", source="proc", type="proc", options=["nosuid"])
        pb.mounts.add(destination="/etc/hosts", source=f"/pods/{n}/hosts", type="bind")
        containers.append(container_from_pb(pb))
    first, second, _ = containers
    assert first.mounts[0] is second.mounts[0]  # /proc: one object
    assert first.mounts[1] != second.mounts[1]  # their own hosts files
    assert second.mounts[1] == Mount("/etc/hosts", "/pods/1/hosts", "bind", ())
    (key,) = first.labels
    (other_key,) = second.labels
    assert key is other_key
    assert first.labels[key] is second.annotations["io.kubernetes.cri.sandbox-name"]


_MOUNT_TEXT = st.one_of(
    st.sampled_from(["", "/etc/hosts", "bind", "proc", "/dev/termination-log"]),
    st.text(max_size=6),
    st.integers(100, 300).map(lambda n: "/var/lib/kubelet/pods/" + "x" * n),  # 1-2 byte sizes
    st.just("/" + "y" * 17000),  # a size of 3 bytes
)


@settings(max_examples=300)
@given(
    st.lists(
        st.tuples(
            _MOUNT_TEXT,
            _MOUNT_TEXT,
            _MOUNT_TEXT,
            st.lists(st.sampled_from(["", "ro", "rbind", "nosuid", "mode=755"]), max_size=3),
        ),
        min_size=1,
        max_size=8,
    )
)
def test_mounts_alike_but_for_their_source_read_as_each_one_says(
    specs: list[tuple[str, str, str, list[str]]],
) -> None:
    """A mount whose wire form without its source was seen before (a container's own mounts
    in every pod) takes destination, type and options from there: each one still reads as
    its own fields say, first seen or not, the source of each its own."""
    for sources in (0, 1):  # the same shapes again, with other sources
        pb = api_pb2.Container(id="c", pod_sandbox_id="p")
        for destination, mount_type, source, options in specs:
            source = f"{source}/{sources}" if sources else source
            pb.mounts.add(destination=destination, type=mount_type, source=source, options=options)
        got = container_from_pb(pb).mounts
        assert got == tuple(
            Mount(m.destination, m.source, m.type, tuple(m.options)) for m in pb.mounts
        )
