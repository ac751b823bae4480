from __future__ import annotations

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cache import Cache, CacheError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import (
    HOST_CONTROLLER,
    RUNTIME_CONTROLLER,
    ContainerState,
    HostChange,
    policy_key,
)

from .support import make_container, make_pod


def filled() -> Cache:
    cache = Cache()
    a, b = make_pod("a"), make_pod("b")
    cache.put_pod(a)
    cache.put_pod(b)
    cache.put_container(make_container(a, "x"))
    cache.put_container(make_container(a, "y", state=ContainerState.RUNNING))
    cache.put_container(make_container(b, "z", state=ContainerState.STOPPED))
    return cache


def test_lookup_by_id_and_pod() -> None:
    cache = filled()
    assert cache.require_pod("id-a").name == "a"
    assert [c.name for c in cache.containers_of("id-a")] == ["x", "y"]
    assert [c.name for c in cache.containers_of("id-b")] == ["z"]
    assert cache.containers_of("nope") == []
    assert [c.name for c in cache.active_containers()] == ["x", "y"]
    assert [c.name for c in cache.containers([ContainerState.STOPPED])] == ["z"]
    assert cache.pod_of(cache.require_container("id-b-z")).name == "b"
    with pytest.raises(CacheError, match="unknown container 'nope'"):
        cache.require_container("nope")


def test_container_needs_its_pod() -> None:
    cache = Cache()
    with pytest.raises(CacheError, match="unknown pod 'id-p'"):
        cache.put_container(make_container(make_pod("p")))


def test_remove_container_updates_the_pod_index() -> None:
    cache = filled()
    assert cache.remove_container("id-a-x") is not None
    assert [c.name for c in cache.containers_of("id-a")] == ["y"]
    assert cache.remove_container("id-a-x") is None
    cache.remove_container("id-a-y")
    assert cache.containers_of("id-a") == []


def test_setters_record_pending_and_clear() -> None:
    cache = filled()
    cache.set_cpus("id-a-x", CPUSet.of(1))
    cache.set_memory_limit("id-a-y", 1 << 30)
    assert {c.name for c in cache.pending_containers()} == {"x", "y"}
    cache.clear_pending("id-a-x", RUNTIME_CONTROLLER)
    assert [c.name for c in cache.pending_containers()] == ["y"]
    assert cache.require_container("id-a-x").cpus == CPUSet.of(1)


def test_checkpoint_and_rollback_restore_everything() -> None:
    cache = filled()
    cache.set_policy_data("p", {"a": [1]})
    cache.mark_clean()
    before = (cache.pods(), cache.containers(), cache.all_policy_data(), cache.dirty)
    cp = cache.checkpoint()
    cache.set_cpus("id-a-x", CPUSet.of(5))
    cache.remove_container("id-a-y")
    cache.remove_pod("id-b")
    cache.set_policy_data("p", {"a": [2]})
    cache.set_config("new")
    assert cache.dirty
    cache.rollback(cp)
    assert (cache.pods(), cache.containers(), cache.all_policy_data(), cache.dirty) == before
    assert [c.name for c in cache.containers_of("id-a")] == ["x", "y"]
    assert cache.config is None


def test_policy_data_is_copied_both_ways() -> None:
    cache = Cache()
    data = {"pools": [1, 2]}
    cache.set_policy_data("p", data)
    data["pools"].append(3)
    got = cache.policy_data("p")
    assert got == {"pools": [1, 2]}
    got["pools"].append(4)
    assert cache.policy_data("p") == {"pools": [1, 2]}
    cache.set_policy_data("p", None)
    assert cache.policy_data("p") is None


def test_dirty_tracks_real_changes_only() -> None:
    cache = filled()
    cache.mark_clean()
    cache.put_pod(cache.require_pod("id-a"))  # same value
    cache.set_cpu_shares("id-a-x", cache.require_container("id-a-x").resources.cpu_shares or 0)
    assert not cache.dirty
    cache.set_rdt_class("id-a-x", "gold")
    assert cache.dirty


def test_annotations_come_from_the_pod() -> None:
    cache = Cache()
    key = policy_key("prefer-shared-cpus")
    pod = make_pod("p", annotations={f"{key}/container.x": "true", key: "false"})
    cache.put_pod(pod)
    cache.put_container(make_container(pod, "x"))
    cache.put_container(make_container(pod, "y"))
    assert cache.annotations(cache.require_container("id-p-x")).get_bool(key) is True
    assert cache.annotations(cache.require_container("id-p-y")).get_bool(key, True) is False


# ---------------------------------------------------------------- pending index (property)

cache_steps = st.lists(
    st.tuples(
        st.sampled_from(["cpus", "host", "clear-runtime", "clear-host", "remove", "add", "tag"]),
        st.integers(min_value=0, max_value=7),
    ),
    max_size=40,
)


@settings(max_examples=150)
@given(cache_steps, st.lists(st.integers(min_value=0, max_value=39), max_size=3, unique=True))
def test_pending_index_matches_a_scan_in_cache_order(
    steps: list[tuple[str, int]], rollback_at: list[int]
) -> None:
    """The cache keeps the containers with pending changes in an index; what it returns is
    what a scan of every container in insertion order finds, through removals, re-insertions,
    rollbacks and restores."""
    cache = Cache()
    pods = [make_pod(f"p{i}") for i in range(2)]
    for pod in pods:
        cache.put_pod(pod)
    names = [f"c{i}" for i in range(8)]
    for i, name in enumerate(names[:5]):
        cache.put_container(make_container(pods[i % 2], name, state=ContainerState.RUNNING))

    def scan() -> list[str]:
        return [c.id for c in cache.containers() if c.pending.controllers]

    checkpoint = None
    for n, (step, i) in enumerate(steps):
        if n in rollback_at:
            if checkpoint is None:
                checkpoint = cache.checkpoint()
            else:
                cache.rollback(checkpoint)
                checkpoint = None
        cid = f"id-p{i % 2}-{names[i]}"
        known = cache.container(cid) is not None
        if step == "add" and not known:
            cache.put_container(make_container(pods[i % 2], names[i], state=ContainerState.RUNNING))
        elif step == "cpus" and known:
            cache.set_cpus(cid, CPUSet.of(n % 8))
        elif step == "host" and known:
            cache.set_host_change(cid, HostChange(cgroup={"memory.high": str(n)}))
        elif step == "clear-runtime":
            cache.clear_pending(cid, RUNTIME_CONTROLLER)
        elif step == "clear-host":
            cache.clear_pending(cid, HOST_CONTROLLER)
        elif step == "remove":
            cache.remove_container(cid)
        elif step == "tag" and known:
            cache.set_tags(cid, step=str(n))
        assert [c.id for c in cache.pending_containers()] == scan()
    restored = Cache()
    restored.replace_all(cache.pods(), cache.containers(), {})
    assert [c.id for c in restored.pending_containers()] == scan()


def test_a_put_of_an_equal_container_changes_nothing() -> None:
    cache = filled()
    cache.mark_clean()
    ctr = cache.require_container("id-a-x")
    copy = attrs.evolve(ctr)  # equal, not the same object
    assert copy == ctr and copy is not ctr
    cache.put_container(copy)
    assert not cache.dirty and cache.require_container("id-a-x") is ctr
    cache.clear_pending("id-a-x", RUNTIME_CONTROLLER)  # nothing pending: nothing to clear
    assert not cache.dirty


def test_policy_data_view_is_what_was_stored() -> None:
    cache = Cache()
    cache.set_policy_data("p", {"a": [1]})
    view = cache.policy_data_view()
    cache.set_policy_data("p", {"a": [2]})  # replaced, never changed in place
    assert view == {"p": {"a": [1]}}
    assert cache.policy_data_view() == {"p": {"a": [2]}}
