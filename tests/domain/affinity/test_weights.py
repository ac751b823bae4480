"""Affinity weights towards the other containers in the cache, and implicit colocation."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.affinity import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    COLOCATION_WEIGHT,
    Affinity,
    affinity_weights,
    container_affinities,
    implicit_affinities,
)
from nrirp.domain.cache.store import Cache
from nrirp.domain.config.expression import Expression
from nrirp.domain.config.expression import Operator as Op
from nrirp.domain.model import Container, ContainerState, Pod
from tests.domain.support import make_container, make_pod
from tests.support.documents import ANNOTATIONS

ALWAYS = Expression(operator=Op.ALWAYS_TRUE)


def name_is(*names: str) -> Expression:
    return Expression(key="name", operator=Op.IN, values=names)


def add(cache: Cache, pod: Pod, *names: str, **kw: Any) -> list[Container]:
    if cache.pod(pod.id) is None:
        cache.put_pod(pod)
    out = []
    for name in names:
        ctr = make_container(pod, name, **kw)
        cache.put_container(ctr)
        out.append(ctr)
    return out


@pytest.fixture
def world() -> tuple[Cache, dict[str, Container]]:
    """Two pods in namespace 'shop' and one in 'bank', each with a few containers."""
    cache = Cache()
    shop1 = make_pod("shop1", namespace="shop", labels={"app": "store"})
    shop2 = make_pod("shop2", namespace="shop", labels={"app": "store"})
    bank = make_pod("bank", namespace="bank", labels={"app": "vault"})
    ctrs: dict[str, Container] = {}
    for pod, names in ((shop1, ("web", "db", "log")), (shop2, ("web", "db")), (bank, ("web",))):
        for ctr in add(cache, pod, *names):
            ctrs[f"{pod.name}/{ctr.name}"] = ctr
    return cache, ctrs


def ids(ctrs: dict[str, Container], weights: dict[str, int]) -> dict[str, int]:
    by_id = {c.id: key for key, c in ctrs.items()}
    return {by_id[i]: w for i, w in weights.items()}


def test_default_scope_is_the_containers_own_pod(world: Any) -> None:
    cache, ctrs = world
    web = ctrs["shop1/web"]
    weights = affinity_weights(cache, web, [Affinity(None, name_is("db"), 3)])
    assert ids(ctrs, weights) == {"shop1/db": 3}  # not shop2/db


def test_explicit_scope_reaches_other_pods(world: Any) -> None:
    cache, ctrs = world
    scope = Expression(key="namespace", operator=Op.EQUALS, values=("shop",))
    weights = affinity_weights(cache, ctrs["shop1/web"], [Affinity(scope, name_is("db"), 3)])
    assert ids(ctrs, weights) == {"shop1/db": 3, "shop2/db": 3}


def test_node_wide_scope(world: Any) -> None:
    cache, ctrs = world
    weights = affinity_weights(cache, ctrs["shop1/db"], [Affinity(ALWAYS, name_is("web"), -2)])
    assert ids(ctrs, weights) == {"shop1/web": -2, "shop2/web": -2, "bank/web": -2}


def test_weights_of_several_affinities_add_up(world: Any) -> None:
    cache, ctrs = world
    affinities = [
        Affinity(None, name_is("db"), 5),
        Affinity(ALWAYS, Expression(key="pod/labels/app", operator=Op.EQUALS, values=("store",))),
        Affinity(ALWAYS, Expression(key="name", operator=Op.MATCHES, values=("l*",)), -4),
    ]
    weights = affinity_weights(cache, ctrs["shop1/web"], affinities)
    assert ids(ctrs, weights) == {
        "shop1/db": 6,
        "shop1/log": -3,
        "shop2/web": 1,
        "shop2/db": 1,
    }


def test_sums_of_zero_are_dropped(world: Any) -> None:
    cache, ctrs = world
    affinities = [Affinity(None, name_is("db"), 2), Affinity(None, name_is("db", "log"), -2)]
    weights = affinity_weights(cache, ctrs["shop1/web"], affinities)
    assert ids(ctrs, weights) == {"shop1/log": -2}


def test_the_container_itself_never_counts(world: Any) -> None:
    cache, ctrs = world
    web = ctrs["shop1/web"]
    weights = affinity_weights(cache, web, [Affinity(ALWAYS, ALWAYS, 1)])
    assert web.id not in weights
    assert len(weights) == 5


def test_inactive_containers_do_not_count(world: Any) -> None:
    cache, ctrs = world
    cache.put_container(ctrs["shop1/db"].with_state(ContainerState.STOPPED))
    cache.put_container(ctrs["shop2/db"].with_state(ContainerState.STALE))
    cache.put_container(ctrs["bank/web"].with_state(ContainerState.RUNNING))
    for scope in (None, ALWAYS):
        weights = affinity_weights(cache, ctrs["shop1/web"], [Affinity(scope, ALWAYS, 1)])
        assert "shop1/db" not in ids(ctrs, weights)
        assert "shop2/db" not in ids(ctrs, weights)
    weights = affinity_weights(cache, ctrs["shop1/web"], [Affinity(ALWAYS, ALWAYS, 1)])
    assert "bank/web" in ids(ctrs, weights)


def test_tags_take_part_in_matching(world: Any) -> None:
    cache, ctrs = world
    cache.put_container(ctrs["bank/web"].with_tags(**{"topology-aware.kind": "exclusive"}))
    match = Expression(key="tags/topology-aware.kind", operator=Op.EQUALS, values=("exclusive",))
    weights = affinity_weights(cache, ctrs["shop1/web"], [Affinity(ALWAYS, match, -7)])
    assert ids(ctrs, weights) == {"bank/web": -7}


def test_a_container_that_is_not_cached_yet(world: Any) -> None:
    cache, ctrs = world
    pod = cache.require_pod(ctrs["shop1/web"].pod_id)
    newcomer = make_container(pod, "new")
    weights = affinity_weights(cache, newcomer, [Affinity(None, name_is("web", "db"), 1)])
    assert ids(ctrs, weights) == {"shop1/web": 1, "shop1/db": 1}


def test_joint_key_scope_across_pods(world: Any) -> None:
    cache, ctrs = world
    scope = Expression(key=":,/pod/namespace,name", operator=Op.MATCHES, values=("shop/*",))
    weights = affinity_weights(cache, ctrs["bank/web"], [Affinity(scope, name_is("web"), 1)])
    assert ids(ctrs, weights) == {"shop1/web": 1, "shop2/web": 1}


# ------------------------------------------------------------------ from annotations
def test_annotations_to_weights_end_to_end() -> None:
    cache = Cache()
    pod = make_pod(
        "zoo",
        annotations={
            AFFINITY_ANNOTATION: (
                "peter:\n- match: {key: name, operator: Equals, values: [sheep]}\n  weight: 5\n"
            ),
            ANTI_AFFINITY_ANNOTATION: "peter: [wolf]\n",
        },
    )
    peter, sheep, wolf, dog = add(cache, pod, "peter", "sheep", "wolf", "dog")
    weights = affinity_weights(cache, peter, container_affinities(pod, peter, ANNOTATIONS))
    assert weights == {sheep.id: 5, wolf.id: -1}
    assert affinity_weights(cache, dog, container_affinities(pod, dog, ANNOTATIONS)) == {}


# ------------------------------------------------------------------ implicit affinities
def test_implicit_affinities() -> None:
    assert implicit_affinities(colocate_pods=False, colocate_namespaces=False) == ()
    (pods,) = implicit_affinities(colocate_pods=True, colocate_namespaces=False)
    assert pods == Affinity(None, ALWAYS, COLOCATION_WEIGHT)
    (namespaces,) = implicit_affinities(colocate_pods=False, colocate_namespaces=True)
    assert namespaces.weight == COLOCATION_WEIGHT == 10
    assert namespaces.same == ("namespace",)


def test_colocate_pods_pulls_towards_the_same_pod(world: Any) -> None:
    cache, ctrs = world
    implicit = implicit_affinities(colocate_pods=True, colocate_namespaces=False)
    weights = affinity_weights(cache, ctrs["shop1/web"], implicit)
    assert ids(ctrs, weights) == {"shop1/db": 10, "shop1/log": 10}


def test_colocate_namespaces_pulls_towards_the_same_namespace(world: Any) -> None:
    cache, ctrs = world
    implicit = implicit_affinities(colocate_pods=False, colocate_namespaces=True)
    assert ids(ctrs, affinity_weights(cache, ctrs["shop2/db"], implicit)) == {
        "shop1/web": 10,
        "shop1/db": 10,
        "shop1/log": 10,
        "shop2/web": 10,
    }
    assert affinity_weights(cache, ctrs["bank/web"], implicit) == {}


def test_both_colocations_add_up_within_a_pod(world: Any) -> None:
    cache, ctrs = world
    implicit = implicit_affinities(colocate_pods=True, colocate_namespaces=True)
    assert ids(ctrs, affinity_weights(cache, ctrs["shop2/db"], implicit)) == {
        "shop1/web": 10,
        "shop1/db": 10,
        "shop1/log": 10,
        "shop2/web": 20,
    }


def test_same_keys_the_container_lacks_match_nothing() -> None:
    cache = Cache()
    pod = make_pod("p")
    (a,) = add(cache, pod, "a")
    same_label = Affinity(ALWAYS, ALWAYS, 1, same=("labels/zone",))
    assert affinity_weights(cache, a, [same_label]) == {}
    cache.put_container(Container(id="c", pod_id=pod.id, name="c", labels={"zone": "x"}))
    cache.put_container(Container(id="d", pod_id=pod.id, name="d", labels={"zone": "x"}))
    cache.put_container(Container(id="e", pod_id=pod.id, name="e", labels={"zone": "y"}))
    assert affinity_weights(cache, cache.require_container("c"), [same_label]) == {"d": 1}


# ------------------------------------------------------------------ cost
class CountingCache(Cache):
    """A cache that counts the container scans affinity_weights makes."""

    def __init__(self) -> None:
        super().__init__()
        self.scans: list[str] = []

    def active_containers(self) -> list[Container]:
        self.scans.append("all")
        return super().active_containers()

    def containers_of(self, pod_id: str) -> list[Container]:
        self.scans.append(pod_id)
        return super().containers_of(pod_id)

    def containers(self, states: Any = None) -> list[Container]:
        self.scans.append("containers")
        return super().containers(states)


def _crowd() -> tuple[CountingCache, Container]:
    cache = CountingCache()
    for index in range(300):
        add(cache, make_pod(f"p{index}"), "a", "b")
    first = cache.require_container("id-p0-a")
    cache.scans.clear()
    return cache, first


def test_no_affinities_means_no_scan() -> None:
    cache, first = _crowd()
    assert affinity_weights(cache, first, []) == {}
    assert affinity_weights(cache, first, ()) == {}
    assert cache.scans == []


def test_pod_scoped_affinities_only_look_at_the_pod() -> None:
    cache, first = _crowd()
    assert affinity_weights(cache, first, [Affinity(None, ALWAYS, 2)]) == {"id-p0-b": 2}
    assert cache.scans == ["id-p0"]


def test_scoped_affinities_look_at_every_active_container() -> None:
    cache, first = _crowd()
    weights = affinity_weights(cache, first, [Affinity(ALWAYS, name_is("b"), 1)])
    assert len(weights) == 300
    assert cache.scans == ["all"]


# ------------------------------------------------------------------ properties
_EXPRESSIONS = st.one_of(
    st.just(ALWAYS),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=2).map(lambda v: name_is(*v)),
    st.sampled_from(["ns0", "ns1"]).map(
        lambda ns: Expression(key="namespace", operator=Op.EQUALS, values=(ns,))
    ),
    st.sampled_from(["?", "[ab]", "*"]).map(
        lambda g: Expression(key="name", operator=Op.MATCHES, values=(g,))
    ),
)
_AFFINITIES = st.builds(
    Affinity,
    st.one_of(st.none(), _EXPRESSIONS),
    _EXPRESSIONS,
    st.integers(-1000, 1000),
    st.sampled_from([(), ("namespace",)]),
)


def _small_cache(layout: list[tuple[int, str, bool]]) -> Cache:
    cache = Cache()
    for index, (ns, name, active) in enumerate(layout):
        pod = make_pod(f"p{index % 3}", namespace=f"ns{ns}")
        state = ContainerState.RUNNING if active else ContainerState.STOPPED
        ctr = Container(id=f"c{index}", pod_id=pod.id, name=name, state=state)
        if cache.pod(pod.id) is None:
            cache.put_pod(pod)
        cache.put_container(ctr)
    return cache


_LAYOUTS = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from(["a", "b", "c"]), st.booleans()),
    min_size=1,
    max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(layout=_LAYOUTS, first=st.lists(_AFFINITIES, max_size=3), second=st.lists(_AFFINITIES))
def test_weights_are_additive_over_affinities(
    layout: list[tuple[int, str, bool]], first: list[Affinity], second: list[Affinity]
) -> None:
    cache = _small_cache(layout)
    ctr = cache.require_container("c0")
    together = affinity_weights(cache, ctr, first + second)
    apart: dict[str, int] = {}
    for part in (first, second):
        for cid, weight in affinity_weights(cache, ctr, part).items():
            apart[cid] = apart.get(cid, 0) + weight
    assert together == {cid: w for cid, w in apart.items() if w}
    assert 0 not in together.values()
    assert ctr.id not in together
    active = {c.id for c in cache.active_containers()}
    assert set(together) <= active


@settings(max_examples=100, deadline=None)
@given(layout=_LAYOUTS, affinities=st.lists(_AFFINITIES, max_size=3))
def test_negated_weights_negate_the_result(
    layout: list[tuple[int, str, bool]], affinities: list[Affinity]
) -> None:
    cache = _small_cache(layout)
    ctr = cache.require_container("c0")
    negated = [Affinity(a.scope, a.match, -a.weight, a.same) for a in affinities]
    plain = affinity_weights(cache, ctr, affinities)
    assert affinity_weights(cache, ctr, negated) == {cid: -w for cid, w in plain.items()}
