"""The balloons policy explains its choice (docs/explain.md): the type (annotation, first
matching type in list order, default), the fill chain method by method with the balloons each
looked at and their items (fits, free or max free, containers, list position), the sizing,
or the refusal naming what was short. Worked out on demand, it changes nothing."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.domain.policy.explanation import Explanation, Stage, Standing, Verdict
from nrirp.testing import EngineHarness
from nrirp.testing.builders import besteffort, burstable, guaranteed, pod

RESERVED: dict[str, Any] = {"reservedResources": {"cpu": "cpuset:0"}}


def engine(*types: dict[str, Any], machine: str = "box-16", **spec: Any) -> EngineHarness:
    config = {**RESERVED, "balloonTypes": list(types), **spec}
    return EngineHarness.build("balloons", machine=machine, config=config)


def balloon_of(h: EngineHarness, ref: str) -> str:
    return h.container(ref).tags["balloons.balloon"]


def stage(explanation: Explanation, name: str) -> Stage:
    found = explanation.stage(name)
    assert found is not None, [s.name for s in explanation.stages]
    return found


def test_type_by_namespace_expression_annotation_and_default() -> None:
    h = engine(
        {"name": "web", "namespaces": ["web*"]},
        {
            "name": "db",
            "matchExpressions": [{"key": "pod/labels/app", "operator": "In", "values": ["pg"]}],
        },
        {"name": "batch"},
    )
    h.run(pod("w", besteffort("c"), namespace="web-1"))
    h.run(pod("d", besteffort("c"), labels={"app": "pg"}))
    h.run(
        pod("b", besteffort("c"), annotations={"balloon.balloons.resource-policy.nri.io": "batch"})
    )
    h.run(pod("o", besteffort("c")))
    m = h.engine.manager

    web = stage(m.explain("web-1/w/c"), "balloon type")
    assert web.winner == "web" and "first type in list order that matches" in web.outcome
    items = {c.name: {i.name: i.value for i in c.items} for c in web.candidates}
    assert items["web"]["a namespaces glob matches"] is True
    assert items["db"]["a matchExpressions entry matches"] is False
    assert {c.name: c.standing for c in web.candidates}["db"] is Standing.NOT_VIABLE

    db = stage(m.explain("default/d/c"), "balloon type")
    assert db.winner == "db"
    assert {c.name: c for c in db.candidates}["db"].items[0].value is True

    batch = stage(m.explain("default/b/c"), "balloon type")
    assert batch.winner == "batch" and "named by the balloon annotation" in batch.outcome

    other = m.explain("default/o/c")
    assert stage(other, "balloon type").winner == "default"
    assert other.summary.startswith("balloon default[0] of type default")
    assert balloon_of(h, "default/o/c") == "default[0]"


def test_balanced_prefers_more_free_then_fewer_containers_then_list_order() -> None:
    h = engine({"name": "pool", "namespaces": ["p"], "minBalloons": 2, "minCPUs": 2})
    h.run(pod("a", burstable("c", "1500m", "64Mi"), namespace="p"))
    h.run(pod("b", burstable("c", "500m", "64Mi"), namespace="p"))
    explanation = h.engine.manager.explain("p/b/c")
    balanced = stage(explanation, "fill: balanced")
    assert balanced.winner == balloon_of(h, "p/b/c") == "pool[1]"
    assert balanced.deciding is not None
    assert balanced.deciding.item.name == "free mCPU"
    assert balanced.deciding.item.value == 2000 and balanced.deciding.runner_up_value == 500
    assert balanced.deciding.runner_up == "pool[0]"
    assert stage(explanation, "fill: balanced-inflate").outcome.startswith("not tried")
    assert "found by balanced" in explanation.summary

    # equal free: the balloon with fewer containers; equal in both: the first in the list
    h.run(pod("c", besteffort("c"), namespace="p"))
    h.run(pod("d", besteffort("c"), namespace="p"))
    explanation = h.engine.manager.explain("p/d/c")
    balanced = stage(explanation, "fill: balanced")
    assert balanced.deciding is not None, balanced
    assert balanced.deciding.item.name in ("free mCPU", "containers", "list position")
    assert balanced.winner == balloon_of(h, "p/d/c")


def test_same_pod_joins_the_pods_balloon() -> None:
    h = engine({"name": "pool", "namespaces": ["p"], "minBalloons": 2, "minCPUs": 2})
    h.run(pod("a", burstable("x", "200m", "64Mi"), burstable("y", "200m", "64Mi"), namespace="p"))
    explanation = h.engine.manager.explain("p/a/y")
    same_pod = stage(explanation, "fill: same-pod")
    assert same_pod.winner == balloon_of(h, "p/a/x") == balloon_of(h, "p/a/y")
    dropped = [c for c in same_pod.candidates if c.standing is Standing.DROPPED]
    assert all(c.note == "holds no container of its pod" for c in dropped)
    assert "found by same-pod" in explanation.summary


def test_new_balloon_and_sizing() -> None:
    h = engine({"name": "solo", "namespaces": ["s"], "minCPUs": 1, "preferNewBalloons": True})
    h.run(pod("a", guaranteed("c", 2, "64Mi"), namespace="s"))
    explanation = h.engine.manager.explain("s/a/c")
    new = stage(explanation, "fill: new-balloon")
    assert new.winner == balloon_of(h, "s/a/c") == "solo[0]"
    assert "created with 1 CPUs (minCPUs)" in new.outcome
    sizing = stage(explanation, "sizing")
    assert sizing.outcome.startswith("solo[0] inflates from 1 to 2 CPUs for 2000m")


def test_refusal_names_what_was_short() -> None:
    h = engine(
        {"name": "db", "namespaces": ["db"], "minBalloons": 1, "maxBalloons": 1, "minCPUs": 2,
         "maxCPUs": 2},
    )  # fmt: skip
    h.run(pod("one", guaranteed("c", 2, "64Mi"), namespace="db"))
    h.run(pod("two", guaranteed("c", 1, "64Mi"), namespace="db"), refusals=True)
    explanation = h.engine.manager.explain("db/two/c")
    assert explanation.verdict is Verdict.REFUSED
    assert "no suitable db balloon instance available" in explanation.shortage
    assert "db has its maxBalloons (1)" in explanation.shortage
    assert explanation.refusal.startswith("create-container: no suitable db balloon")
    new = stage(explanation, "fill: new-balloon")
    assert new.winner is None and "db has its maxBalloons (1)" in new.outcome
    inflate = stage(explanation, "fill: balanced-inflate")
    [db0] = [c for c in inflate.candidates if c.name == "db[0]"]
    assert db0.standing is Standing.NOT_VIABLE and db0.items[0].value is False
    assert {i.name: i.value for i in db0.items}["max free mCPU"] == 0


def test_preserved_container_is_left_alone() -> None:
    h = engine()
    h.run(pod("p", besteffort("c"), annotations={"cpu.preserve.resource-policy.nri.io": "true"}))
    explanation = h.engine.manager.explain("default/p/c")
    assert explanation.verdict is Verdict.LEFT_ALONE


# ---------------------------------------------------------------------------- properties
SHAPES = st.sampled_from(["be", "bu", "g1", "g2", "web", "web2"])
TYPES = (
    {"name": "web", "namespaces": ["web"], "minCPUs": 1, "maxCPUs": 3, "maxBalloons": 3},
    {"name": "fat", "matchExpressions": [{"key": "qosclass", "operator": "Equals",
                                          "values": ["Guaranteed"]}], "maxCPUs": 4,
     "preferNewBalloons": True},
)  # fmt: skip


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shapes=st.lists(SHAPES, min_size=1, max_size=14))
def test_explanation_of_a_fresh_decision_is_the_decision(shapes: list[str]) -> None:
    """Right after a container is placed, its explanation finds its balloon (the trace and
    the policy agree, no note says otherwise); a refused one is explained as refused; and
    explaining changes nothing: a twin engine that never explained decides the same."""
    h = engine(*TYPES)
    twin = engine(*TYPES)
    for i, shape in enumerate(shapes):
        namespace = "web" if shape.startswith("web") else "default"
        spec = {
            "be": besteffort("c"),
            "bu": burstable("c", "700m", "64Mi"),
            "g1": guaranteed("c", 1, "64Mi"),
            "g2": guaranteed("c", 2, "64Mi"),
            "web": burstable("c", "900m", "64Mi"),
            "web2": burstable("c", "1500m", "64Mi"),
        }[shape]
        made = pod(f"p{i}", spec, namespace=namespace)
        running = h.run(made, refusals=True)
        twin.run(made, refusals=True)
        before = h.engine.manager.describe()
        explanation = h.engine.manager.explain(f"{namespace}/p{i}/c")
        assert h.engine.manager.describe() == before
        if "c" in running.refused:
            assert explanation.verdict is Verdict.REFUSED, explanation
            continue
        assert explanation.verdict is Verdict.PLACED, explanation
        assert not explanation.notes, explanation.notes
        found = [s.winner for s in explanation.stages if s.name.startswith("fill: ") and s.winner]
        assert found == [balloon_of(h, f"{namespace}/p{i}/c")]
    assert h.engine.manager.containers() == twin.engine.manager.containers()
