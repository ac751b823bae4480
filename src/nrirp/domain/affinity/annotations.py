"""Affinities from pod annotations, in the reference's full and shorthand forms.

The value of ``resource-policy.nri.io/affinity`` (and ``.../anti-affinity``) is YAML (read by
the :class:`~nrirp.domain.ports.documents.AnnotationParser` the caller passes) keyed by
container name. An entry is a list of rules ``{scope, match, weight}``, or the shorthand: a
list of container names (or one name) of the same pod. The shorthand is symmetric, as in the
reference: ``a: [b]`` also gives ``b`` the same affinity towards ``a``. Anti-affinity weights
are negated. The legacy ``cri-resource-manager.intel.com/`` keys are read when the new ones are
absent.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

import attrs

from nrirp.domain.affinity.model import MAX_WEIGHT, MIN_WEIGHT, Affinity, AffinityError
from nrirp.domain.config.converter import structure
from nrirp.domain.config.errors import Issue, Path, format_path, quote
from nrirp.domain.config.expression import Expression, Operator
from nrirp.domain.config.validation import check_range
from nrirp.domain.matching import expression_problems
from nrirp.domain.model import Container, Pod
from nrirp.domain.ports.documents import AnnotationParser, DocumentError

AFFINITY_ANNOTATION = "resource-policy.nri.io/affinity"
ANTI_AFFINITY_ANNOTATION = "resource-policy.nri.io/anti-affinity"
LEGACY_AFFINITY_ANNOTATION = "cri-resource-manager.intel.com/affinity"
LEGACY_ANTI_AFFINITY_ANNOTATION = "cri-resource-manager.intel.com/anti-affinity"

_KINDS = (
    ((AFFINITY_ANNOTATION, LEGACY_AFFINITY_ANNOTATION), 1),
    ((ANTI_AFFINITY_ANNOTATION, LEGACY_ANTI_AFFINITY_ANNOTATION), -1),
)


@attrs.frozen(kw_only=True)
class AffinityRule:
    """One rule of the full form, as written (weight unsigned, ``None`` scope = own pod)."""

    scope: Expression | None = None
    match: Expression
    weight: int | None = None

    def config_problems(self) -> Iterator[Issue]:
        yield from check_range(self, "weight", MIN_WEIGHT, MAX_WEIGHT)


class _Invalid(ValueError):
    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def _problem(path: Path, message: str) -> str:
    return f"{format_path(path)}: {message}" if path else message


def _rule(item: Any, path: Path, sign: int) -> tuple[Affinity | None, list[str]]:
    rule, issues = structure(item, AffinityRule)
    if rule is None:
        return None, [_problem((*path, *where), message) for where, message in issues]
    found: list[Issue] = []
    for name, expression in (("scope", rule.scope), ("match", rule.match)):
        if expression is not None:
            found.extend(((name, "values"), p) for p in expression_problems(expression))
    if found:
        return None, [_problem((*path, *where), message) for where, message in found]
    weight = sign if not rule.weight else rule.weight * sign  # 0 means unset, as in the reference
    return Affinity(rule.scope, rule.match, weight), []


def _entry(entry: Any, name: str, sign: int) -> tuple[Affinity, ...]:
    if entry is None:
        return ()
    items = [entry] if isinstance(entry, str) else entry
    if not isinstance(items, list):
        raise _Invalid(
            [
                _problem(
                    (name,),
                    f"invalid value {quote(entry)}: expected a list of rules or of container "
                    "names, or one container name",
                )
            ]
        )
    affinities: list[Affinity] = []
    names: list[str] = []
    names_at: int | None = None
    problems: list[str] = []
    for index, item in enumerate(items):
        path: Path = (name, index) if entry is items else (name,)
        if isinstance(item, str) and item:
            names.append(item)
            names_at = len(affinities) if names_at is None else names_at
        elif isinstance(item, Mapping):
            affinity, found = _rule(item, path, sign)
            problems.extend(found)
            if affinity is not None:
                affinities.append(affinity)
        else:
            problems.append(
                _problem(
                    path,
                    f"invalid value {quote(item)}: expected a container name or a rule "
                    "with scope, match and weight",
                )
            )
    if problems:
        raise _Invalid(problems)
    if names_at is not None:
        affinities.insert(names_at, Affinity(None, _names(tuple(names)), sign))
    return tuple(affinities)


@lru_cache(maxsize=512)
def _parse(parser: AnnotationParser, text: str, name: str, sign: int) -> tuple[Affinity, ...]:
    try:
        document = parser.parse(text)
    except DocumentError as err:
        raise _Invalid([str(err)]) from None
    if document is None:
        return ()
    if not isinstance(document, Mapping):
        raise _Invalid(
            [f"invalid value {quote(document)}: expected a mapping of container name to affinities"]
        )
    own: tuple[Affinity, ...] = ()
    mirrored: list[Affinity] = []
    for key, entry in document.items():
        other = str(key)
        if other == name:
            own = _entry(entry, name, sign)
        elif name in _shorthand_names(entry):
            try:
                _entry(entry, other, sign)  # an entry in error gives nothing, mirrored or not
            except _Invalid:
                continue
            mirrored.append(Affinity(None, _names((other,)), sign))
    return own + tuple(mirrored)


def _shorthand_names(entry: Any) -> list[str]:
    """The container names of an entry's shorthand (none for full rules)."""
    if isinstance(entry, str):
        return [entry]
    if isinstance(entry, list):
        return [item for item in entry if isinstance(item, str) and item]
    return []


def _names(names: tuple[str, ...]) -> Expression:
    return Expression(key="name", operator=Operator.IN, values=names)


def _pod_name(pod: Pod) -> str:
    return f"{pod.namespace}/{pod.name}" if pod.namespace else (pod.name or pod.id)


def annotation_of(annotations: Mapping[str, str], keys: tuple[str, ...]) -> tuple[str, str] | None:
    """The first of ``keys`` present in ``annotations``, with its value."""
    for key in keys:
        value = annotations.get(key)
        if value is not None:
            return key, value
    return None


def container_affinities(
    pod: Pod, container: Container, parser: AnnotationParser
) -> tuple[Affinity, ...]:
    """The container's affinities and anti-affinities from its pod's annotations, read with
    ``parser`` (the policy's ``ctx.annotation_parser``).

    Raises :class:`AffinityError` when the annotation is not valid YAML (or over the
    annotation budget: anchors, aliases, tags, size, nesting), is not keyed by
    container name, or the container's entry is malformed (unknown keys, a bad operator, a
    weight out of range, a malformed glob pattern). Entries of other containers are not read.
    """
    if not pod.annotations:
        return ()
    found: list[Affinity] = []
    for keys, sign in _KINDS:
        annotation = annotation_of(pod.annotations, keys)
        if annotation is None:
            continue
        key, text = annotation
        try:
            found.extend(_parse(parser, text, container.name, sign))
        except _Invalid as err:
            raise AffinityError(key, _pod_name(pod), container.name, err.problems) from None
    return tuple(found)
