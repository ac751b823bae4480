"""Explaining a decision: which container is meant, and what the policy says about it.

The resource manager remembers the last refused creations and resizes (:class:`Refusals`,
bounded, filled on the failure path only), so a container the policy refused, which left
nothing in the cache, can still be explained: it is admitted again inside a cache checkpoint
that is rolled back, and the policy explains it against its state now. A container in the
cache is explained as it is. The policy works out the explanation on demand
(:mod:`nrirp.domain.policy.explanation`); nothing is recorded while deciding.
"""

from __future__ import annotations

from collections import OrderedDict

import attrs

from nrirp.domain.cache import Cache
from nrirp.domain.model import Container, ContainerState, Pod
from nrirp.domain.pipeline.admission import admit_container, admit_pod
from nrirp.domain.policy.explanation import Explanation, Subject, explain_with

REFUSALS_KEPT = 64
"""Refused creations and resizes remembered (the oldest is forgotten first)."""
MAX_MATCHES_SHOWN = 5


class UnknownContainerError(LookupError):
    """The query names no container the resource manager knows (or several)."""


@attrs.frozen
class Refusal:
    """A refused creation or resize: what the driver passed and why it was refused."""

    operation: str
    pod: Pod
    container: Container
    reason: str
    at: float


class Refusals:
    """The last :data:`REFUSALS_KEPT` refusals, by container id (a later one replaces an
    earlier one of the same container)."""

    def __init__(self, limit: int = REFUSALS_KEPT) -> None:
        self._limit = limit
        self._by_id: OrderedDict[str, Refusal] = OrderedDict()

    def refused(self, refusal: Refusal) -> None:
        cid = refusal.container.id
        self._by_id.pop(cid, None)
        self._by_id[cid] = refusal
        while len(self._by_id) > self._limit:
            self._by_id.popitem(last=False)

    def get(self, container_id: str) -> Refusal | None:
        return self._by_id.get(container_id)

    def all(self) -> list[Refusal]:
        """Oldest first."""
        return list(self._by_id.values())


def container_label(pod: Pod | None, container: Container) -> str:
    name = container.name or container.id
    return f"{pod.namespace}/{pod.name}/{name}" if pod is not None and pod.name else name


def find(cache: Cache, refusals: Refusals, query: str) -> tuple[Container, Pod | None, bool]:
    """The container ``query`` names: its id, ``namespace/pod/name``, ``pod/name`` or its
    name (the last two only when one container has it), among the cache's containers and
    then the refused ones; with its pod and whether it is in the cache. Raises
    :class:`UnknownContainerError`."""
    query = query.strip()
    if not query:
        raise UnknownContainerError("no container given")
    known = cache.container(query)
    if known is not None:
        return known, cache.pod(known.pod_id), True
    refused = refusals.get(query)
    if refused is not None:
        return refused.container, refused.pod, False
    matches: dict[str, tuple[Container, Pod | None, bool]] = {}
    for ctr in cache.containers():
        pod = cache.pod(ctr.pod_id)
        if _names(query, container_label(pod, ctr)):
            matches[ctr.id] = (ctr, pod, True)
    for refusal in reversed(refusals.all()):  # the latest first
        ctr = refusal.container
        if ctr.id not in matches and _names(query, container_label(refusal.pod, ctr)):
            matches[ctr.id] = (ctr, refusal.pod, False)
    if len(matches) == 1:
        return next(iter(matches.values()))
    if not matches:
        raise UnknownContainerError(
            f"no container {query!r}: give its id, namespace/pod/name or pod/name"
        )
    # a running container beats refused ones of the same name (a retried creation)
    running = [m for m in matches.values() if m[2]]
    labels = {container_label(m[1], m[0]) for m in matches.values()}
    if len(running) == 1 and len(labels) == 1:
        return running[0]
    shown = sorted(labels)[:MAX_MATCHES_SHOWN]
    more = f" and {len(labels) - len(shown)} more" if len(labels) > len(shown) else ""
    raise UnknownContainerError(
        f"{query!r} names {len(matches)} containers ({', '.join(shown)}{more}): "
        "give its id or namespace/pod/name"
    )


def _names(query: str, label: str) -> bool:
    if query == label:
        return True
    parts = query.count("/")
    if parts == 1:
        return label.count("/") == 2 and label.endswith(f"/{query}")
    return parts == 0 and label.rsplit("/", 1)[-1] == query


def explain_query(
    *,
    cache: Cache,
    policy: object,
    policy_name: str,
    refusals: Refusals,
    query: str,
    now: float,
    memory_capacity: int,
) -> Explanation:
    """The policy's explanation of the container ``query`` names (:func:`find`), with the
    refusal remembered for it. Call it under the pipeline's serialization; the cache is as
    it was afterwards."""
    container, pod, in_cache = find(cache, refusals, query)
    refusal = refusals.get(container.id)
    if in_cache:
        subject = Subject(container, pod, container.state.holds_resources)
        explanation = explain_with(policy, policy_name, subject)
        if not subject.placed:
            state = container.state.value
            note = f"the container is {state}: it holds nothing; explained as if it arrived now"
            explanation = attrs.evolve(explanation, notes=(note, *explanation.notes))
    else:
        checkpoint = cache.checkpoint()
        try:
            assert refusal is not None  # found among the refusals
            admit_pod(cache, refusal.pod, now)
            admitted = admit_container(
                cache,
                refusal.container,
                state=ContainerState.CREATING,
                now=now,
                memory_capacity=memory_capacity,
            )
            subject = Subject(admitted, cache.pod(admitted.pod_id), False)
            explanation = explain_with(policy, policy_name, subject)
        finally:
            cache.rollback(checkpoint)
        # what it would get now may differ from what it was refused (others left meanwhile)
        note = (
            "the container is not running: it was refused (see refused); explained as if it "
            "arrived now"
        )
        explanation = attrs.evolve(explanation, notes=(note, *explanation.notes))
    if refusal is not None and (not in_cache or refusal.operation != "create-container"):
        explanation = attrs.evolve(
            explanation,
            refusal=f"{refusal.operation}: {refusal.reason}",
            refused_at=refusal.at,
        )
    return explanation
