"""The cache's undo journal (checkpoints, rollback) and its change tracking for saves."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cache import Cache
from nrirp.domain.cpuset import CPUSet

from .cache_ops import CHANGES, POD_NAMES, TARGETS, change
from .support import make_container, make_pod


def state_of(cache: Cache) -> dict[str, Any]:
    """Everything the cache holds, copied (values are immutable: copying the tables is a deep
    copy), and everything derived from it that can be read."""
    pod_ids = [f"id-{name}" for name in POD_NAMES]
    return {
        "pods": [(p.id, p) for p in cache.pods()],
        "containers": [(c.id, c) for c in cache.containers()],
        "by_pod": {pid: [c.id for c in cache.containers_of(pid)] for pid in pod_ids},
        "by_pod_index": dict(cache._by_pod),
        "pending": [c.id for c in cache.pending_containers()],
        "policy_data": copy.deepcopy(cache.all_policy_data()),
        "config": cache.config,
        "dirty": cache.dirty,
    }


_targets = st.integers(min_value=0, max_value=TARGETS - 1)
steps = st.lists(
    st.one_of(  # as many checkpoint operations as changes: rollbacks follow changes often
        st.tuples(st.sampled_from(CHANGES), _targets),
        st.tuples(st.sampled_from(("checkpoint", "checkpoint", "release", "rollback")), _targets),
    ),
    min_size=4,
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(steps)
def test_rollback_gives_back_a_copy_taken_at_the_checkpoint(
    operations: list[tuple[str, int]],
) -> None:
    """Through nested checkpoints, releases and rollbacks in any order, rolling back to a
    checkpoint gives exactly what a copy of everything taken at that checkpoint holds: the same
    pods and containers in the same order, the pod index, the pending changes in order, policy
    data, config and the dirty flag."""
    cache = Cache()
    for k in range(TARGETS):  # every pod and container there is, half with pending changes
        change(cache, "put-pod", k, 0)
        change(cache, "add", k, 0)
        if k % 2:
            change(cache, "cpus", k, k)
    cache.mark_clean()
    open_: list[tuple[Any, dict[str, Any]]] = []
    for n, (op, i) in enumerate(operations):
        if op == "checkpoint":
            open_.append((cache.checkpoint(), state_of(cache)))
        elif op == "release" and open_:
            checkpoint, _ = open_.pop(i % len(open_))
            cache.release(checkpoint)
        elif op == "rollback" and open_:
            at = i % len(open_)
            checkpoint, expected = open_[at]
            del open_[at:]  # it and every checkpoint opened after it are closed
            cache.rollback(checkpoint)
            assert state_of(cache) == expected
        else:
            change(cache, op, i, n)
        pending = [c.id for c in cache.containers() if c.pending.controllers]
        assert [c.id for c in cache.pending_containers()] == pending
        # the place index keeps the tables' order: what a rollback restores the order from
        assert list(cache._containers) == sorted(cache._containers, key=cache._place.__getitem__)
        assert list(cache._pods) == sorted(cache._pods, key=cache._pod_place.__getitem__)
    for checkpoint, _ in reversed(open_):
        cache.release(checkpoint)
    assert cache._journal is None  # nothing recorded once no checkpoint is open


def test_journal_is_kept_only_while_a_checkpoint_is_open() -> None:
    cache = Cache()
    pod = make_pod("a")
    cache.put_pod(pod)
    assert cache._journal is None
    outer = cache.checkpoint()
    cache.put_container(make_container(pod, "x"))
    inner = cache.checkpoint()
    cache.set_cpus("id-a-x", CPUSet.of(1))
    assert cache._journal is not None and len(cache._journal) > 0
    cache.release(inner)
    assert cache._journal is not None  # the outer one may still roll back
    cache.release(outer)
    assert cache._journal is None
    assert cache.require_container("id-a-x").cpus == CPUSet.of(1)


def test_a_closed_checkpoint_is_refused() -> None:
    cache = Cache()
    checkpoint = cache.checkpoint()
    cache.rollback(checkpoint)
    with pytest.raises(ValueError, match="not open"):
        cache.rollback(checkpoint)
    with pytest.raises(ValueError, match="not open"):
        cache.release(checkpoint)


def test_rollback_puts_removed_entries_back_in_their_places() -> None:
    cache = Cache()
    pods = [make_pod(name) for name in "abc"]
    for pod in pods:
        cache.put_pod(pod)
        cache.put_container(make_container(pod, "x"))
    checkpoint = cache.checkpoint()
    cache.remove_container("id-a-x")
    cache.remove_pod("id-b")
    cache.put_pod(make_pod("d"))
    cache.rollback(checkpoint)
    assert [p.name for p in cache.pods()] == ["a", "b", "c"]
    assert [c.id for c in cache.containers()] == ["id-a-x", "id-b-x", "id-c-x"]
    cache.put_container(make_container(pods[0], "y"))  # still appended after the others
    assert [c.id for c in cache.containers()][-1] == "id-a-y"


# ---------------------------------------------------------------- change tracking


def test_take_changes_lists_what_changed_with_current_values_and_places() -> None:
    cache = Cache()
    a, b = make_pod("a"), make_pod("b")
    cache.put_pod(a)
    cache.put_container(make_container(a, "x"))
    first = cache.take_changes()
    assert first.full and [k for k, _, _ in first.pods] == ["id-a"]
    assert cache.take_changes() == type(first)()  # nothing since
    cache.put_pod(b)
    cache.set_cpus("id-a-x", CPUSet.of(2))
    cache.remove_pod("id-a")
    changes = cache.take_changes()
    assert not changes.full
    assert [(k, v) for k, v, _ in changes.pods] == [("id-b", b), ("id-a", None)]
    ((cid, ctr, place),) = changes.containers
    assert cid == "id-a-x" and ctr is cache.container("id-a-x") and place >= 0
    cache.replace_all([a], [], {})
    assert cache.take_changes().full
