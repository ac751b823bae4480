"""Why a container sits where it does: the explanation a policy gives of one decision.

An :class:`Explanation` is plain data: the stages the policy went through (pool choice; balloon
type, fill chain, sizing), each with its candidates (pools or balloons) and the scoring items
the policy compared, in the order it compared them, the winner and the item that decided
between it and the runner-up, or the refusal with what was short.

A policy that explains implements :class:`Explaining` (``explain``); the built-in ones do.
It works out the explanation on demand from its current state, on a copy with the container
taken out: "where would this container go if it arrived now, and why", which for a container
just placed is the decision it got. Nothing is recorded while deciding, so the decisions cost
what they cost without it. :func:`explain_with` gives the default for a policy that does not
explain.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Protocol, TypedDict

import attrs

from nrirp.domain.model import Container, Pod

Value = str | int | float | bool | None
"""A scoring item's value (JSON-compatible)."""


class Verdict(enum.Enum):
    """What the policy did (or would do) with the container."""

    PLACED = "placed"
    REFUSED = "refused"
    LEFT_ALONE = "left-alone"
    """The policy leaves it as the runtime made it (cpu.preserve, preserve expressions)."""
    NOT_DECIDED = "not-decided"
    """The policy decides nothing for containers (none, template)."""
    NOT_EXPLAINED = "not-explained"
    """The policy does not explain its decisions."""


class Standing(enum.Enum):
    """How a candidate fared."""

    CHOSEN = "chosen"
    RANKED = "ranked"
    """Scored and viable, but another one won."""
    PASSED_OVER = "passed-over"
    """Ranked above the winner but could not be used (e.g. its CPUs could not be carved)."""
    NOT_VIABLE = "not-viable"
    """Scored, but cannot take the container (it loses on a capacity item)."""
    DROPPED = "dropped"
    """Not scored: filtered out before the ranking (the note says why)."""


@attrs.frozen
class Item:
    """One scoring item as the policy compared it.

    ``number`` is its position in the policy's documented order (topology-aware: items 1-12
    of docs/topology-aware.md; balloons: the fill chain's key), ``name`` what it is,
    ``value`` the candidate's value and ``better`` which values win (``higher``, ``lower``,
    ``true``, ``false``, ``first``).
    """

    number: int
    name: str
    value: Value
    better: str = ""


@attrs.frozen
class Candidate:
    """A pool or balloon the policy considered."""

    name: str
    standing: Standing
    items: tuple[Item, ...] = ()
    note: str = ""
    """Why it was dropped, not viable or passed over; or what it offers."""


@attrs.frozen
class Deciding:
    """The item that put the winner ahead of the runner-up (the first that differs)."""

    item: Item
    """With the winner's value."""
    runner_up: str
    runner_up_value: Value


@attrs.frozen
class Stage:
    """One step of the decision: a choice among candidates, or a check."""

    name: str
    outcome: str
    """What the stage decided, as a sentence."""
    candidates: tuple[Candidate, ...] = ()
    winner: str | None = None
    deciding: Deciding | None = None
    rule: str = ""
    """How the stage ranks (e.g. "first difference wins, smaller is better")."""


@attrs.frozen
class Explanation:
    """A policy's account of its decision for one container."""

    policy: str
    container: str
    """The container's name (its id when it has none), as
    :class:`~nrirp.domain.ports.decisions.Decision` names it; with :attr:`pod` and
    :attr:`namespace` (:func:`identity`)."""
    container_id: str
    verdict: Verdict
    summary: str
    """One line: where and why, or why not."""
    stages: tuple[Stage, ...] = ()
    placement: str = ""
    """Where the container is now (pool or balloon, CPUs, memory), empty if nowhere."""
    shortage: str = ""
    """For a refusal: what was short, as the refusal says it."""
    notes: tuple[str, ...] = ()
    """What else the reader should know (the node changed since it was placed, ...)."""
    refusal: str = ""
    """The last refusal the resource manager remembers for the container (``operation:
    reason``), e.g. its creation when it is not placed; empty when there is none."""
    refused_at: float | None = None
    """When that was (seconds since the epoch, the resource manager's clock)."""
    pod: str = ""
    """The name of the container's pod (empty when it has none)."""
    namespace: str = ""
    """The pod's namespace (empty without a pod)."""

    @property
    def label(self) -> str:
        """``namespace/pod/container``, or the container alone without a pod (how log lines
        and refusals name it)."""
        return f"{self.namespace}/{self.pod}/{self.container}" if self.pod else self.container

    def stage(self, name: str) -> Stage | None:
        """The stage called ``name`` (``None`` if there is none)."""
        return next((s for s in self.stages if s.name == name), None)


@attrs.frozen
class Subject:
    """What a policy is asked to explain: the container (admitted, with its requirements
    estimated) and its pod, whether it holds resources now, and the refusal the resource
    manager remembers for it (an operation and its reason), if any."""

    container: Container
    pod: Pod | None
    placed: bool
    refused: str = ""


class Explaining(Protocol):
    """A policy that explains its decisions."""

    def explain(self, subject: Subject) -> Explanation:
        """Why ``subject`` sits where it does, or would go where it would, or was refused.
        Reads the policy's state, changes nothing (call it under the pipeline's
        serialization)."""
        ...


class Identity(TypedDict):
    """The fields that name a container in an :class:`Explanation`."""

    container: str
    pod: str
    namespace: str


def identity(pod: Pod | None, container: Container) -> Identity:
    """How an :class:`Explanation` names ``container`` of ``pod``: its name (its id when it
    has none), its pod's name and namespace (both empty without a named pod)."""
    name = container.name or container.id
    if pod is None or not pod.name:
        return {"container": name, "pod": "", "namespace": ""}
    return {"container": name, "pod": pod.name, "namespace": pod.namespace}


def nothing_decided(policy: str, subject: Subject, why: str) -> Explanation:
    """The explanation of a policy that decides nothing for containers."""
    return Explanation(
        policy=policy,
        **identity(subject.pod, subject.container),
        container_id=subject.container.id,
        verdict=Verdict.NOT_DECIDED,
        summary=why,
        stages=(Stage("decision", why),),
    )


def not_explained(policy: str, subject: Subject) -> Explanation:
    """The explanation of a policy that gives none."""
    return Explanation(
        policy=policy,
        **identity(subject.pod, subject.container),
        container_id=subject.container.id,
        verdict=Verdict.NOT_EXPLAINED,
        summary=f"policy {policy} does not explain its decisions",
    )


def explain_with(policy: object, name: str, subject: Subject) -> Explanation:
    """``policy``'s explanation of ``subject`` when it explains (:class:`Explaining`), else
    :func:`not_explained`; named by :func:`identity` whatever the policy put there."""
    method = getattr(policy, "explain", None)
    if not callable(method):
        return not_explained(name, subject)
    explanation: Explanation = method(subject)
    return attrs.evolve(explanation, **identity(subject.pod, subject.container))


def deciding_item(
    winner: Sequence[Item], runner_up: Sequence[Item], runner_up_name: str
) -> Deciding | None:
    """The first item whose values differ between ``winner`` and ``runner_up`` (items are
    compared by position), ``None`` when they are equal throughout."""
    for mine, theirs in zip(winner, runner_up, strict=False):
        if mine.value != theirs.value:
            return Deciding(mine, runner_up_name, theirs.value)
    return None


def value_text(value: Value) -> str:
    """An item's value as an explanation's text says it (``yes``/``no``, ``-`` for none)."""
    if value is True:
        return "yes"
    if value is False:
        return "no"
    if value is None:
        return "-"
    return str(value)
