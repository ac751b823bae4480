"""Summing affinities into weights towards the other containers in the cache."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from nrirp.domain.affinity.model import Affinity
from nrirp.domain.cache.store import Cache
from nrirp.domain.matching import ContainerPredicate, container_predicate, container_reader
from nrirp.domain.model import Container, Pod


@attrs.frozen
class _Test:
    """One affinity prepared for testing candidates: every check must pass for the weight."""

    own_pod_only: bool
    checks: tuple[ContainerPredicate, ...]
    weight: int


def _same(key: str, value: str) -> ContainerPredicate:
    read = container_reader(key)
    return lambda ctr, pod: read(ctr, pod) == value


def _prepare(affinity: Affinity, container: Container, pod: Pod | None) -> _Test | None:
    """The checks of ``affinity`` for ``container``; ``None`` when it can apply to nobody."""
    checks: list[ContainerPredicate] = []
    if affinity.scope is not None:
        checks.append(container_predicate(affinity.scope))
    for key in affinity.same:
        own = container_reader(key)(container, pod)
        if own is None:
            return None
        checks.append(_same(key, own))
    checks.append(container_predicate(affinity.match))
    return _Test(affinity.scope is None, tuple(checks), affinity.weight)


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
    pod_id = container.pod_id
    prepared = [_prepare(a, container, cache.pod(pod_id)) for a in affinities]
    tests = [test for test in prepared if test is not None]
    if not tests:
        return {}
    if all(test.own_pod_only for test in tests):
        candidates = [c for c in cache.containers_of(pod_id) if c.state.holds_resources]
    else:
        candidates = cache.active_containers()
    pod_of = cache.pod
    weights: dict[str, int] = {}
    for other in candidates:
        if other.id == container.id:
            continue
        other_pod = pod_of(other.pod_id)
        total = 0
        for test in tests:
            if test.own_pod_only and other.pod_id != pod_id:
                continue
            for check in test.checks:
                if not check(other, other_pod):
                    break
            else:
                total += test.weight
        if total:
            weights[other.id] = total
    return weights
