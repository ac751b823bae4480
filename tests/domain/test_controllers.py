from __future__ import annotations

from nrirp.adapters.memory import InMemoryHostControl
from nrirp.domain.cache import Cache
from nrirp.domain.control import (
    ControlContext,
    ControllerRegistry,
    Hook,
    HostController,
    RuntimeController,
    enforce,
)
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    HOST_CONTROLLER,
    ContainerState,
    HostChange,
    LinuxResources,
    Mount,
    Scheduling,
    SchedulingPolicy,
    Update,
)

from .support import RecordingController, make_container, make_pod


def setup() -> tuple[Cache, InMemoryHostControl, ControllerRegistry]:
    cache = Cache()
    pod = make_pod("p", cgroup_parent="/kubepods/burstable/podp")
    cache.put_pod(pod)
    cache.put_container(make_container(pod, "new"))
    cache.put_container(make_container(pod, "old", state=ContainerState.RUNNING))
    cache.put_container(make_container(pod, "fresh", state=ContainerState.CREATED))
    host = InMemoryHostControl()
    return cache, host, ControllerRegistry([RuntimeController(), HostController(host)])


def test_create_gives_adjustment_for_subject_and_updates_for_others() -> None:
    cache, _, registry = setup()
    cache.set_cpus("id-p-new", CPUSet.of(2))
    cache.add_creation_extras("id-p-new", env={"X": "1"}, mounts=(Mount("/a", "/b"),))
    cache.set_scheduling("id-p-new", Scheduling(SchedulingPolicy.BATCH))
    cache.set_cpus("id-p-old", CPUSet.parse("3-4"))
    ctx = ControlContext("create", cache)
    enforce(registry, ctx, "id-p-new", Hook.PRE_CREATE)
    assert ctx.adjustment is not None
    assert ctx.adjustment.container_id == "id-p-new"
    assert ctx.adjustment.resources == LinuxResources(cpus=CPUSet.of(2))
    assert ctx.adjustment.env == {"X": "1"}
    assert ctx.adjustment.mounts == (Mount("/a", "/b"),)
    assert ctx.adjustment.scheduling == Scheduling(SchedulingPolicy.BATCH)
    assert ctx.updates == (Update("id-p-old", LinuxResources(cpus=CPUSet.parse("3-4"))),)
    assert cache.pending_containers() == []


def test_host_changes_wait_for_a_running_process() -> None:
    cache, host, registry = setup()
    change = HostChange(cgroup={"memory.high": "500M"})
    cache.set_host_change("id-p-new", change)
    cache.set_host_change("id-p-fresh", change)
    cache.set_host_change("id-p-old", change)
    enforce(registry, ControlContext("create", cache), "id-p-new", Hook.PRE_CREATE)
    # only the running container was touched; the others stay pending
    assert [c.target.container_id for c in host.calls] == ["id-p-old"]
    assert host.calls[0].target.cgroup_parent == "/kubepods/burstable/podp"
    assert {c.name for c in cache.pending_containers()} == {"new", "fresh"}
    # start of "fresh": pre-start still waits, post-start applies
    cache.put_container(cache.require_container("id-p-fresh").with_state(ContainerState.RUNNING))
    enforce(registry, ControlContext("start", cache), "id-p-fresh", Hook.PRE_START)
    assert len(host.calls) == 1
    enforce(registry, ControlContext("post-start", cache), "id-p-fresh", Hook.POST_START)
    assert host.settings["id-p-fresh"] == change
    assert {c.name for c in cache.pending_containers()} == {"new"}


def test_host_failures_are_reported_not_retried() -> None:
    cache, host, registry = setup()
    host.fail_with = "cannot write memory.high: permission denied"
    cache.set_host_change("id-p-old", HostChange(cpu_class="turbo"))
    ctx = ControlContext("event", cache)
    enforce(registry, ctx, None, None)
    assert [n.message for n in ctx.notices] == ["cannot write memory.high: permission denied"]
    assert ctx.notices[0].container_id == "id-p-old"
    assert cache.pending_containers() == []


def test_stopped_containers_get_no_updates_and_host_forgets_them() -> None:
    cache, host, registry = setup()
    cache.set_cpus("id-p-old", CPUSet.of(1))
    cache.put_container(cache.require_container("id-p-old").with_state(ContainerState.STOPPED))
    ctx = ControlContext("stop", cache)
    enforce(registry, ctx, "id-p-old", Hook.POST_STOP)
    assert ctx.updates == ()
    assert [c.action for c in host.calls] == ["forget"]


def test_unknown_controller_mark_is_reported_and_dropped() -> None:
    cache, _, _ = setup()
    cache.set_host_change("id-p-old", HostChange(cpu_class="x"))
    ctx = ControlContext("x", cache)
    enforce(ControllerRegistry([RuntimeController()]), ctx)
    assert "no controller 'host'" in ctx.notices[0].message
    assert cache.pending_containers() == []


def test_controller_that_is_not_done_keeps_its_mark() -> None:
    cache, _, _ = setup()
    log: list[str] = []
    cache.set_host_change("id-p-old", HostChange(cpu_class="x"))
    registry = ControllerRegistry([RecordingController(log, name=HOST_CONTROLLER, done=False)])
    enforce(registry, ControlContext("x", cache))
    assert log == ["host.post_update old"]
    assert [c.name for c in cache.pending_containers()] == ["old"]


def test_updates_for_one_container_merge() -> None:
    ctx = ControlContext("x", Cache())
    ctx.add_update(Update("c", LinuxResources(cpus=CPUSet.of(1), cpu_shares=10)))
    ctx.add_update(Update("c", LinuxResources(cpus=CPUSet.of(2))))
    assert ctx.updates == (Update("c", LinuxResources(cpus=CPUSet.of(2), cpu_shares=10)),)
