"""``ResourceManager.explain``: which container a query names, the refusals remembered for
refused creations and resizes (bounded, failure path only), policies that do not explain,
and that explaining leaves the cache as it was."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import pytest

from nrirp.domain.config import PolicyConfig
from nrirp.domain.model import Container, LinuxResources
from nrirp.domain.pipeline import NotStartedError, OperationFailedError, UnknownContainerError
from nrirp.domain.pipeline.explaining import REFUSALS_KEPT
from nrirp.domain.policy import MetricSample, PolicyContext, PolicyEvent, TopologyZone
from nrirp.domain.policy.explanation import Explanation, Subject, Verdict, explain_with
from nrirp.testing import EngineHarness
from nrirp.testing.builders import besteffort, guaranteed, pod

CONFIG: dict[str, Any] = {"reservedResources": {"cpu": "750m"}}


def engine() -> EngineHarness:
    return EngineHarness.build("topology-aware", machine="box-16", config=CONFIG)


def test_a_container_is_named_by_id_full_name_pod_and_name_or_unique_name() -> None:
    h = engine()
    running = h.run(pod("web", besteffort("app"), namespace="shop"))
    cid = running["app"].id
    m = h.engine.manager
    for query in (cid, "shop/web/app", "web/app", "app", f"  {cid} "):
        explanation = m.explain(query)
        assert explanation.container_id == cid and explanation.label == "shop/web/app"
        assert (explanation.namespace, explanation.pod, explanation.container) == (
            "shop",
            "web",
            "app",
        )


def test_an_explanation_is_named_as_decisions_are_whatever_the_policy_wrote() -> None:
    h = engine()
    running = h.run(pod("web", besteffort("app"), namespace="shop"))
    ctr = h.engine.manager.cache.container(running["app"].id)
    assert ctr is not None
    subject = Subject(ctr, h.engine.manager.cache.pod(ctr.pod_id), True)

    class OwnPolicy:
        def explain(self, subject: Subject) -> Explanation:
            return Explanation("own", "shop/web/app", subject.container.id, Verdict.PLACED, "ok")

    explained = explain_with(OwnPolicy(), "own", subject)
    assert (explained.namespace, explained.pod, explained.container) == ("shop", "web", "app")
    assert explained.summary == "ok" and explained.label == "shop/web/app"
    unexplained = explain_with(object(), "plain", subject)
    assert unexplained.verdict is Verdict.NOT_EXPLAINED and unexplained.label == "shop/web/app"


def test_unknown_and_ambiguous_names_are_refused_with_what_to_give() -> None:
    h = engine()
    h.run(pod("a", besteffort("app")))
    h.run(pod("b", besteffort("app")))
    m = h.engine.manager
    with pytest.raises(UnknownContainerError, match="no container 'nope'"):
        m.explain("nope")
    with pytest.raises(UnknownContainerError, match=r"'app' names 2 containers \(default/a/app"):
        m.explain("app")
    with pytest.raises(UnknownContainerError, match="no container given"):
        m.explain(" ")
    assert m.explain("a/app").label == "default/a/app"


def test_a_refused_creation_is_explained_and_the_cache_is_as_before() -> None:
    h = engine()
    h.run(pod("ok", besteffort("c")))
    h.clock.advance(5)
    h.run(pod("big", guaranteed("c", 40, "64Mi")), refusals=True)
    m = h.engine.manager
    pods, containers, saves, state = m.pods(), m.containers(), h.store.saves, m.describe()
    explanation = m.explain("default/big/c")
    assert explanation.verdict is Verdict.REFUSED
    assert explanation.refusal.startswith("create-container: no pool has 40")
    assert explanation.refused_at == h.clock.now()
    # a verdict of now, which may differ from the refusal's
    note = "the container is not running: it was refused (see refused); explained as if it"
    assert explanation.notes[0] == f"{note} arrived now"
    assert (m.pods(), m.containers(), m.describe()) == (pods, containers, state)
    assert h.store.saves == saves and not m.cache.dirty


def test_a_refused_resize_is_noted_on_the_placed_container() -> None:
    h = engine()
    spec = pod("g", guaranteed("c", 2, "64Mi"))
    h.run(spec)
    with pytest.raises(OperationFailedError):
        h.resize(
            spec, "c", requests={"cpu": 40, "memory": "64Mi"}, limits={"cpu": 40, "memory": "64Mi"}
        )
    explanation = h.engine.manager.explain("default/g/c")
    assert explanation.verdict is Verdict.PLACED
    assert explanation.refusal.startswith("update-container: ")
    assert explanation.placement.startswith("exclusive cpus ")


def test_refusals_are_bounded_oldest_first_forgotten() -> None:
    h = engine()
    for i in range(REFUSALS_KEPT + 3):
        h.run(pod(f"big{i}", guaranteed("c", 40, "64Mi")), refusals=True)
    m = h.engine.manager
    for i in range(3):
        with pytest.raises(UnknownContainerError):
            m.explain(f"default/big{i}/c")
    assert m.explain(f"default/big{REFUSALS_KEPT + 2}/c").verdict is Verdict.REFUSED


def test_explain_needs_a_started_manager() -> None:
    h = EngineHarness.build("topology-aware", machine="box-16", config=CONFIG, start=False)
    with pytest.raises(NotStartedError):
        h.engine.manager.explain("x")


class Silent:
    """A policy without ``explain``."""

    name: ClassVar[str] = "silent"
    description: ClassVar[str] = "decides nothing, explains nothing"
    config_type: ClassVar[type[Any] | None] = None

    def start(self, ctx: PolicyContext, config: PolicyConfig | None) -> None: ...
    def reconfigure(self, config: PolicyConfig) -> None: ...
    def sync(self, added: Sequence[Container], removed: Sequence[Container]) -> None: ...
    def allocate(self, container: Container) -> None: ...
    def release(self, container: Container) -> None: ...
    def update(self, container: Container, resources: LinuxResources) -> None: ...
    def handle_event(self, event: PolicyEvent) -> None: ...
    def topology_zones(self) -> Sequence[TopologyZone]:
        return ()

    def metrics(self) -> Sequence[MetricSample]:
        return ()

    def describe(self) -> Mapping[str, Any]:
        return {}

    def export_state(self) -> Any:
        return None


def test_a_policy_that_does_not_explain_says_so() -> None:
    h = EngineHarness.build(Silent, machine="box-16")
    h.run(pod("a", besteffort("c")))
    explanation = h.engine.manager.explain("default/a/c")
    assert explanation.verdict is Verdict.NOT_EXPLAINED
    assert explanation.summary == "policy silent does not explain its decisions"


def test_a_stopped_container_is_explained_as_if_it_arrived_now() -> None:
    h = engine()
    spec = pod("s", guaranteed("c", 2, "64Mi"))
    running = h.run(spec)
    h.engine.stop_container(spec.sandbox, running["c"])
    explanation = h.engine.manager.explain("default/s/c")
    assert explanation.placement == ""
    assert explanation.notes[0].startswith("the container is stopped: it holds nothing")
    assert explanation.verdict is Verdict.PLACED
