"""The explanation document names its container as the project does (docs/core.md):
``namespace``, ``pod``, ``container`` (the name) and ``container_id``; the text renderer reads
that and the former form (``container`` the ``namespace/pod/container`` label, as an older
daemon serves it)."""

from __future__ import annotations

from typing import Any

from nrirp.app.explain import EXPLAIN_FORMAT, explanation_document, render_explanation
from nrirp.app.explain.document import document_label
from nrirp.domain.policy.explanation import Explanation, Verdict


def _explanation(label: str) -> Explanation:
    namespace, pod, name = label.split("/") if "/" in label else ("", "", label)
    return Explanation(
        policy="topology-aware",
        container=name,
        container_id="cid-1",
        verdict=Verdict.PLACED,
        summary="shared 200m in NUMA node #1",
        pod=pod,
        namespace=namespace,
    )


def test_an_explanation_names_its_container_as_a_decision_does() -> None:
    explanation = _explanation("prod/web/nginx")
    assert (explanation.namespace, explanation.pod, explanation.container) == (
        "prod",
        "web",
        "nginx",
    )
    assert explanation.label == "prod/web/nginx"
    assert _explanation("lone").label == "lone"


def test_the_document_names_namespace_pod_and_container() -> None:
    document = explanation_document(_explanation("prod/web/nginx"))
    assert list(document)[:6] == [
        "format",
        "policy",
        "namespace",
        "pod",
        "container",
        "container_id",
    ]
    assert document["format"] == EXPLAIN_FORMAT
    assert (document["namespace"], document["pod"], document["container"]) == (
        "prod",
        "web",
        "nginx",
    )
    assert document["container_id"] == "cid-1"


def test_a_container_of_no_known_pod_is_named_by_itself() -> None:
    document = explanation_document(_explanation("lone"))
    assert (document["namespace"], document["pod"], document["container"]) == ("", "", "lone")
    assert document_label(document) == "lone"


def _former(document: dict[str, Any]) -> dict[str, Any]:
    """The document as it was made before the identity keys: ``container`` the label."""
    old = {k: v for k, v in document.items() if k not in ("namespace", "pod")}
    old["container"] = f"{document['namespace']}/{document['pod']}/{document['container']}"
    return old


def test_the_renderer_reads_both_forms() -> None:
    document = explanation_document(_explanation("prod/web/nginx"))
    for form in (document, _former(document)):
        assert document_label(form) == "prod/web/nginx"
        first = render_explanation(form).splitlines()[0]
        assert first == "container:  prod/web/nginx (id cid-1)"
    assert document_label({"format": EXPLAIN_FORMAT}) == "?"


def test_the_item_table_says_which_value_wins_each_item() -> None:
    """A reader cannot tell from "6 memory nodes offered: 1, 2" alone that fewer win: the
    ``BETTER`` column shows each item's ``better`` (docs/explain.md)."""

    def item(number: int, name: str, value: Any, better: str) -> dict[str, Any]:
        return {"number": number, "name": name, "value": value, "better": better}

    def items(fits: bool, nodes: int, left: int, position: int) -> list[dict[str, Any]]:
        return [
            item(1, "fits", fits, "true"),
            item(6, "memory nodes offered", nodes, "lower"),
            item(11, "capacity left", left, "higher"),
            item(12, "list position", position, "first"),
        ]

    document = explanation_document(_explanation("prod/web/nginx"))
    document["stages"] = [
        {
            "name": "pool",
            "outcome": "a",
            "rule": "",
            "winner": "a",
            "deciding": {"item": item(6, "memory nodes offered", 1, "lower"), "runner_up": "b"},
            "candidates": [
                {"name": "a", "standing": "chosen", "note": "", "items": items(True, 1, 5, 0)},
                {"name": "b", "standing": "ranked", "note": "", "items": items(True, 2, 9, 1)},
            ],
        }
    ]
    lines = render_explanation(document).splitlines()
    table = lines[lines.index(next(line for line in lines if "ITEM" in line)) :]
    assert [row.split()[-4:] for row in table] == [
        ["ITEM", "BETTER", "a", "b"],
        ["fits", "yes", "yes", "yes"],
        ["offered", "lower", "1", "2"],
        ["left", "higher", "5", "9"],
        ["position", "first", "0", "1"],
    ]
    assert table[2].split()[:4] == [">", "6", "memory", "nodes"]
