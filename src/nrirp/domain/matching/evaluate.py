"""Evaluation of match expressions (``key`` / ``operator`` / ``values``) as the reference does it.

For a key that does not exist, ``Equals``, ``In``, ``Matches``, ``MatchesAny`` and ``Exists`` are
false and their negations true; ``AlwaysTrue`` is always true. So an operator and its negation
never agree. ``Equals``/``NotEqual``/``Matches``/``MatchesNot`` use the first value; with no
value at all nothing is equal to it and nothing matches it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache

from nrirp.domain.config.expression import Expression, Operator
from nrirp.domain.matching.glob import glob_match, glob_problem
from nrirp.domain.matching.globset import GlobSet
from nrirp.domain.matching.keys import KeyResolver, container_reader, key_value
from nrirp.domain.model import Container, Pod

_GLOB_OPERATORS = frozenset(
    {Operator.MATCHES, Operator.MATCHES_NOT, Operator.MATCHES_ANY, Operator.MATCHES_NONE}
)

NEGATIONS = {
    Operator.EQUALS: Operator.NOT_EQUAL,
    Operator.IN: Operator.NOT_IN,
    Operator.EXISTS: Operator.NOT_EXISTS,
    Operator.MATCHES: Operator.MATCHES_NOT,
    Operator.MATCHES_ANY: Operator.MATCHES_NONE,
}
"""Each positive operator and the operator that negates it."""


def _positive(operator: Operator, value: str | None, values: tuple[str, ...]) -> bool:
    if operator is Operator.EXISTS:
        return value is not None
    if value is None:
        return False
    if operator is Operator.EQUALS:
        return bool(values) and value == values[0]
    if operator is Operator.IN:
        return value in values
    if operator is Operator.MATCHES:
        return bool(values) and glob_match(values[0], value)
    return any(glob_match(pattern, value) for pattern in values)  # MatchesAny


_POSITIVE_OF = {negative: positive for positive, negative in NEGATIONS.items()}


def _outcome(operator: Operator, value: str | None, values: tuple[str, ...]) -> bool:
    if operator is Operator.ALWAYS_TRUE:
        return True
    positive = _POSITIVE_OF.get(operator)
    if positive is not None:
        return not _positive(positive, value, values)
    return _positive(operator, value, values)


def evaluate(expression: Expression, subject: KeyResolver) -> bool:
    """Whether ``subject`` satisfies ``expression``."""
    if expression.operator is Operator.ALWAYS_TRUE:
        return True
    return _outcome(expression.operator, key_value(subject, expression.key), expression.values)


ContainerPredicate = Callable[[Container, Pod | None], bool]


def _always(ctr: Container, pod: Pod | None) -> bool:
    return True


def compile_predicate(expression: Expression) -> ContainerPredicate:
    """``expression`` as a function of a container and its pod: the same answer as
    ``evaluate(expression, ContainerKeys(container, pod))``, at a cost that does not grow with
    its values (``In`` looks up a set, ``MatchesAny`` a :class:`GlobSet`). Build it once per
    configuration and keep it: building costs as much as the values are many."""
    operator, values = expression.operator, expression.values
    if operator is Operator.ALWAYS_TRUE:
        return _always
    read = container_reader(expression.key)
    positive = _POSITIVE_OF.get(operator, operator)
    holds: Callable[[str | None], bool]
    if positive is Operator.EXISTS:
        holds = _exists
    else:
        test = _value_test(positive, values)
        holds = lambda value: value is not None and test(value)  # noqa: E731
    if positive is not operator:  # a negation: true where the positive is false
        return lambda ctr, pod: not holds(read(ctr, pod))
    return lambda ctr, pod: holds(read(ctr, pod))


def _exists(value: str | None) -> bool:
    return value is not None


def _never(value: str) -> bool:
    return False


def _value_test(operator: Operator, values: tuple[str, ...]) -> Callable[[str], bool]:
    """The positive ``operator``'s test of a value that exists."""
    if operator is Operator.IN:
        return frozenset(values).__contains__
    if not values:
        return _never  # nothing is equal to no value, and nothing matches it
    if operator is Operator.EQUALS:
        return values[0].__eq__
    if operator is Operator.MATCHES:
        return GlobSet(values[:1]).match
    return GlobSet(values).match  # MatchesAny


@lru_cache(maxsize=1024)
def container_predicate(expression: Expression) -> ContainerPredicate:
    """:func:`compile_predicate`, remembered for the last 1024 expressions (for expressions
    that come and go, such as annotated affinities; a configuration's expressions are better
    compiled once and kept)."""
    return compile_predicate(expression)


def expression_problems(expression: Expression) -> Iterator[str]:
    """What makes ``expression`` unusable beyond its config rules: malformed glob patterns."""
    if expression.operator in _GLOB_OPERATORS:
        for pattern in expression.values:
            problem = glob_problem(pattern)
            if problem is not None:
                yield f"invalid glob pattern {pattern!r}: {problem}"
