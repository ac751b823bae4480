"""Container affinity and anti-affinity: annotations, implicit colocation, weights.

:func:`container_affinities` reads a container's affinities from its pod's annotations,
:func:`implicit_affinities` gives the ones ``colocatePods`` / ``colocateNamespaces`` add, and
:func:`affinity_weights` sums them into a weight per other container in the cache.
"""

from nrirp.domain.affinity.annotations import (
    AFFINITY_ANNOTATION,
    ANTI_AFFINITY_ANNOTATION,
    LEGACY_AFFINITY_ANNOTATION,
    LEGACY_ANTI_AFFINITY_ANNOTATION,
    AffinityRule,
    container_affinities,
)
from nrirp.domain.affinity.model import (
    COLOCATION_WEIGHT,
    MAX_WEIGHT,
    MIN_WEIGHT,
    Affinity,
    AffinityError,
    implicit_affinities,
)
from nrirp.domain.affinity.weights import affinity_weights

__all__ = [
    "AFFINITY_ANNOTATION",
    "ANTI_AFFINITY_ANNOTATION",
    "COLOCATION_WEIGHT",
    "LEGACY_AFFINITY_ANNOTATION",
    "LEGACY_ANTI_AFFINITY_ANNOTATION",
    "MAX_WEIGHT",
    "MIN_WEIGHT",
    "Affinity",
    "AffinityError",
    "AffinityRule",
    "affinity_weights",
    "container_affinities",
    "implicit_affinities",
]
