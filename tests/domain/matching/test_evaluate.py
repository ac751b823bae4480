"""Expression evaluation: every operator, on present and absent keys, and negation pairs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.config.expression import Expression
from nrirp.domain.config.expression import Operator as Op
from nrirp.domain.matching import (
    NEGATIONS,
    ContainerKeys,
    MappingKeys,
    container_predicate,
    evaluate,
    expression_problems,
)
from tests.domain.support import make_container, make_pod

SUBJECT = MappingKeys({"name": "web-1", "empty": "", "path": "a/b"})


def expr(operator: Op, key: str = "name", *values: str) -> Expression:
    return Expression(key=key, operator=operator, values=values)


CASES = [
    # operator, key, values, on present key "name"="web-1", on absent key
    (Op.EQUALS, ("web-1",), True, False),
    (Op.EQUALS, ("web-2",), False, False),
    (Op.EQUALS, ("web-*",), False, False),  # Equals is not a glob
    (Op.NOT_EQUAL, ("web-1",), False, True),
    (Op.NOT_EQUAL, ("web-2",), True, True),
    (Op.IN, ("db", "web-1"), True, False),
    (Op.IN, ("db", "web"), False, False),
    (Op.IN, (), False, False),
    (Op.NOT_IN, ("db", "web-1"), False, True),
    (Op.NOT_IN, ("db",), True, True),
    (Op.NOT_IN, (), True, True),
    (Op.EXISTS, (), True, False),
    (Op.NOT_EXISTS, (), False, True),
    (Op.ALWAYS_TRUE, (), True, True),
    (Op.MATCHES, ("web-?",), True, False),
    (Op.MATCHES, ("db*",), False, False),
    (Op.MATCHES_NOT, ("web-?",), False, True),
    (Op.MATCHES_NOT, ("db*",), True, True),
    (Op.MATCHES_ANY, ("db*", "w*"), True, False),
    (Op.MATCHES_ANY, ("db*", "x*"), False, False),
    (Op.MATCHES_ANY, (), False, False),
    (Op.MATCHES_NONE, ("db*", "w*"), False, True),
    (Op.MATCHES_NONE, ("db*", "x*"), True, True),
    (Op.MATCHES_NONE, (), True, True),
]


@pytest.mark.parametrize(("operator", "values", "present", "absent"), CASES)
def test_operator_on_present_and_absent_keys(
    operator: Op, values: tuple[str, ...], present: bool, absent: bool
) -> None:
    assert evaluate(expr(operator, "name", *values), SUBJECT) is present
    assert evaluate(expr(operator, "labels/missing", *values), SUBJECT) is absent


def test_every_operator_is_covered() -> None:
    assert {case[0] for case in CASES} == set(Op)


def test_empty_values_are_values() -> None:
    assert evaluate(expr(Op.EXISTS, "empty"), SUBJECT)
    assert evaluate(expr(Op.EQUALS, "empty", ""), SUBJECT)
    assert evaluate(expr(Op.MATCHES, "empty", "*"), SUBJECT)
    assert not evaluate(expr(Op.MATCHES, "empty", "?"), SUBJECT)


def test_single_value_operators_without_a_value() -> None:
    # the config rules reject these; evaluation still answers consistently
    assert not evaluate(expr(Op.EQUALS), SUBJECT)
    assert evaluate(expr(Op.NOT_EQUAL), SUBJECT)
    assert not evaluate(expr(Op.MATCHES), SUBJECT)
    assert evaluate(expr(Op.MATCHES_NOT), SUBJECT)


def test_globs_do_not_cross_slashes_and_malformed_ones_match_nothing() -> None:
    assert not evaluate(expr(Op.MATCHES, "path", "a*"), SUBJECT)
    assert evaluate(expr(Op.MATCHES, "path", "a/*"), SUBJECT)
    assert not evaluate(expr(Op.MATCHES, "name", "[web"), SUBJECT)
    assert evaluate(expr(Op.MATCHES_NOT, "name", "[web"), SUBJECT)


def test_always_true_needs_no_key() -> None:
    assert evaluate(Expression(operator=Op.ALWAYS_TRUE), MappingKeys({}))


def test_joint_keys_in_expressions() -> None:
    pod = make_pod("web", namespace="shop")
    keys = ContainerKeys(make_container(pod, "nginx"), pod)
    assert evaluate(expr(Op.EQUALS, ":,/pod/namespace,name", "shop/nginx"), keys)
    assert evaluate(expr(Op.MATCHES, ":,/pod/namespace,name", "shop/*"), keys)
    assert not evaluate(expr(Op.MATCHES, ":,/pod/namespace,name", "*"), keys)
    assert evaluate(expr(Op.MATCHES, ":pod/namespace:name", "shop:ng*"), keys)
    assert evaluate(expr(Op.IN, ":pod/namespace:name", "x", "shop:nginx"), keys)
    assert evaluate(expr(Op.EXISTS, ":,/labels/x,name"), keys)
    assert evaluate(expr(Op.NOT_EXISTS, ":,/labels/x,labels/y"), keys)


def test_expression_problems_name_malformed_globs() -> None:
    assert list(expression_problems(expr(Op.MATCHES, "name", "web-*"))) == []
    assert list(expression_problems(expr(Op.IN, "name", "["))) == []  # not a glob operator
    problems = list(expression_problems(expr(Op.MATCHES_ANY, "name", "ok*", "[a", "b\\")))
    assert len(problems) == 2
    assert "'[a'" in problems[0] and "unclosed character class" in problems[0]
    assert "'b\\\\'" in problems[1] and "lone" in problems[1]


# ------------------------------------------------------------------ negation pairs
_TEXT = st.text(alphabet="ab*?[]^-\\/x", max_size=5)


@settings(max_examples=400, deadline=None)
@given(
    positive=st.sampled_from(sorted(NEGATIONS)),
    value=_TEXT,
    values=st.lists(_TEXT, max_size=3),
    present=st.booleans(),
)
def test_an_operator_and_its_negation_always_disagree(
    positive: Op, value: str, values: list[str], present: bool
) -> None:
    subject = MappingKeys({"key": value} if present else {})
    given_values = tuple(values)
    if positive in (Op.EQUALS, Op.MATCHES):
        given_values = given_values[:1]
    elif positive is Op.EXISTS:
        given_values = ()
    yes = evaluate(expr(positive, "key", *given_values), subject)
    no = evaluate(expr(NEGATIONS[positive], "key", *given_values), subject)
    assert yes is not no


@settings(max_examples=200, deadline=None)
@given(value=_TEXT, values=st.lists(_TEXT, min_size=1, max_size=3))
def test_in_is_equals_on_any_value_and_matches_any_is_matches_on_any(
    value: str, values: list[str]
) -> None:
    subject = MappingKeys({"key": value})
    assert evaluate(expr(Op.IN, "key", *values), subject) is any(
        evaluate(expr(Op.EQUALS, "key", v), subject) for v in values
    )
    assert evaluate(expr(Op.MATCHES_ANY, "key", *values), subject) is any(
        evaluate(expr(Op.MATCHES, "key", v), subject) for v in values
    )


def test_negations_pair_every_operator_but_always_true() -> None:
    paired = set(NEGATIONS) | set(NEGATIONS.values())
    assert paired == set(Op) - {Op.ALWAYS_TRUE}


# ------------------------------------------------------------------ compiled predicates
_KEYS = st.sampled_from(
    ["name", "namespace", "labels/a", "pod/labels/a", "tags/t", ":,/pod/namespace,name", "nope"]
)
_WORDS = st.sampled_from(["", "a", "b", "ab", "a*", "[ab]", "?", "ns/a", "ns"])


@settings(max_examples=400, deadline=None)
@given(
    operator=st.sampled_from(list(Op)),
    key=_KEYS,
    values=st.lists(_WORDS, max_size=3),
    name=_WORDS,
    namespace=_WORDS,
    label=st.one_of(st.none(), _WORDS),
    with_pod=st.booleans(),
)
def test_container_predicates_answer_as_evaluate(
    operator: Op,
    key: str,
    values: list[str],
    name: str,
    namespace: str,
    label: str | None,
    with_pod: bool,
) -> None:
    labels = {} if label is None else {"a": label}
    pod = make_pod("p", namespace=namespace, labels=labels)
    ctr = make_container(pod, name, labels=labels, tags=labels and {"t": label or ""})
    expression = Expression(key=key, operator=operator, values=tuple(values))
    the_pod = pod if with_pod else None
    expected = evaluate(expression, ContainerKeys(ctr, the_pod))
    assert container_predicate(expression)(ctr, the_pod) is expected
