"""Which type and which balloon a container gets (reference-balloons.md §3.2, §3.3)."""

from __future__ import annotations

import pytest

from nrirp.domain.pipeline import OperationFailedError
from tests.domain.policies.balloons.support import BALLOON_KEY, config, make_rig


# ------------------------------------------------------------------ types
def test_annotation_decides_the_type() -> None:
    types = [{"name": "a"}, {"name": "b", "namespaces": ["*"]}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, c = rig.run("x", 100, annotations={BALLOON_KEY: "a"})
    assert rig.where(c) == "a[0]"
    per_container = {f"{BALLOON_KEY}/container.c": "a", BALLOON_KEY: "b"}
    _, d = rig.run("y", 100, annotations=per_container)
    assert rig.where(d) == "a[0]"  # KEY/container.NAME beats KEY


def test_unknown_annotated_type_fails() -> None:
    rig = make_rig()
    with pytest.raises(OperationFailedError, match=r"no balloon for annotation .*'nope'"):
        rig.run("x", 100, annotations={BALLOON_KEY: "nope"})


def test_first_matching_type_in_list_order() -> None:
    types = [
        {
            "name": "by-label",
            "matchExpressions": [{"key": "pod/labels/app", "operator": "In", "values": ["db"]}],
        },
        {"name": "by-ns", "namespaces": ["prod-*"]},
        {"name": "catch", "namespaces": ["*"]},
    ]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, db = rig.run("db", 100, namespace="prod-1", labels={"app": "db"})
    _, web = rig.run("web", 100, namespace="prod-1", labels={"app": "web"})
    _, other = rig.run("o", 100, namespace="dev")
    _, kube = rig.run("k", 100, namespace="kube-system")
    assert [rig.where(c) for c in (db, web, other, kube)] == [
        "by-label[0]",
        "by-ns[0]",
        "catch[0]",
        "reserved[0]",  # the built-in reserved type comes first
    ]


def test_unmatched_containers_go_to_default() -> None:
    rig = make_rig(cfg=config(balloonTypes=[{"name": "a", "namespaces": ["a"]}]))
    _, c = rig.run("x", 100, namespace="b")
    assert rig.where(c) == "default[0]"


def test_match_expression_wildcards() -> None:
    # Equals * and In [*] match any value of a key that exists
    types = [
        {
            "name": "labelled",
            "matchExpressions": [{"key": "pod/labels/tier", "operator": "Equals", "values": ["*"]}],
        },
    ]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, with_label = rig.run("a", 100, labels={"tier": "x"})
    _, without = rig.run("b", 100)
    assert rig.where(with_label) == "labelled[0]"
    assert rig.where(without) == "default[0]"


# ------------------------------------------------------------------ the fill chain
def test_same_pod_first() -> None:
    types = [{"name": "app", "namespaces": ["app"], "preferNewBalloons": True}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, (a, b) = rig.pod("p", {"a": 500, "b": 500}, namespace="app")
    assert rig.where(a) == rig.where(b) == "app[0]"
    _, (c,) = rig.pod("q", {"c": 500}, namespace="app")
    assert rig.where(c) == "app[1]"  # preferNewBalloons for another pod


def test_prefer_spreading_pods() -> None:
    types = [
        {
            "name": "app",
            "namespaces": ["app"],
            "preferSpreadingPods": True,
            "preferNewBalloons": True,
        }
    ]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, (a, b) = rig.pod("p", {"a": 500, "b": 500}, namespace="app")
    assert (rig.where(a), rig.where(b)) == ("app[0]", "app[1]")


def test_prefer_per_namespace_balloon() -> None:
    types = [{"name": "team", "namespaces": ["team-*"], "preferPerNamespaceBalloon": True}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, a = rig.run("a", 500, namespace="team-a")
    _, b = rig.run("b", 500, namespace="team-b")
    _, c = rig.run("c", 500, namespace="team-a")
    assert [rig.where(x) for x in (a, b, c)] == ["team[0]", "team[1]", "team[0]"]


def test_group_by_shares_balloons_per_group() -> None:
    types = [
        {
            "name": "g",
            "namespaces": ["g"],
            "groupBy": "${pod/labels/app}",
            "preferNewBalloons": True,
        }
    ]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, a = rig.run("a", 300, namespace="g", labels={"app": "x"})
    _, b = rig.run("b", 300, namespace="g", labels={"app": "y"})
    _, c = rig.run("c", 300, namespace="g", labels={"app": "x"})
    _, d = rig.run("d", 300, namespace="g")  # no label: no group to join
    assert [rig.where(x) for x in (a, b, c, d)] == ["g[0]", "g[1]", "g[0]", "g[2]"]
    assert rig.balloon("g[0]").groups == {"x": 2}
    assert rig.balloon("g[2]").groups == {"": 1}  # counted under "" as the reference does


def test_balanced_prefers_the_most_free_then_fewest_containers() -> None:
    types = [{"name": "app", "namespaces": ["app"], "minBalloons": 2, "minCPUs": 2}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, a = rig.run("a", 1500, namespace="app")  # both 2000m free: first in list order
    _, b = rig.run("b", 200, namespace="app")  # app[1] has more free
    _, c = rig.run("c", 200, namespace="app")  # app[1] 1800m > app[0] 500m
    assert [rig.where(x) for x in (a, b, c)] == ["app[0]", "app[1]", "app[1]"]


def test_balanced_inflate_grows_the_balloon_that_can_grow_most() -> None:
    types = [{"name": "app", "namespaces": ["app"], "minBalloons": 2, "maxCPUs": 3}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, a = rig.run("a", 2500, namespace="app")  # app[0] grows to 3 (its max)
    _, b = rig.run("b", 1000, namespace="app")  # app[0] can give 500m: app[1] inflates
    assert (rig.where(a), rig.where(b)) == ("app[0]", "app[1]")
    assert rig.balloon("app[1]").cpus.bit_count() == 1


def test_an_empty_balloon_is_taken_before_a_new_one() -> None:
    types = [{"name": "app", "namespaces": ["app"], "minBalloons": 1, "preferNewBalloons": True}]
    rig = make_rig(cfg=config(balloonTypes=types))
    _, a = rig.run("a", 500, namespace="app")
    _, b = rig.run("b", 500, namespace="app")
    assert (rig.where(a), rig.where(b)) == ("app[0]", "app[1]")


def test_a_refusal_names_the_min_cpus_a_new_balloon_cannot_get() -> None:
    # 15 CPUs are free, yet no balloon of minCPUs 20 can be made: the refusal says why
    types = [{"name": "wide", "namespaces": ["x"], "minCPUs": 20}]
    rig = make_rig(cfg=config(balloonTypes=types))
    with pytest.raises(OperationFailedError, match=r"wide needs minCPUs \(20\) for a new balloon"):
        rig.run("a", 1000, namespace="x")


def test_a_refusal_names_the_max_cpus_below_the_request() -> None:
    # a request above maxCPUs: a new balloon could never hold it (it is not kept)
    types = [{"name": "small", "namespaces": ["x"], "maxCPUs": 2}]
    rig = make_rig(cfg=config(balloonTypes=types))
    with pytest.raises(OperationFailedError, match=r"small balloons have at most maxCPUs \(2\)"):
        rig.run("a", 3000, namespace="x")
