"""Snapshots made from the changes since the previous save (SnapshotSeries)."""

from __future__ import annotations

import gc
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.cache import (
    SNAPSHOT_VERSION,
    Cache,
    EncodedLater,
    Snapshot,
    SnapshotSeries,
    unstructure_snapshot,
)
from nrirp.domain.model import ContainerState

from .cache_ops import CHANGES, TARGETS, change
from .support import make_container, make_pod


def expected(cache: Cache, n: int) -> dict[str, Any]:
    """What the save at this point must hold: the whole cache, listed afresh."""
    return unstructure_snapshot(
        Snapshot(
            version=SNAPSHOT_VERSION,
            policy="p",
            pods=tuple(cache.pods()),
            containers=tuple(cache.containers()),
            policy_data={"p": {"n": n}},
            config={"at": n},
        )
    )


def save(series: SnapshotSeries, cache: Cache, n: int) -> EncodedLater:
    return series.save(
        cache.take_changes(), policy="p", policy_data={"p": {"n": n}}, config={"at": n}
    )


_targets = st.integers(min_value=0, max_value=TARGETS - 1)
steps = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(CHANGES), _targets),
        st.tuples(
            st.sampled_from(("save", "save", "read", "drop", "checkpoint", "rollback", "release")),
            _targets,
        ),
    ),
    min_size=4,
    max_size=60,
)


@settings(max_examples=500, deadline=None)
@given(steps, st.randoms(use_true_random=False))
def test_every_snapshot_is_the_cache_as_it_was_at_its_save(
    operations: list[tuple[str, int]], random: Any
) -> None:
    """Whatever the changes (removals, re-insertions, pods moving, restores, rollbacks), and
    whichever snapshots are kept, read early, late, out of order or never, each one read is
    the whole cache at its save, in the cache's order."""
    cache = Cache()
    for k in range(TARGETS):  # every pod and container there is
        change(cache, "put-pod", k, 0)
        change(cache, "add", k, 0)
    series = SnapshotSeries()
    kept: list[tuple[EncodedLater, dict[str, Any]]] = [
        (save(series, cache, -1), expected(cache, -1))
    ]
    checkpoints = []
    for n, (op, i) in enumerate(operations):
        if op == "save":
            kept.append((save(series, cache, n), expected(cache, n)))
        elif op == "read" and kept:
            later, wanted = kept[i % len(kept)]
            assert dict(later) == wanted
        elif op == "drop" and kept:
            del kept[i % len(kept)]
        elif op == "checkpoint":
            checkpoints.append(cache.checkpoint())
        elif op == "rollback" and checkpoints:
            cache.rollback(checkpoints[0])
            checkpoints.clear()
        elif op == "release" and checkpoints:
            cache.release(checkpoints.pop())
        else:
            change(cache, op, i, n)
    random.shuffle(kept)
    for later, wanted in kept:
        assert dict(later) == wanted
    last = save(series, cache, len(operations))
    assert dict(last) == expected(cache, len(operations))


def test_snapshots_nobody_reads_are_never_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that keeps only the latest snapshot (as ours do) costs the listing of the one
    it reads, and changes do not pile up while nothing is read."""
    made: list[int] = []
    make = SnapshotSeries._make

    def counting(self: SnapshotSeries, saved: Any) -> Snapshot:
        made.append(saved.serial)
        return make(self, saved)

    monkeypatch.setattr(SnapshotSeries, "_make", counting)
    cache = Cache()
    pod = make_pod("p")
    cache.put_pod(pod)
    for k in range(20):
        cache.put_container(make_container(pod, f"c{k}", state=ContainerState.RUNNING))
    series = SnapshotSeries()
    latest = save(series, cache, 0)
    for n in range(1, 2000):
        cache.set_tags(f"id-p-c{n % 20}", n=str(n))
        latest = save(series, cache, n)  # the previous one is dropped unread
        gc.collect(0)
        assert len(series._queue) <= 1  # applied at the next save
    assert made == []
    assert dict(latest) == expected(cache, 1999)
    assert made == [2000]


def test_a_snapshot_kept_while_later_changes_are_applied_is_listed_first() -> None:
    cache = Cache()
    pod = make_pod("p")
    cache.put_pod(pod)
    cache.put_container(make_container(pod, "a"))
    series = SnapshotSeries()
    first = save(series, cache, 1)
    first_expected = expected(cache, 1)
    cache.remove_container("id-p-a")
    second = save(series, cache, 2)
    assert [c["name"] for c in second["containers"]] == []  # applies the first changes too
    assert dict(first) == first_expected


def test_prepare_unstructures_in_steps_with_pauses_between() -> None:
    """A store's writer prepares the snapshot with a pause (stepping aside for requests):
    the same form, with a pause every PAUSE_EVERY objects unstructured."""
    from nrirp.domain.cache.snapshot import PAUSE_EVERY

    cache = Cache()
    pod = make_pod("p")
    cache.put_pod(pod)
    for n in range(3 * PAUSE_EVERY):
        cache.put_container(make_container(pod, f"c{n}"))
    series = SnapshotSeries()
    snapshot = save(series, cache, 1)
    pauses: list[int] = []
    snapshot.prepare(lambda: pauses.append(1))
    assert len(pauses) == 3  # 48 containers (and one pod)
    assert dict(snapshot) == expected(cache, 1)
    snapshot.prepare(lambda: pauses.append(1))  # already made: nothing more
    assert len(pauses) == 3
