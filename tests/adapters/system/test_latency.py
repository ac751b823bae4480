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


def test_log_output_moves_to_a_thread_that_waits_for_requests_and_close_flushes() -> None:
    import io
    import logging
    import time

    from nrirp.adapters.nri.stub.scope import HandlerActivity
    from nrirp.adapters.system import configure_logging
    from nrirp.adapters.system.logs import log_in_background

    stream = io.StringIO()
    logger = logging.getLogger("nrirp")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    configure_logging("info", "text", stream)
    try:
        foreground = HandlerActivity()
        background = log_in_background(foreground)
        assert background is not None
        log = logging.getLogger("nrirp.test")
        foreground.started()  # a request is being handled: nothing is written meanwhile
        for n in range(3):
            log.info("line %d", n)
        time.sleep(0.02)
        assert stream.getvalue() == ""
        foreground.finished()
        deadline = time.monotonic() + 5
        while stream.getvalue().count("\n") < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()] == [
            "line 0",
            "line 1",
            "line 2",
        ]
        background.close()
        log.info("after close")  # written at once again
        assert stream.getvalue().splitlines()[-1].endswith("after close")
    finally:
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]
