"""An :class:`~nrirp.domain.policy.explanation.Explanation` as a JSON document
(``format: nrirp.explain/v1``), the same from a simulate run and from a running daemon.

The document names the container as the project does (docs/core.md): ``namespace``, ``pod``
and ``container`` (its name), beside ``container_id``. A document made before those keys (by
an older daemon) had ``container`` as the ``namespace/pod/container`` label;
:func:`document_label` reads both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nrirp.domain.policy.explanation import Candidate, Deciding, Explanation, Item, Stage

EXPLAIN_FORMAT = "nrirp.explain/v1"


def explanation_document(explanation: Explanation) -> dict[str, Any]:
    """The explanation as JSON-compatible data (docs/explain.md lists the keys)."""
    return {
        "format": EXPLAIN_FORMAT,
        "policy": explanation.policy,
        "namespace": explanation.namespace,
        "pod": explanation.pod,
        "container": explanation.container,
        "container_id": explanation.container_id,
        "verdict": explanation.verdict.value,
        "summary": explanation.summary,
        "placement": explanation.placement,
        "shortage": explanation.shortage,
        "refusal": explanation.refusal,
        "refused_at": explanation.refused_at,
        "notes": list(explanation.notes),
        "stages": [_stage(s) for s in explanation.stages],
    }


def document_label(document: Mapping[str, Any]) -> str:
    """``namespace/pod/container`` of the container an explanation document is about: from
    its ``namespace``, ``pod`` and ``container`` (the name), or, in a document made before
    those keys, its ``container`` (then the label); ``?`` when it names none."""
    name = str(document.get("container", "?"))
    if "pod" not in document or not document["pod"]:
        return name  # the former form, or a container of no known pod: named by itself
    return f"{document.get('namespace', '')}/{document['pod']}/{name}"


def error_document(message: str) -> dict[str, Any]:
    """What is served when there is nothing to explain (unknown container, not started)."""
    return {"format": EXPLAIN_FORMAT, "error": message}


def _stage(stage: Stage) -> dict[str, Any]:
    return {
        "name": stage.name,
        "outcome": stage.outcome,
        "rule": stage.rule,
        "winner": stage.winner,
        "deciding": _deciding(stage.deciding),
        "candidates": [_candidate(c) for c in stage.candidates],
    }


def _deciding(deciding: Deciding | None) -> dict[str, Any] | None:
    if deciding is None:
        return None
    return {
        "item": _item(deciding.item),
        "runner_up": deciding.runner_up,
        "runner_up_value": deciding.runner_up_value,
    }


def _candidate(candidate: Candidate) -> dict[str, Any]:
    return {
        "name": candidate.name,
        "standing": candidate.standing.value,
        "note": candidate.note,
        "items": [_item(i) for i in candidate.items],
    }


def _item(item: Item) -> dict[str, Any]:
    return {"number": item.number, "name": item.name, "value": item.value, "better": item.better}
