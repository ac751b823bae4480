"""Summing affinities into weights towards the other containers in the cache."""

from __future__ import annotations

from collections.abc import Sequence

from nrirp.domain.affinity.model import Affinity
from nrirp.domain.cache.store import Cache
from nrirp.domain.matching import ContainerKeys, evaluate, key_value
from nrirp.domain.model import Container


def affinity_weights(
    cache: Cache, container: Container, affinities: Sequence[Affinity]
) -> dict[str, int]:
    """``{container id: summed weight}`` of ``container``'s affinities towards every other
    active container that is in scope and matches; containers whose weights cancel out to zero
    are left out. Without affinities this returns at once; with only pod-scoped ones it looks
    at the container's own pod alone.
    """
    if not affinities:
        return {}
    if any(a.scope is not None for a in affinities):
        candidates = cache.active_containers()
    else:
        candidates = [c for c in cache.containers_of(container.pod_id) if c.state.holds_resources]
    own = ContainerKeys(container, cache.pod(container.pod_id))
    own_values = {key: key_value(own, key) for a in affinities for key in a.same}
    weights: dict[str, int] = {}
    for other in candidates:
        if other.id == container.id:
            continue
        subject = ContainerKeys(other, cache.pod(other.pod_id))
        total = 0
        for affinity in affinities:
            if affinity.scope is None:
                if other.pod_id != container.pod_id:
                    continue
            elif not evaluate(affinity.scope, subject):
                continue
            if any(
                own_values[key] is None or key_value(subject, key) != own_values[key]
                for key in affinity.same
            ):
                continue
            if evaluate(affinity.match, subject):
                total += affinity.weight
        if total:
            weights[other.id] = total
    return weights
