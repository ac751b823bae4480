from __future__ import annotations

import pytest

from nrirp.domain.cache import Cache, CacheError
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import RUNTIME_CONTROLLER, ContainerState, policy_key

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
