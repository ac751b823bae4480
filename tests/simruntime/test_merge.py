"""Merging plugin replies: ownership, conflicts with Go's wording, removals, version gates."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.adapters.nri.gen import api_pb2
from nrirp.simruntime import AdjustmentConflict, InvalidAdjustment, NriVersion
from nrirp.simruntime.merge import CreateMerge, UpdateCollector
from nrirp.simruntime.owners import OwnerTable

OLD = NriVersion.parse("v0.6.1")
NEW = NriVersion.parse("v0.12.2")


def container() -> api_pb2.Container:
    ctr = api_pb2.Container(
        id="ctr0",
        name="app",
        annotations={"keep": "1", "orig": "o"},
        env=["PATH=/bin", "HOME=/root"],
        args=["/bin/sh"],
    )
    ctr.mounts.add(destination="/data", source="/srv/data", type="bind")
    ctr.mounts.add(destination="/etc/hosts", source="/h", type="bind")
    ctr.linux.devices.add(path="/dev/fuse", type="c", major=10, minor=229)
    ctr.linux.resources.cpu.shares.value = 512
    ctr.linux.resources.cpu.cpus = "0-3"
    ctr.linux.namespaces.add(type="network", path="/proc/1/ns/net")
    return ctr


def reply(**linux_cpu: str) -> api_pb2.CreateContainerResponse:
    out = api_pb2.CreateContainerResponse()
    for name, value in linux_cpu.items():
        setattr(out.adjust.linux.resources.cpu, name, value)
    return out


def merge_of(version: NriVersion = NEW) -> CreateMerge:
    return CreateMerge(container(), version, OwnerTable())


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda a: a.linux.resources.cpu.__setattr__("cpus", "1"), "CPU pinning"),
        (lambda a: a.linux.resources.cpu.__setattr__("mems", "0"), "memory pinning"),
        (lambda a: a.linux.resources.memory.limit.__setattr__("value", 1 << 30), "memory limit"),
        (lambda a: a.linux.resources.cpu.quota.__setattr__("value", 0), "CPU quota"),
        (lambda a: a.annotations.__setitem__("k", "v"), "annotation k"),
        (lambda a: a.env.add(key="K", value="v"), "env K"),
        (lambda a: a.mounts.add(destination="/mnt", source="/x"), "mount /mnt"),
        (lambda a: a.linux.devices.add(path="/dev/x", type="c"), "device /dev/x"),
        (
            lambda a: a.linux.resources.hugepage_limits.add(page_size="2MB", limit=1),
            "hugepage limit of size 2MB",
        ),
        (
            lambda a: a.linux.resources.unified.__setitem__("memory.high", "1"),
            "unified resource memory.high",
        ),
        (lambda a: a.linux.resources.blockio_class.__setattr__("value", "x"), "block I/O class"),
        (lambda a: a.linux.resources.rdt_class.__setattr__("value", "x"), "RDT class"),
        (lambda a: a.linux.__setattr__("cgroups_path", "/x"), "cgroups path"),
        (lambda a: a.rlimits.add(type="RLIMIT_NOFILE", hard=2, soft=1), "rlimit RLIMIT_NOFILE"),
        (lambda a: a.linux.oom_score_adj.__setattr__("value", 5), "OOM score adjustment"),
        (lambda a: a.args.extend(["/bin/true"]), "arguments"),
        (
            lambda a: a.linux.sysctl.__setitem__("net.core.somaxconn", "1"),
            "sysctl net.core.somaxconn",
        ),
    ],
)
def test_two_plugins_setting_one_field_conflict_with_gos_message(build, message) -> None:  # type: ignore[no-untyped-def]
    merge = merge_of()
    first, second = api_pb2.CreateContainerResponse(), api_pb2.CreateContainerResponse()
    build(first.adjust)
    build(second.adjust)
    merge.apply(first, "10-a")
    with pytest.raises(AdjustmentConflict) as conflict:
        merge.apply(second, "20-b")
    assert str(conflict.value) == f'plugins "20-b" and "10-a" both tried to set {message}'
    assert conflict.value.plugin == "20-b" and conflict.value.other == "10-a"


def test_adjustments_are_applied_to_the_container_and_collected() -> None:
    merge = merge_of()
    first = api_pb2.CreateContainerResponse()
    first.adjust.annotations["a"] = "1"
    first.adjust.env.add(key="HOME", value="/home/app")
    first.adjust.mounts.add(destination="/data", source="/other", type="bind")
    first.adjust.linux.resources.cpu.cpus = "2"
    first.adjust.hooks.prestart.add(path="/bin/first")
    merge.apply(first, "10-a")
    second = api_pb2.CreateContainerResponse()
    second.adjust.linux.resources.cpu.mems = "0"
    second.adjust.linux.resources.memory.limit.value = 1 << 28
    second.adjust.hooks.prestart.add(path="/bin/second")  # hooks accumulate, never conflict
    merge.apply(second, "20-b")
    ctr = merge.container
    assert ctr.annotations["a"] == "1" and ctr.annotations["keep"] == "1"
    assert list(ctr.env) == ["PATH=/bin", "HOME=/home/app"]
    assert [(m.destination, m.source) for m in ctr.mounts] == [
        ("/etc/hosts", "/h"),
        ("/data", "/other"),
    ]
    cpu = ctr.linux.resources.cpu
    assert (cpu.cpus, cpu.mems, cpu.shares.value) == ("2", "0", 512)
    assert ctr.linux.resources.memory.limit.value == 1 << 28
    assert [h.path for h in ctr.hooks.prestart] == ["/bin/first", "/bin/second"]
    adjust = merge.adjustment
    assert adjust.linux.resources.cpu.cpus == "2" and adjust.linux.resources.cpu.mems == "0"
    assert not adjust.linux.resources.cpu.HasField("shares")  # only what plugins set
    assert [h.path for h in adjust.hooks.prestart] == ["/bin/first", "/bin/second"]


def test_removals_and_the_remove_then_set_override() -> None:
    merge = merge_of(OLD)
    first = api_pb2.CreateContainerResponse()
    first.adjust.mounts.add(destination="/mnt/test", source="/dev/10-a")
    first.adjust.env.add(key="key", value="10-a")
    merge.apply(first, "10-a")
    second = api_pb2.CreateContainerResponse()
    second.adjust.mounts.add(destination="-/mnt/test")
    second.adjust.mounts.add(destination="/mnt/test", source="/dev/20-b")
    second.adjust.env.add(key="-key")
    second.adjust.env.add(key="key", value="20-b")
    second.adjust.env.add(key="-HOME")
    second.adjust.mounts.add(destination="-/etc/hosts")
    second.adjust.linux.devices.add(path="-/dev/fuse")
    second.adjust.annotations["-orig"] = ""
    merge.apply(second, "20-b")
    ctr = merge.container
    assert [(m.destination, m.source) for m in ctr.mounts] == [
        ("/data", "/srv/data"),
        ("/mnt/test", "/dev/20-b"),
    ]
    assert list(ctr.env) == ["PATH=/bin", "key=20-b"]
    assert list(ctr.linux.devices) == []
    assert "orig" not in ctr.annotations
    assert [(m.destination, m.source) for m in merge.adjustment.mounts] == [
        ("/mnt/test", "/dev/20-b")
    ]
    assert [(e.key, e.value) for e in merge.adjustment.env] == [("key", "20-b")]
    assert merge.adjustment.annotations["-orig"] == ""


def test_a_removed_entry_belongs_to_the_remover_from_v0_10() -> None:
    for version, conflict in ((OLD, False), (NEW, True)):
        merge = merge_of(version)
        first = api_pb2.CreateContainerResponse()
        first.adjust.env.add(key="-HOME")
        merge.apply(first, "10-a")
        second = api_pb2.CreateContainerResponse()
        second.adjust.env.add(key="HOME", value="/x")
        if conflict:
            with pytest.raises(
                AdjustmentConflict, match='"20-b" and "10-a" both tried to set env HOME'
            ):
                merge.apply(second, "20-b")
        else:
            merge.apply(second, "20-b")
            assert "HOME=/x" in merge.container.env


def test_removal_marks_are_kept_in_the_merged_adjustment_from_v0_10() -> None:
    merge = merge_of(NEW)
    removal = api_pb2.CreateContainerResponse()
    removal.adjust.mounts.add(destination="-/etc/hosts")
    removal.adjust.linux.namespaces.add(type="-network")
    merge.apply(removal, "10-a")
    assert [m.destination for m in merge.adjustment.mounts] == ["-/etc/hosts"]
    assert [n.type for n in merge.adjustment.linux.namespaces] == ["-network"]
    assert list(merge.container.linux.namespaces) == []


def test_fields_newer_than_the_emulated_release_are_ignored() -> None:
    adjust = api_pb2.CreateContainerResponse()
    adjust.adjust.args.extend(["/bin/other"])
    adjust.adjust.linux.oom_score_adj.value = 500
    adjust.adjust.linux.sysctl["net.ipv4.ip_forward"] = "1"
    adjust.adjust.linux.resources.pids.limit = 10
    adjust.adjust.rlimits.add(type="RLIMIT_NOFILE", hard=10, soft=10)
    old = merge_of(OLD)
    old.apply(adjust, "10-a")
    assert list(old.container.args) == ["/bin/sh"]
    assert not old.container.linux.HasField("oom_score_adj")
    assert dict(old.container.linux.sysctl) == {}
    assert not old.container.linux.resources.HasField("pids")
    assert [r.type for r in old.container.rlimits] == ["RLIMIT_NOFILE"]  # v0.4
    new = merge_of(NEW)
    new.apply(adjust, "10-a")
    assert list(new.container.args) == ["/bin/other"]
    assert new.container.linux.oom_score_adj.value == 500
    assert dict(new.container.linux.sysctl) == {"net.ipv4.ip_forward": "1"}
    assert new.container.linux.resources.pids.limit == 10


def test_args_with_a_leading_empty_string_override_another_plugin() -> None:
    merge = merge_of(NEW)
    first, second = api_pb2.CreateContainerResponse(), api_pb2.CreateContainerResponse()
    first.adjust.args.extend(["/bin/a"])
    second.adjust.args.extend(["", "/bin/b", "-x"])
    merge.apply(first, "10-a")
    merge.apply(second, "20-b")
    assert list(merge.container.args) == ["/bin/b", "-x"]


def test_updates_are_merged_per_container_and_conflicts_respect_ignore_failure() -> None:
    collector = UpdateCollector(NEW, OwnerTable(), creating="ctr0")
    first = api_pb2.ContainerUpdate(container_id="other")
    first.linux.resources.cpu.cpus = "1"
    collector.merge([first], "10-a")
    second = api_pb2.ContainerUpdate(container_id="other")
    second.linux.resources.cpu.mems = "0"
    collector.merge([second], "20-b")
    clash = api_pb2.ContainerUpdate(container_id="other", ignore_failure=True)
    clash.linux.resources.cpu.cpus = "3"
    collector.merge([clash], "30-c")  # ignored: the first owner keeps the field
    (merged,) = collector.updates
    assert (merged.linux.resources.cpu.cpus, merged.linux.resources.cpu.mems) == ("1", "0")
    assert not merged.ignore_failure  # only ignorable if every contributor said so
    clash.ignore_failure = False
    with pytest.raises(AdjustmentConflict, match="CPU pinning"):
        collector.merge([clash], "30-c")


def test_an_update_of_the_container_being_created_is_an_error() -> None:
    merge = merge_of()
    bad = api_pb2.CreateContainerResponse()
    bad.update.add(container_id="ctr0").linux.resources.cpu.cpus = "1"
    with pytest.raises(InvalidAdjustment) as error:
        merge.apply(bad, "10-a")
    assert str(error.value) == 'plugin "10-a" asked update of "ctr0" during creation'


def test_updates_of_the_updated_container_change_its_request() -> None:
    request = api_pb2.LinuxResources()
    request.cpu.shares.value = 1024
    request.cpu.cpus = "0-3"
    collector = UpdateCollector(NEW, OwnerTable(), target="ctr0", request=request)
    update = api_pb2.ContainerUpdate(container_id="ctr0")
    update.linux.resources.cpu.cpus = "2"
    collector.merge([update], "10-a")
    assert collector.request is not None
    assert (collector.request.cpu.cpus, collector.request.cpu.shares.value) == ("2", 1024)
    assert collector.updates == []


# ----------------------------------------------------------------------------- properties

SIMPLE = {
    "cpus": lambda a, v: a.linux.resources.cpu.__setattr__("cpus", str(v)),
    "mems": lambda a, v: a.linux.resources.cpu.__setattr__("mems", str(v)),
    "shares": lambda a, v: a.linux.resources.cpu.shares.__setattr__("value", v),
    "quota": lambda a, v: a.linux.resources.cpu.quota.__setattr__("value", v),
    "limit": lambda a, v: a.linux.resources.memory.limit.__setattr__("value", v),
    "path": lambda a, v: a.linux.__setattr__("cgroups_path", f"/p{v}"),
}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(sorted(SIMPLE)), st.integers(1, 99), max_size=4),
        min_size=1,
        max_size=4,
    )
)
def test_merging_succeeds_exactly_when_no_field_is_set_twice(
    plugins: list[dict[str, int]],
) -> None:
    merge = merge_of()
    owners: dict[str, str] = {}
    for index, fields in enumerate(plugins):
        name = f"{index:02d}-p"
        response = api_pb2.CreateContainerResponse()
        for field, value in fields.items():
            SIMPLE[field](response.adjust, value)
        clash = sorted(set(fields) & set(owners))
        if clash:
            with pytest.raises(AdjustmentConflict) as conflict:
                merge.apply(response, name)
            assert conflict.value.plugin == name
            assert conflict.value.other in {owners[f] for f in clash}
            return
        merge.apply(response, name)
        owners.update(dict.fromkeys(fields, name))
    # every field ends up with the value of the plugin that owns it
    final = {
        "cpus": merge.container.linux.resources.cpu.cpus,
        "path": merge.container.linux.cgroups_path,
    }
    for index, fields in enumerate(plugins):
        for field, value in fields.items():
            if field == "cpus":
                assert final["cpus"] == str(value)
            if field == "path":
                assert final["path"] == f"/p{value}"
            assert owners[field] == f"{index:02d}-p"
