"""Affinity values: which other containers a container wants near (or far), and how much."""

from __future__ import annotations

from typing import Any

import attrs

from nrirp.domain.config.expression import Expression, Operator

MIN_WEIGHT = -1000
MAX_WEIGHT = 1000
COLOCATION_WEIGHT = 10
"""Weight of the implicit affinities of ``colocatePods`` and ``colocateNamespaces``."""

ALWAYS = Expression(operator=Operator.ALWAYS_TRUE)


class AffinityError(ValueError):
    """An affinity annotation that cannot be used.

    ``annotation`` is the annotation key, ``container`` the name of the container whose
    affinities were asked for, ``problems`` what is wrong (each with its place in the value).
    """

    def __init__(self, annotation: str, pod: str, container: str, problems: list[str]) -> None:
        self.annotation = annotation
        self.pod = pod
        self.container = container
        self.problems = list(problems)
        super().__init__(
            f"invalid annotation {annotation} of pod {pod}, container {container!r}: "
            + "; ".join(self.problems)
        )


def _check_weight(_: Any, attribute: attrs.Attribute[int], value: int) -> None:
    if not MIN_WEIGHT <= value <= MAX_WEIGHT:
        raise ValueError(
            f"affinity {attribute.name} {value} is out of range {MIN_WEIGHT}..{MAX_WEIGHT}"
        )


@attrs.frozen
class Affinity:
    """A pull (positive weight) or push (negative weight) towards other containers.

    ``scope`` bounds the containers the affinity looks at (``None``: those of the container's
    own pod), ``match`` picks the ones it applies to, ``weight`` is how strongly. ``same`` lists
    keys whose values the other container must share with this one (the implicit
    ``colocateNamespaces`` affinity uses ``("namespace",)``).
    """

    scope: Expression | None
    match: Expression
    weight: int = attrs.field(default=1, validator=_check_weight)
    same: tuple[str, ...] = ()


def implicit_affinities(*, colocate_pods: bool, colocate_namespaces: bool) -> tuple[Affinity, ...]:
    """The affinities ``colocatePods`` / ``colocateNamespaces`` add to every container.

    Each has weight :data:`COLOCATION_WEIGHT`: towards the other containers of the same pod,
    and towards every container of the same namespace. A container of the same pod gets both.
    """
    found: list[Affinity] = []
    if colocate_pods:
        found.append(Affinity(None, ALWAYS, COLOCATION_WEIGHT))
    if colocate_namespaces:
        found.append(Affinity(ALWAYS, ALWAYS, COLOCATION_WEIGHT, same=("namespace",)))
    return tuple(found)
