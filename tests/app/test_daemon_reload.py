"""The daemon's config reloader (issue 9 item 2): the file is read, parsed and validated on a
worker thread while the loop keeps serving, applied on the loop, reloads are coalesced, and
nothing that goes wrong stops the next reload."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import pytest

from nrirp.app.daemon.reload import ConfigReloader, off_loop
from nrirp.domain.config import ConfigError, ConfigProblem
from nrirp.domain.pipeline.results import ReconfigureOutcome
from tests.support.aio import arun


class FakeManager:
    def __init__(self) -> None:
        self.applied: list[Any] = []
        self.threads: list[int] = []

    def reconfigure(self, config: Any) -> ReconfigureOutcome:
        self.threads.append(threading.get_ident())
        self.applied.append(config)
        return ReconfigureOutcome(True, updates=0)


class GatedLoad:
    """A config loader that waits for the test to let it finish."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.calls: list[tuple[str, int]] = []
        self.fail: BaseException | None = None

    def __call__(self, policy: str, path: str, specs: Any) -> Any:
        self.calls.append((path, threading.get_ident()))
        assert self.gate.wait(10)
        if self.fail is not None:
            raise self.fail
        return f"config #{len(self.calls)}"


def reloader(tmp_path: Path, manager: FakeManager, load: GatedLoad) -> ConfigReloader:
    path = tmp_path / "config.yaml"
    path.write_text("{}\n")
    return ConfigReloader(manager, "template", str(path), None, load=load)  # type: ignore[arg-type]


async def until(predicate: Any) -> None:
    while not predicate():
        await asyncio.sleep(0.005)


def test_loading_runs_off_the_loop_and_applying_on_it(tmp_path: Path) -> None:
    manager, load = FakeManager(), GatedLoad()

    async def main() -> None:
        subject = reloader(tmp_path, manager, load)
        loop_thread = threading.get_ident()
        subject.request("SIGHUP")
        await until(lambda: load.calls)
        ticks = 0
        for _ in range(20):  # the loop serves while the load is stuck
            await asyncio.sleep(0)
            ticks += 1
        assert ticks == 20 and manager.applied == []
        load.gate.set()
        await until(lambda: subject.completed == 1)
        assert load.calls[0][1] != loop_thread
        assert manager.applied == ["config #1"] and manager.threads == [loop_thread]

    arun(main)


def test_reloads_asked_for_meanwhile_are_coalesced_into_one(tmp_path: Path) -> None:
    manager, load = FakeManager(), GatedLoad()

    async def main() -> None:
        subject = reloader(tmp_path, manager, load)
        subject.request("SIGHUP")
        await until(lambda: load.calls)
        for trigger in ("SIGHUP", "file change", "SIGHUP"):
            subject.request(trigger)
        load.gate.set()
        await until(lambda: subject.completed == 2)
        await asyncio.sleep(0.05)
        assert len(load.calls) == 2 and manager.applied == ["config #1", "config #2"]

    arun(main)


def test_a_refused_or_broken_load_keeps_the_old_config_and_the_next_reload_works(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manager, load = FakeManager(), GatedLoad()
    load.gate.set()

    async def main() -> None:
        subject = reloader(tmp_path, manager, load)
        load.fail = ConfigError([ConfigProblem("pinCPU", "expected a boolean")])
        subject.request("SIGHUP")
        await until(lambda: subject.completed == 1)
        load.fail = TypeError("a bug in a loader")
        subject.request("SIGHUP")
        await until(lambda: subject.completed == 2)
        load.fail = None
        subject.request("file change")
        await until(lambda: subject.completed == 3)
        assert manager.applied == ["config #3"]

    with caplog.at_level(logging.INFO, logger="nrirp.daemon"):
        arun(main)
    refused, broken = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "not applied, the old one stays: pinCPU: expected a boolean" in refused.getMessage()
    assert refused.exc_info is None  # an ordinary refusal: no traceback
    assert "internal error; the old configuration stays" in broken.getMessage()
    assert broken.exc_info is not None  # a bug: with its traceback


def test_closing_drops_a_reload_in_progress(tmp_path: Path) -> None:
    manager, load = FakeManager(), GatedLoad()

    async def main() -> None:
        subject = reloader(tmp_path, manager, load)
        subject.request("SIGHUP")
        await until(lambda: load.calls)
        await subject.close()  # e.g. SIGTERM while the worker is stuck
        load.gate.set()
        await asyncio.sleep(0.05)
        assert manager.applied == []

    arun(main)


def test_off_loop_hands_back_results_and_exceptions() -> None:
    async def main() -> None:
        assert await off_loop(lambda: threading.get_ident(), "t") != threading.get_ident()
        with pytest.raises(KeyError):
            await off_loop(lambda: {}["x"], "t")

    arun(main)


def test_the_config_is_prepared_on_the_reload_thread_before_it_is_applied(tmp_path: Path) -> None:
    manager, load = FakeManager(), GatedLoad()
    load.gate.set()
    prepared: list[tuple[Any, int]] = []

    async def main() -> None:
        path = tmp_path / "config.yaml"
        path.write_text("{}\n")
        subject = ConfigReloader(
            manager,  # type: ignore[arg-type]
            "template",
            str(path),
            None,  # type: ignore[arg-type]
            load=load,
            prepare=lambda config: prepared.append((config, threading.get_ident())),
        )
        subject.request("SIGHUP")
        await until(lambda: subject.completed == 1)
        assert prepared == [("config #1", load.calls[0][1])]  # the loading thread, not the loop
        assert manager.applied == ["config #1"]

    arun(main)
