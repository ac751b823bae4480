"""The daemon's interpreter tuning: collections paused and frozen around bulk allocations."""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Iterator
from typing import Any

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


@pytest.fixture
def background_log() -> Iterator[tuple[Any, Any, Any]]:
    """The ``nrirp`` loggers' output to a string, moved to a thread that steps aside for a
    :class:`HandlerActivity`: (stream, activity, background output)."""
    import io
    import logging

    from nrirp.adapters.nri.stub.scope import HandlerActivity
    from nrirp.adapters.system import configure_logging
    from nrirp.adapters.system.logs import log_in_background

    stream = io.StringIO()
    logger = logging.getLogger("nrirp")
    saved = (list(logger.handlers), logger.level, logger.propagate)
    configure_logging("info", "text", stream)
    foreground = HandlerActivity()
    background = log_in_background(foreground)
    assert background is not None
    try:
        yield stream, foreground, background
    finally:
        background.close()
        logger.handlers[:] = saved[0]
        logger.setLevel(saved[1])
        logger.propagate = saved[2]


def _lines(stream: Any) -> list[str]:
    return [line.split(": ", 1)[1] for line in stream.getvalue().splitlines()]


def _wait_for(predicate: Callable[[], bool], timeout: float = 5.0) -> bool:
    import time

    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def test_the_lines_of_a_burst_are_written_in_one_batch_once_it_is_over(
    background_log: tuple[Any, Any, Any],
) -> None:
    """Records only wake the thread when it sleeps: the lines of many requests in a row are
    taken once, after them, not one wake-up per line."""
    import logging

    stream, foreground, background = background_log
    log = logging.getLogger("nrirp.test")
    foreground.started()
    for n in range(200):
        log.info("line %d", n)
        foreground.finished()
        foreground.started()  # the next request follows at once: no quiet moment yet
    assert stream.getvalue() == ""
    foreground.finished()
    assert _wait_for(lambda: len(_lines(stream)) == 200)
    assert _lines(stream) == [f"line {n}" for n in range(200)]
    assert background.batches == 1


def test_a_steady_stream_of_requests_has_its_lines_written_without_a_pause(
    background_log: tuple[Any, Any, Any],
) -> None:
    """Requests that never pause for the quiet interval still get their lines written (at
    most ``MAX_DELAY`` late), several at a time, in order."""
    import logging
    import time

    stream, foreground, background = background_log
    log = logging.getLogger("nrirp.test")
    sent = 0
    deadline = time.monotonic() + 10
    while not stream.getvalue() and time.monotonic() < deadline:
        foreground.started()
        log.info("line %d", sent)
        sent += 1
        foreground.finished()
        time.sleep(0.002)  # a new line every few ms: never QUIET seconds without one
    written = _lines(stream)
    assert written, "nothing written while requests kept coming"
    assert written == [f"line {n}" for n in range(len(written))]
    background.close()  # what still waits is written at close
    assert _lines(stream) == [f"line {n}" for n in range(sent)]
    assert background.batches < sent  # taken several at a time, not a wake-up per line


def test_close_writes_what_waits_even_while_a_request_is_handled(
    background_log: tuple[Any, Any, Any],
) -> None:
    import logging

    stream, foreground, background = background_log
    log = logging.getLogger("nrirp.test")
    foreground.started()  # and never finished
    for n in range(5):
        log.info("line %d", n)
    background.close()
    assert _lines(stream) == [f"line {n}" for n in range(5)]
    log.info("after close")  # written at once again
    assert _lines(stream)[-1] == "after close"


def test_close_does_not_wait_for_the_quiet_moment(
    background_log: tuple[Any, Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon stopping while the thread waits for a quiet moment writes at once and ends
    (a pre-launched plugin has little time once the runtime lets it go)."""
    import logging
    import time

    from nrirp.adapters.system import logs

    monkeypatch.setattr(logs, "QUIET", 60.0)
    monkeypatch.setattr(logs, "MAX_DELAY", 120.0)
    stream, _, background = background_log
    logging.getLogger("nrirp.test").info("last words")
    time.sleep(0.1)  # the thread, woken by the line, is waiting for a quiet moment
    background.close(timeout=30)
    assert not background._thread.is_alive()  # ended by close, not by the minute's wait
    assert _lines(stream) == ["last words"]


def test_handler_activity_wakes_a_waiting_thread_when_the_last_handler_finishes() -> None:
    import threading
    import time

    from nrirp.adapters.nri.stub.scope import HandlerActivity

    activity = HandlerActivity()
    assert activity.wait_idle(0) is True
    activity.started()
    activity.started()
    results: list[bool] = []
    waiter = threading.Thread(target=lambda: results.append(activity.wait_idle(10)))
    waiter.start()
    assert _wait_for(lambda: len(activity._waiting) == 1)
    activity.finished()  # one still runs
    time.sleep(0.05)
    assert results == []
    activity.finished()
    waiter.join(5)
    assert results == [True]
    activity.started()  # busy, and nobody finishes: the wait times out
    assert activity.wait_idle(0.01) is False
    activity.finished()
    assert activity.wait_idle(0.01) is True and activity._waiting == []


def test_every_thread_waiting_for_idle_is_woken_by_the_last_handler() -> None:
    """Several background threads wait at once (the log thread, the state writer, the
    recorder): each has its own wake-up, so none can clear another's."""
    import threading

    from nrirp.adapters.nri.stub.scope import HandlerActivity

    activity = HandlerActivity()
    activity.started()
    results: list[bool] = []
    waiters = [
        threading.Thread(target=lambda: results.append(activity.wait_idle(30))) for _ in range(3)
    ]
    for waiter in waiters:
        waiter.start()
    assert _wait_for(lambda: len(activity._waiting) == 3)
    activity.finished()
    for waiter in waiters:
        waiter.join(10)
    assert results == [True, True, True]  # each woken, none left to its 30 s timeout
    assert activity._waiting == []
