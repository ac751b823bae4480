"""api helpers: event masks and names, resource setters, adjustment/update builders."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from nrirp.adapters.nri import api
from nrirp.adapters.nri.api import EventMask
from nrirp.adapters.nri.gen import api_pb2

masks = st.integers(min_value=0, max_value=int(api.ALL_EVENTS)).map(EventMask)


def test_event_bits_follow_the_wire_rule() -> None:
    for event in range(1, api_pb2.LAST):
        assert int(EventMask.of(event)) == 1 << (event - 1)
    assert int(api.LEGACY_EVENTS) == 0x7FF and int(api.ALL_EVENTS) == 0x3FFF
    assert EventMask.of(api_pb2.CREATE_CONTAINER) == EventMask.CREATE_CONTAINER == 0x8
    assert EventMask.VALIDATE_CONTAINER_ADJUSTMENT == 1 << 13
    with pytest.raises(ValueError, match="not an NRI event"):
        EventMask.of(api_pb2.LAST)


def test_names_match_go_and_the_dedicated_methods() -> None:
    assert EventMask(0x8 | 0x200).pretty() == "CreateContainer,StopContainer"
    assert api.event_name(api_pb2.UPDATE_POD_SANDBOX) == "UpdatePodSandbox"
    assert api.event_name(99) == "Event(99)"
    assert EventMask(1 << 20 | 1).pretty() == "RunPodSandbox,unknown(0x100000)"
    service = api_pb2.DESCRIPTOR.services_by_name["Plugin"]
    assert set(api.EVENT_NAMES.values()) <= set(service.methods_by_name)


def test_parse_event_mask_accepts_go_names_snake_case_and_groups() -> None:
    assert api.parse_event_mask("CreateContainer, stop_container") == (
        EventMask.CREATE_CONTAINER | EventMask.STOP_CONTAINER
    )
    assert api.parse_event_mask("all") == api.ALL_EVENTS
    assert api.parse_event_mask("pod") == api.POD_EVENTS
    assert api.parse_event_mask("container", "validate-container-adjustment") == (
        api.CONTAINER_EVENTS | EventMask.VALIDATE_CONTAINER_ADJUSTMENT
    )
    assert api.POD_EVENTS | api.CONTAINER_EVENTS | EventMask.VALIDATE_CONTAINER_ADJUSTMENT == (
        api.ALL_EVENTS
    )
    with pytest.raises(ValueError, match="unknown NRI event 'CreateContainr'"):
        api.parse_event_mask("CreateContainr")


@given(masks)
def test_pretty_names_parse_back_to_the_same_mask(mask: EventMask) -> None:
    assert api.parse_event_mask(mask.pretty()) == mask
    assert EventMask.of(*mask.events()) == mask


def test_resource_setters_work_on_adjustments_and_updates_and_keep_zero_values() -> None:
    for message in (api_pb2.ContainerAdjustment(), api_pb2.ContainerUpdate()):
        api.set_cpuset_cpus(message, "0-3")
        api.set_cpuset_mems(message, "1")
        api.set_cpu_shares(message, 0)  # zero is a value, not "unset"
        api.set_cpu_quota(message, -1)
        api.set_cpu_period(message, 100000)
        api.set_cpu_realtime_runtime(message, 5)
        api.set_cpu_realtime_period(message, 6)
        api.set_memory_limit(message, 1 << 30)
        api.set_memory_reservation(message, 1 << 29)
        api.set_memory_swap(message, 1 << 31)
        api.set_memory_kernel(message, 7)
        api.set_memory_kernel_tcp(message, 8)
        api.set_memory_swappiness(message, 0)
        api.set_memory_disable_oom_killer(message)
        api.set_memory_use_hierarchy(message)
        api.add_hugepage_limit(message, "2MB", 1 << 21)
        api.set_blockio_class(message, "slow")
        api.set_rdt_class(message, "gold")
        api.add_unified(message, "memory.high", "1G")
        api.set_pids_limit(message, 100)
        decoded = type(message).FromString(message.SerializeToString())
        res = decoded.linux.resources
        assert (res.cpu.cpus, res.cpu.mems) == ("0-3", "1")
        assert res.cpu.HasField("shares") and res.cpu.shares.value == 0
        assert (res.cpu.quota.value, res.cpu.period.value) == (-1, 100000)
        assert (res.cpu.realtime_runtime.value, res.cpu.realtime_period.value) == (5, 6)
        assert res.memory.limit.value == 1 << 30 and res.memory.reservation.value == 1 << 29
        assert res.memory.swap.value == 1 << 31
        assert (res.memory.kernel.value, res.memory.kernel_tcp.value) == (7, 8)
        assert res.memory.HasField("swappiness") and res.memory.swappiness.value == 0
        assert res.memory.disable_oom_killer.value and res.memory.use_hierarchy.value
        assert [(h.page_size, h.limit) for h in res.hugepage_limits] == [("2MB", 1 << 21)]
        assert (res.blockio_class.value, res.rdt_class.value) == ("slow", "gold")
        assert dict(res.unified) == {"memory.high": "1G"} and res.pids.limit == 100
        assert api.resources(decoded) == res


def test_adjustment_helpers_and_removal_marks() -> None:
    adjust = api_pb2.ContainerAdjustment()
    api.add_annotation(adjust, "a", "1")
    api.remove_annotation(adjust, "b")
    api.add_env(adjust, "X", "y")
    api.remove_env(adjust, "Z")
    api.add_mount(adjust, api_pb2.Mount(destination="/data", source="/srv", type="bind"))
    api.remove_mount(adjust, "/tmp")
    api.add_device(adjust, api_pb2.LinuxDevice(path="/dev/fuse", type="c", major=10, minor=229))
    api.remove_device(adjust, "/dev/kvm")
    api.add_hooks(adjust, api_pb2.Hooks(prestart=[api_pb2.Hook(path="/bin/a")]))
    api.add_hooks(adjust, api_pb2.Hooks(prestart=[api_pb2.Hook(path="/bin/b")]))
    api.add_rlimit(adjust, "RLIMIT_NOFILE", 4096, 1024)
    api.add_cdi_device(adjust, "vendor.com/gpu=0")
    api.set_args(adjust, ["sleep", "1"])
    api.set_args(adjust, ["sleep", "2"])
    api.set_cgroups_path(adjust, "/kubepods/x")
    api.set_oom_score_adj(adjust, 0)
    assert dict(adjust.annotations) == {"a": "1", "-b": ""}
    assert [(e.key, e.value) for e in adjust.env] == [("X", "y"), ("-Z", "")]
    assert [m.destination for m in adjust.mounts] == ["/data", "-/tmp"]
    assert [d.path for d in adjust.linux.devices] == ["/dev/fuse", "-/dev/kvm"]
    assert [h.path for h in adjust.hooks.prestart] == ["/bin/a", "/bin/b"]
    assert [(r.type, r.hard, r.soft) for r in adjust.rlimits] == [("RLIMIT_NOFILE", 4096, 1024)]
    assert [d.name for d in adjust.CDI_devices] == ["vendor.com/gpu=0"]
    assert list(adjust.args) == ["sleep", "2"]
    assert adjust.linux.cgroups_path == "/kubepods/x"
    assert adjust.linux.HasField("oom_score_adj") and adjust.linux.oom_score_adj.value == 0
    assert api.is_marked_for_removal("-b") == ("b", True)
    assert api.is_marked_for_removal("b") == ("b", False)
    assert api.mark_for_removal("k") == "-k"


def test_builders() -> None:
    update = api.container_update(
        "c1", cpus="2", mems="0", shares=2, quota=3, period=4, memory_limit=5, ignore_failure=True
    )
    res = update.linux.resources
    assert update.container_id == "c1" and update.ignore_failure
    assert (res.cpu.cpus, res.cpu.mems, res.cpu.shares.value) == ("2", "0", 2)
    assert (res.cpu.quota.value, res.cpu.period.value, res.memory.limit.value) == (3, 4, 5)
    bare = api.container_update("c2")
    assert bare.linux.HasField("resources") and not bare.linux.resources.HasField("cpu")
    api.set_ignore_failure(bare)
    assert bare.ignore_failure
    with pytest.raises(ValueError, match="container id"):
        api.container_update("")
    adjust = api.container_adjustment(cpus="1", annotations={"k": "v"}, env=[("A", "b")])
    assert adjust.linux.resources.cpu.cpus == "1" and dict(adjust.annotations) == {"k": "v"}
    assert not adjust.linux.resources.HasField("memory")
    assert [(e.key, e.value) for e in adjust.env] == [("A", "b")]
