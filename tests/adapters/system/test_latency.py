"""The daemon's interpreter tuning: collections paused and frozen around bulk allocations."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator

import pytest

from nrirp.adapters.system.latency import (
    SWITCH_INTERVAL,
    bulk_allocation,
    settle,
    tune_switch_interval,
)


@pytest.fixture(autouse=True)
def _restore_gc() -> Iterator[None]:
    enabled, interval = gc.isenabled(), sys.getswitchinterval()
    yield
    gc.unfreeze()
    if enabled:
        gc.enable()
    sys.setswitchinterval(interval)


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_bulk_allocation_pauses_collection_and_freezes_what_it_made() -> None:
    gc.enable()
    frozen_before = gc.get_freeze_count()
    with bulk_allocation():
        assert not gc.isenabled()
        made = [Node() for _ in range(1000)]
        assert gc.is_tracked(made[0])
    assert gc.isenabled()
    assert gc.get_freeze_count() >= frozen_before + 1000
    assert gc.get_count()[0] < 1000  # nothing left for the next collection to scan


def test_bulk_allocation_leaves_disabled_collection_disabled_and_survives_errors() -> None:
    gc.disable()
    with pytest.raises(RuntimeError), bulk_allocation():
        raise RuntimeError("policy bug")
    assert not gc.isenabled()


def test_settle_collects_cycles_before_freezing() -> None:
    gc.enable()
    a, b = Node(), Node()
    a.other, b.other = b, a
    del a, b
    settle()
    assert gc.get_freeze_count() > 0
    assert not any(type(o) is Node for o in gc.get_objects())  # the cycle was collected


def test_switch_interval() -> None:
    tune_switch_interval()
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL)
