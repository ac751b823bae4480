"""Timer adapters: ManualTimers (virtual time) and ThreadTimers (daemon threads)."""

from __future__ import annotations

import threading

import pytest

from nrirp.adapters.memory import FakeClock, ManualTimers
from nrirp.adapters.system import ThreadTimers, TimersClosedError


# ---------------------------------------------------------------------- ManualTimers
def test_manual_timers_fire_in_due_order_then_scheduling_order() -> None:
    timers = ManualTimers()
    fired: list[str] = []
    timers.call_later(2, lambda: fired.append("b"))
    timers.call_later(1, lambda: fired.append("a"))
    timers.call_later(2, lambda: fired.append("c"))
    timers.call_later(3, lambda: fired.append("d"))
    assert timers.advance(2) == 3
    assert fired == ["a", "b", "c"]
    assert timers.now == 2
    assert [t.due for t in timers.pending()] == [3]
    assert timers.advance(5) == 1
    assert fired == ["a", "b", "c", "d"]


def test_manual_timers_run_callbacks_scheduled_by_callbacks_when_due() -> None:
    timers = ManualTimers()
    fired: list[float] = []

    def again() -> None:
        fired.append(timers.now)
        if len(fired) < 5:
            timers.call_later(1, again)

    timers.call_later(1, again)
    assert timers.advance(3.5) == 3
    assert fired == [1, 2, 3]
    assert timers.now == 3.5
    timers.advance(10)
    assert fired == [1, 2, 3, 4, 5]


def test_manual_timers_cancel_and_flags() -> None:
    timers = ManualTimers()
    fired: list[int] = []
    first = timers.call_later(1, lambda: fired.append(1))
    second = timers.call_later(1, lambda: fired.append(2))
    first.cancel()
    assert timers.pending() == [second]
    timers.advance(1)
    assert fired == [2]
    assert second.fired and not first.fired and first.cancelled
    second.cancel()  # after firing: no effect
    assert fired == [2]


def test_manual_timers_move_a_fake_clock_to_each_due_time() -> None:
    clock = FakeClock()
    start = clock.monotonic()
    timers = ManualTimers(clock)
    seen: list[float] = []
    timers.call_later(30, lambda: seen.append(clock.monotonic() - start))
    timers.advance(45)
    assert seen == [30]
    assert clock.monotonic() - start == 45


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf")])
def test_manual_timers_refuse_bad_times(bad: float) -> None:
    timers = ManualTimers()
    with pytest.raises(ValueError, match="invalid timer delay"):
        timers.call_later(bad, lambda: None)
    with pytest.raises(ValueError, match="invalid advance"):
        timers.advance(bad)
    assert timers.now == 0


# ---------------------------------------------------------------------- ThreadTimers
def test_thread_timers_call_back_on_a_daemon_thread() -> None:
    timers = ThreadTimers()
    called = threading.Event()
    where: list[threading.Thread] = []

    def callback() -> None:
        where.append(threading.current_thread())
        called.set()

    timers.call_later(0.01, callback)
    assert called.wait(5)
    (thread,) = where
    assert thread is not threading.current_thread()
    assert thread.daemon
    thread.join(5)
    assert timers.pending == 0
    timers.close()


def test_thread_timers_cancel_one_and_close_cancels_the_rest() -> None:
    timers = ThreadTimers()
    fired: list[str] = []
    one = timers.call_later(0.2, lambda: fired.append("one"))
    timers.call_later(0.2, lambda: fired.append("two"))
    assert timers.pending == 2
    one.cancel()
    assert one.finished
    assert timers.pending == 1
    timers.close()
    assert timers.pending == 0
    later = threading.Event()
    threading.Timer(0.4, later.set).start()
    later.wait(5)
    assert fired == []
    with pytest.raises(TimersClosedError):
        timers.call_later(0, lambda: None)


def test_thread_timers_survive_a_failing_callback(caplog: pytest.LogCaptureFixture) -> None:
    timers = ThreadTimers()
    done = threading.Event()

    def boom() -> None:
        raise RuntimeError("boom")

    timers.call_later(0, boom)
    timers.call_later(0.05, done.set)
    assert done.wait(5)
    timers.close()
    assert any("timer callback failed" in r.message for r in caplog.records)


def test_thread_timers_refuse_bad_delays() -> None:
    timers = ThreadTimers()
    with pytest.raises(ValueError, match="invalid timer delay"):
        timers.call_later(-1, lambda: None)
    assert timers.pending == 0
