"""Affinity annotations: full and shorthand forms, defaults, legacy keys and errors."""

from __future__ import annotations

import pytest

from nrirp.domain.affinity import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    LEGACY_AFFINITY_ANNOTATION,
    LEGACY_ANTI_AFFINITY_ANNOTATION,
    Affinity,
    AffinityError,
    container_affinities,
)
from nrirp.domain.config.expression import Expression
from nrirp.domain.config.expression import Operator as Op
from nrirp.domain.model import Container, Pod
from tests.domain.support import make_container, make_pod
from tests.support.documents import ANNOTATIONS


def pod_with(**annotations: str) -> Pod:
    return make_pod("app", namespace="shop", annotations=annotations)


def affinities_of(name: str = "web", **annotations: str) -> tuple[Affinity, ...]:
    pod = pod_with(**annotations)
    return container_affinities(pod, make_container(pod, name), ANNOTATIONS)


def names_in(*names: str) -> Expression:
    return Expression(key="name", operator=Op.IN, values=names)


def annotate(affinity: str | None = None, anti: str | None = None) -> dict[str, str]:
    out: dict[str, str] = {}
    if affinity is not None:
        out[AFFINITY_ANNOTATION] = affinity
    if anti is not None:
        out[ANTI_AFFINITY_ANNOTATION] = anti
    return out


def read(name: str = "web", **kw: str | None) -> tuple[Affinity, ...]:
    pod = make_pod("app", namespace="shop", annotations=annotate(**kw))
    return container_affinities(pod, make_container(pod, name), ANNOTATIONS)


# ------------------------------------------------------------------ shorthand
def test_shorthand_list_of_names() -> None:
    assert read(affinity="web: [db, cache]\n") == (Affinity(None, names_in("db", "cache"), 1),)


def test_shorthand_single_name() -> None:
    assert read(affinity="web: db") == (Affinity(None, names_in("db"), 1),)


def test_shorthand_anti_affinity_is_negative() -> None:
    assert read(anti="web: [log]") == (Affinity(None, names_in("log"), -1),)


def test_reference_shorthand_example() -> None:
    # docs of the reference: container3 -> container1 (+1), container3/4 away from others (-1)
    text_aff = "container3: [ container1 ]\n"
    text_anti = "container3: [ container2 ]\ncontainer4: [ container2, container3 ]\n"
    # the shorthand is symmetric (the reference's pkg/resmgr/cache/affinity.go): container4's
    # entry also pushes container3 away from container4, and so on
    assert read("container3", affinity=text_aff, anti=text_anti) == (
        Affinity(None, names_in("container1"), 1),
        Affinity(None, names_in("container2"), -1),
        Affinity(None, names_in("container4"), -1),
    )
    assert read("container4", affinity=text_aff, anti=text_anti) == (
        Affinity(None, names_in("container2", "container3"), -1),
    )
    assert read("container1", affinity=text_aff, anti=text_anti) == (
        Affinity(None, names_in("container3"), 1),
    )
    assert read("container2", affinity=text_aff, anti=text_anti) == (
        Affinity(None, names_in("container3"), -1),
        Affinity(None, names_in("container4"), -1),
    )


def test_shorthand_is_symmetric() -> None:
    assert read("db", affinity="web: [db, cache]") == (Affinity(None, names_in("web"), 1),)
    assert read("cache", affinity="web: db") == ()
    assert read("db", affinity="web: db") == (Affinity(None, names_in("web"), 1),)
    assert read("log", anti="web: [log]") == (Affinity(None, names_in("web"), -1),)


def test_both_directions_written_add_up_as_in_the_reference() -> None:
    text = "web: [db]\ndb: [web]\n"
    assert read("db", affinity=text) == (
        Affinity(None, names_in("web"), 1),
        Affinity(None, names_in("web"), 1),
    )


def test_only_names_are_mirrored_not_full_rules() -> None:
    text = "web:\n- db\n- match: {key: name, operator: Equals, values: [cache]}\n  weight: 5\n"
    assert read("db", affinity=text) == (Affinity(None, names_in("web"), 1),)
    assert read("cache", affinity=text) == ()


def test_an_entry_in_error_mirrors_nothing_and_is_reported_only_for_its_container() -> None:
    text = "web:\n- db\n- match: {key: name, operator: Equal, values: [x]}\n"
    assert read("db", affinity=text) == ()
    with pytest.raises(AffinityError, match="web"):
        read("web", affinity=text)


def test_empty_entries_give_nothing() -> None:
    assert read(affinity="web: []") == ()
    assert read(affinity="web:") == ()
    assert read(affinity="") == ()
    assert read(affinity="# nothing\n") == ()


def test_containers_without_an_entry_have_no_affinities() -> None:
    assert read("api", affinity="web: [db]") == ()
    assert affinities_of() == ()


def test_json_values_are_read_too() -> None:
    assert read(affinity='{"web": ["db"]}') == (Affinity(None, names_in("db"), 1),)


def test_numeric_container_names() -> None:
    assert read("123", affinity="123: [db]") == (Affinity(None, names_in("db"), 1),)


# ------------------------------------------------------------------ full form
FULL = """
peter:
- match:
    key: name
    operator: Equals
    values: [sheep]
  weight: 5
- scope:
    key: pod/namespace
    operator: In
    values: [farm, shop]
  match:
    key: labels/kind
    operator: Matches
    values: ["dog-*"]
"""


def test_full_form_rules_with_scope_and_weight_defaults() -> None:
    assert read("peter", affinity=FULL) == (
        Affinity(None, Expression(key="name", operator=Op.EQUALS, values=("sheep",)), 5),
        Affinity(
            Expression(key="pod/namespace", operator=Op.IN, values=("farm", "shop")),
            Expression(key="labels/kind", operator=Op.MATCHES, values=("dog-*",)),
            1,
        ),
    )


def test_full_form_anti_affinity_negates_weights() -> None:
    anti = read("peter", anti=FULL)
    assert [a.weight for a in anti] == [-5, -1]


def test_negative_weight_in_anti_affinity_turns_into_a_pull_as_in_the_reference() -> None:
    text = "web:\n- match: {key: name, operator: Equals, values: [db]}\n  weight: -3\n"
    assert [a.weight for a in read(anti=text)] == [3]
    assert [a.weight for a in read(affinity=text)] == [-3]


def test_zero_weight_means_the_default_as_in_the_reference() -> None:
    text = "web:\n- match: {key: name, operator: Equals, values: [db]}\n  weight: 0\n"
    assert [a.weight for a in read(affinity=text)] == [1]
    assert [a.weight for a in read(anti=text)] == [-1]


def test_weight_limits_are_inclusive() -> None:
    text = "web:\n- match: {operator: AlwaysTrue}\n  weight: 1000\n"
    assert [a.weight for a in read(anti=text.replace("1000", "-1000"))] == [1000]
    assert [a.weight for a in read(affinity=text)] == [1000]


def test_node_wide_scope() -> None:
    text = (
        "web:\n- scope: {operator: AlwaysTrue}\n"
        "  match: {key: pod/labels/app, operator: Equals, values: [cache]}\n"
    )
    (affinity,) = read(affinity=text)
    assert affinity.scope == Expression(operator=Op.ALWAYS_TRUE)


def test_names_and_rules_mixed_keep_their_order() -> None:
    text = "web:\n- db\n- match: {key: labels/x, operator: Exists}\n  weight: 2\n- cache\n"
    assert read(affinity=text) == (
        Affinity(None, names_in("db", "cache"), 1),
        Affinity(None, Expression(key="labels/x", operator=Op.EXISTS), 2),
    )


def test_affinity_and_anti_affinity_together() -> None:
    found = read(affinity="web: [db]", anti="web: [log]")
    assert found == (
        Affinity(None, names_in("db"), 1),
        Affinity(None, names_in("log"), -1),
    )


# ------------------------------------------------------------------ legacy keys
def test_legacy_keys_are_read() -> None:
    pod = make_pod(
        "app",
        annotations={
            LEGACY_AFFINITY_ANNOTATION: "web: [db]",
            LEGACY_ANTI_AFFINITY_ANNOTATION: "web: [log]",
        },
    )
    assert container_affinities(pod, make_container(pod, "web"), ANNOTATIONS) == (
        Affinity(None, names_in("db"), 1),
        Affinity(None, names_in("log"), -1),
    )


def test_new_keys_win_over_legacy_ones_kind_by_kind() -> None:
    pod = make_pod(
        "app",
        annotations={
            AFFINITY_ANNOTATION: "web: [db]",
            LEGACY_AFFINITY_ANNOTATION: "web: [old]",
            LEGACY_ANTI_AFFINITY_ANNOTATION: "web: [log]",
        },
    )
    assert container_affinities(pod, make_container(pod, "web"), ANNOTATIONS) == (
        Affinity(None, names_in("db"), 1),
        Affinity(None, names_in("log"), -1),
    )


def test_other_annotations_are_ignored() -> None:
    pod = make_pod("app", annotations={"resource-policy.nri.io/affinity-x": "{{{"})
    assert container_affinities(pod, make_container(pod, "web"), ANNOTATIONS) == ()


# ------------------------------------------------------------------ errors
def _error(name: str = "web", key: str = AFFINITY_ANNOTATION, text: str = "") -> AffinityError:
    pod = make_pod("app", namespace="shop", annotations={key: text})
    with pytest.raises(AffinityError) as caught:
        container_affinities(pod, make_container(pod, name), ANNOTATIONS)
    return caught.value


ERRORS = [
    ("web: [db", "invalid YAML at line 2, column 1"),
    ("web: {a: 1, a: 2}", "duplicate key"),
    ("- web", 'invalid value ["web"]: expected a mapping of container name to affinities'),
    ("just text", "expected a mapping of container name"),
    ("web: 3", "web: invalid value 3: expected a list of rules or of container names"),
    ("web: {match: {operator: AlwaysTrue}}", "web: invalid value {"),
    ("web: [db, 3]", "web[1]: invalid value 3: expected a container name or a rule"),
    ("web: ['']", "web[0]: invalid value '': expected a container name"),
    ("web: [[db]]", 'web[0]: invalid value ["db"]'),
    ("web:\n- weight: 2\n", "web[0].match: required field missing"),
    (
        "web:\n- match: {operator: AlwaysTrue}\n  weigth: 2\n",
        "web[0].weigth: unknown field",
    ),
    (
        "web:\n- match: {operator: AlwaysTrue, value: [x]}\n",
        "web[0].match.value: unknown field",
    ),
    (
        "web:\n- match: {key: name, operator: Is, values: [db]}\n",
        "web[0].match.operator: invalid value 'Is': expected one of 'Equals'",
    ),
    (
        "web:\n- match: {key: name, operator: Equals, values: [a, b]}\n",
        "web[0].match.values: operator Equals takes exactly one value, got 2",
    ),
    (
        "web:\n- match: {key: name, operator: Exists, values: [a]}\n",
        "web[0].match.values: operator Exists takes no values, got 1",
    ),
    (
        "web:\n- match: {operator: Equals, values: [a]}\n",
        "web[0].match.key: invalid value '': a key is required",
    ),
    (
        "web:\n- match: {operator: AlwaysTrue}\n  weight: 1001\n",
        "web[0].weight: invalid value 1001: must be between -1000 and 1000",
    ),
    (
        "web:\n- match: {operator: AlwaysTrue}\n  weight: -1001\n",
        "web[0].weight: invalid value -1001: must be between -1000 and 1000",
    ),
    (
        "web:\n- match: {operator: AlwaysTrue}\n  weight: '5'\n",
        "web[0].weight: invalid value '5': expected an integer",
    ),
    (
        "web:\n- match: {operator: AlwaysTrue}\n  weight: true\n",
        "web[0].weight: invalid value true: expected an integer",
    ),
    (
        "web:\n- match: {key: name, operator: Matches, values: ['db[']}\n",
        "web[0].match.values: invalid glob pattern 'db[': unclosed character class",
    ),
    (
        "web:\n- scope: {key: name, operator: MatchesAny, values: [ok, 'x\\']}\n"
        "  match: {operator: AlwaysTrue}\n",
        "web[0].scope.values: invalid glob pattern",
    ),
    (
        "web:\n- scope: {key: name, operator: Equal, values: [x]}\n"
        "  match: {operator: AlwaysTrue}\n",
        "web[0].scope.operator: invalid value 'Equal'",
    ),
]


@pytest.mark.parametrize(("text", "problem"), ERRORS)
def test_bad_annotations_raise_naming_annotation_container_and_problem(
    text: str, problem: str
) -> None:
    error = _error(text=text)
    assert error.annotation == AFFINITY_ANNOTATION
    assert error.container == "web"
    assert error.pod == "shop/app"
    message = str(error)
    assert message.startswith(
        f"invalid annotation {AFFINITY_ANNOTATION} of pod shop/app, container 'web': "
    )
    assert problem in message


def test_every_problem_of_an_entry_is_reported() -> None:
    text = (
        "web:\n"
        "- match: {key: name, operator: Matches, values: ['[']}\n"
        "- 7\n"
        "- match: {operator: AlwaysTrue}\n  weight: 2000\n"
    )
    error = _error(text=text)
    assert len(error.problems) == 3
    assert error.problems[0].startswith("web[0].match.values: invalid glob pattern")
    assert error.problems[1].startswith("web[1]: invalid value 7")
    assert error.problems[2].startswith("web[2].weight: invalid value 2000")


def test_errors_name_the_annotation_that_was_read() -> None:
    for key in (
        ANTI_AFFINITY_ANNOTATION,
        LEGACY_AFFINITY_ANNOTATION,
        LEGACY_ANTI_AFFINITY_ANNOTATION,
    ):
        error = _error(key=key, text="web: 3")
        assert error.annotation == key
        assert key in str(error)


def test_only_the_containers_own_entry_is_checked() -> None:
    text = "web: [db]\nbroken: 3\n"
    assert read("web", affinity=text) == (Affinity(None, names_in("db"), 1),)
    error = _error("broken", text=text)
    assert error.container == "broken"
    assert "broken: invalid value 3" in str(error)


def test_errors_are_raised_every_time_not_cached_away() -> None:
    for _ in range(3):
        _error(text="web: 3")


def test_pod_without_namespace_is_named_by_name() -> None:
    pod = Pod(id="pid", name="solo", annotations={AFFINITY_ANNOTATION: "web: 3"})
    ctr = Container(id="cid", pod_id="pid", name="web")
    with pytest.raises(AffinityError, match="of pod solo, container 'web'"):
        container_affinities(pod, ctr, ANNOTATIONS)


def test_affinity_values_check_their_weight() -> None:
    always = Expression(operator=Op.ALWAYS_TRUE)
    with pytest.raises(ValueError, match="out of range"):
        Affinity(None, always, 1001)
    with pytest.raises(ValueError, match="out of range"):
        Affinity(None, always, -1001)
    assert Affinity(None, always).weight == 1
