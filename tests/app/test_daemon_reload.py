"""The daemon's one reload path (issue 9 item 2; the config file's and the custom resources'):
the configuration is read, parsed, validated and prepared on a worker thread while the loop
keeps serving, applied on the loop, file reloads are coalesced, a custom resource takes the
same path with its source and generation, listeners hear every reload, and nothing that goes
wrong stops the next reload."""

from __future__ import annotations

import asyncio
import logging
import threading
from pathlib import Path
from typing import Any

import attrs
import pytest

from nrirp.adapters.metrics import RELOAD_RESULTS
from nrirp.app.composition.reloads import (
    RESULTS,
    ConfigReloads,
    ReloadOutcome,
    ReloadRequest,
)
from nrirp.app.daemon.reload import ConfigReloader, off_loop
from nrirp.domain.config import ConfigError, ConfigProblem
from nrirp.domain.pipeline.results import ReconfigureOutcome
from tests.support.aio import arun


class FakeManager:
    def __init__(self) -> None:
        self.applied: list[Any] = []
        self.threads: list[int] = []
        self.config: Any = None
        self.refuse = ""

    def reconfigure(self, config: Any) -> ReconfigureOutcome:
        self.threads.append(threading.get_ident())
        if self.refuse:
            return ReconfigureOutcome(False, self.refuse)
        self.applied.append(config)
        self.config = config
        return ReconfigureOutcome(True, updates=0)


class Listener:
    def __init__(self) -> None:
        self.heard: list[tuple[str, str, str]] = []

    def reload_started(self, request: ReloadRequest) -> None:
        self.heard.append(("started", request.trigger, request.source))

    def reload_ended(self, request: ReloadRequest, outcome: ReloadOutcome) -> None:
        self.heard.append((outcome.result, request.trigger, request.source))


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


def reloader(
    tmp_path: Path, manager: FakeManager, load: GatedLoad, **options: Any
) -> ConfigReloader:
    path = tmp_path / "config.yaml"
    path.write_text("{}\n")
    reloads = ConfigReloads(manager, **options)  # type: ignore[arg-type]
    return ConfigReloader(reloads, "template", str(path), None, load=load)  # type: ignore[arg-type]


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
        subject = reloader(
            tmp_path,
            manager,
            load,
            prepare=lambda config: prepared.append((config, threading.get_ident())),
        )
        subject.request("SIGHUP")
        await until(lambda: subject.completed == 1)
        assert prepared == [("config #1", load.calls[0][1])]  # the loading thread, not the loop
        assert manager.applied == ["config #1"]

    arun(main)


def test_a_custom_resource_takes_the_same_path_and_listeners_hear_every_reload(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """One path for the file and a custom resource: loaded off the loop, serialized (a resource
    waits for the file reload that runs), a configuration in force already not applied again,
    each reload heard by the listeners with its source."""
    manager, load = FakeManager(), GatedLoad()
    listener = Listener()
    resource_threads: list[int] = []

    def resource_load() -> Any:
        resource_threads.append(threading.get_ident())
        return "from the resource"

    async def main() -> None:
        subject = reloader(tmp_path, manager, load)
        subject.reloads.listen(listener)
        subject.request("SIGHUP")
        await until(lambda: load.calls)
        request = ReloadRequest(
            trigger="custom resource K ns/node.n, generation 3",
            source="custom resource K ns/node.n",
            generation=3,
            load=resource_load,
        )
        resource = asyncio.create_task(subject.reloads.reload(request))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not resource.done() and resource_threads == []  # after the file's reload
        load.gate.set()
        outcome = await resource
        assert outcome.applied and outcome.changed
        assert manager.applied == ["config #1", "from the resource"]
        assert resource_threads[0] != threading.get_ident()  # loaded off the loop
        again = await subject.reloads.reload(request)  # SIGHUP on the resource: in force
        assert (again.result, again.changed) == ("applied", False)
        assert manager.applied == ["config #1", "from the resource"]
        manager.refuse = "no CPUs for that"
        refused = await subject.reloads.reload(attrs.evolve(request, load=lambda: "other"))
        assert (refused.result, refused.problems) == ("refused", ("no CPUs for that",))

    with caplog.at_level(logging.INFO, logger="nrirp.daemon"):
        arun(main)
    file = f"file {tmp_path / 'config.yaml'}"
    resource_source = "custom resource K ns/node.n"
    trigger = "custom resource K ns/node.n, generation 3"
    assert listener.heard == [
        ("started", "SIGHUP", file),
        ("applied", "SIGHUP", file),
        ("started", trigger, resource_source),
        ("applied", trigger, resource_source),
        ("started", trigger, resource_source),
        ("applied", trigger, resource_source),
        ("started", trigger, resource_source),
        ("refused", trigger, resource_source),
    ]
    messages = [r.getMessage() for r in caplog.records]
    assert f"reload ({trigger}): configuration applied; 0 container updates" in messages
    assert f"reload ({trigger}): configuration is in force already" in messages


def test_an_internal_error_is_a_failed_reload_and_the_results_are_the_metrics() -> None:
    manager = FakeManager()
    listener = Listener()

    def broken() -> Any:
        raise TypeError("a bug in a loader")

    async def main() -> ReloadOutcome:
        reloads = ConfigReloads(manager)  # type: ignore[arg-type]
        reloads.listen(listener)
        return await reloads.reload(ReloadRequest(trigger="t", source="s", load=broken))

    outcome = arun(main)
    assert outcome.result == "failed" and "TypeError" in outcome.detail
    assert listener.heard[-1] == ("failed", "t", "s")
    assert RESULTS == RELOAD_RESULTS  # every result is counted by the metrics


def test_a_custom_resource_is_loaded_and_prepared_off_the_loop_and_applied_on_it() -> None:
    """The node agent's applier: the resource's document goes through ConfigReloads, so the
    config loader and the policy's preparation run on the reload thread."""
    from nrirp.adapters.fakehw import expected_machine, load_machine
    from nrirp.adapters.kubernetes import ConfigChoice
    from nrirp.app.composition.node_agent import CustomResourceApplier
    from nrirp.domain.pipeline import ResourceManager
    from nrirp.domain.policies import TemplatePolicy, builtin_registry

    manager = ResourceManager(
        policy=TemplatePolicy(), machine=expected_machine(load_machine("box-16"))
    )
    manager.start(None)
    prepared: list[int] = []
    loaded: list[int] = []
    registry = builtin_registry()

    def prepare(config: Any) -> None:
        prepared.append(threading.get_ident())

    def load_spy(*args: Any) -> Any:
        loaded.append(threading.get_ident())
        return real_load(*args)

    from nrirp.app.composition import node_agent

    real_load = node_agent.load_policy_config
    document = {
        "apiVersion": "config.nri/v1alpha1",
        "kind": "TemplatePolicy",
        "metadata": {"name": "node.n1", "namespace": "kube-system", "generation": 4},
        "spec": {"reservedResources": {"cpu": "1"}},
    }
    choice = ConfigChoice.of("TemplatePolicy", "kube-system", document)

    async def main() -> Any:
        applier = CustomResourceApplier(
            ConfigReloads(manager, prepare=prepare), "template", registry
        )
        return await applier(choice), threading.get_ident()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(node_agent, "load_policy_config", load_spy)
        status, loop_thread = arun(main)
    assert status.success and status.errors == ()
    assert manager.config is not None and manager.config.spec.reserved_resources.cpu
    assert loaded and loaded[0] != loop_thread
    assert prepared == loaded  # prepared on the thread that loaded it
