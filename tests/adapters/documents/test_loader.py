"""The one YAML reader: strict and safe, every failure an UnreadableDocument, within budget."""

from __future__ import annotations

import datetime
import itertools

import pytest

from nrirp.adapters.documents import (
    ANNOTATION,
    BUDGETS,
    CONFIG,
    Budget,
    DocumentError,
    UnreadableDocument,
    load_document,
)
from nrirp.domain.ports.documents import MAX_QUOTED

SMALL = Budget("test document", max_bytes=64, max_depth=3, max_nodes=10)


def refusal(source: str | bytes, budget: Budget = CONFIG) -> UnreadableDocument:
    with pytest.raises(UnreadableDocument) as caught:
        load_document(source, budget)
    message = str(caught.value)
    assert "\n" not in message and len(message) < MAX_QUOTED + 120
    return caught.value


def laughs(levels: int, fanout: int = 9, top: str = "a") -> str:
    """The billion laughs: each level an anchored list of ``fanout`` aliases to the one before;
    the last one is keyed ``top``."""
    names = [chr(ord("b") + level) for level in range(levels - 1)] + [top]
    lines = [f"{names[0]}: &{names[0]} [{','.join(['lol'] * fanout)}]"]
    for before, name in itertools.pairwise(names):
        lines.append(f"{name}: &{name} [{','.join([f'*{before}'] * fanout)}]")
    return "\n".join(lines) + "\n"


def test_plain_data_and_empty_documents() -> None:
    assert load_document("a: 1\nb: [x, 2.5, true, null]\n", CONFIG) == {
        "a": 1,
        "b": ["x", 2.5, True, None],
    }
    assert load_document('{"json": [1, "two"]}', CONFIG) == {"json": [1, "two"]}
    assert load_document(b"a: caf\xc3\xa9\n", CONFIG) == {"a": "café"}
    assert load_document("d: 2024-01-31", CONFIG) == {"d": datetime.date(2024, 1, 31)}
    for empty in ("", "# only a comment\n", b""):
        assert load_document(empty, CONFIG) is None


def test_a_merge_key_is_overridden_by_a_key_beside_it() -> None:
    text = "base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  x: 3\n"
    assert load_document(text, CONFIG) == {"base": {"x": 1, "y": 2}, "other": {"x": 3, "y": 2}}
    # of several merged mappings the first wins, as YAML specifies
    text = "a: &a {x: 1}\nb: &b {x: 2, y: 2}\nc: {<<: [*a, *b]}\n"
    assert load_document(text, CONFIG)["c"] == {"x": 1, "y": 2}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pinCPU: true\npinCPU: false\n", "invalid YAML at line 2, column 1: found duplicate key"),
        ("other:\n  <<: {x: 1}\n  x: 2\n  x: 3\n", "at line 4, column 3: found duplicate key 'x'"),
        ("? [1, 2]: x\n", "at line 1, column 3: a mapping key must be a scalar, not a mapping"),
        ("? [1, 2]\n: x\n", "at line 1, column 3: a mapping key must be a scalar, not a list"),
        ("{[1, 2]: x}", "at line 1, column 2: a mapping key must be a scalar, not a list"),
        ("? {a: 1}\n: x\n", "at line 1, column 3: a mapping key must be a scalar, not a mapping"),
        ("web: 2024-13-45", "cannot build the value '2024-13-45': month must be in 1..12"),
        ("x: !!float abc", "at line 1, column 4: cannot build the value 'abc'"),
        ("x: !!python/name:os.system ''", "could not determine a constructor"),
        ("a: [1, 2", "invalid YAML at line 2, column 1: did not find expected ',' or ']'"),
        ("a: 1\n---\nb: 2\n", "expected a single document in the stream, but found another"),
        ("a: *nowhere", "found undefined alias"),
        ("a: &a [*a]", "an alias refers to a node that contains it"),
        ("a: \x00", "control characters are not allowed"),
        ("a: \ud800", "not valid Unicode text"),
        (b"a: \xff\n", "not UTF-8 text (invalid start byte at byte 3)"),
    ],
)
def test_every_failure_is_one_line_with_its_place(text: str | bytes, expected: str) -> None:
    assert expected in str(refusal(text))


def test_budget_size_in_bytes_for_text_and_bytes() -> None:
    assert load_document("a: " + "x" * 57, SMALL) == {"a": "x" * 57}  # 60 bytes
    assert "test document too large: 65 bytes (at most 64)" in str(refusal("a" * 65, SMALL))
    assert "66 bytes" in str(refusal("a: " + "é" * 31 + "x", SMALL))  # 35 characters
    assert "too large: 1000 bytes" in str(refusal(b"a" * 1000, SMALL))


def test_budget_depth_and_node_count() -> None:
    assert load_document("[[[1]]]", SMALL) == [[[1]]]
    assert "nested deeper than 3 levels at line 1, column 4" in str(refusal("[[[[1]]]]", SMALL))
    assert "more than 10 values" in str(refusal("[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]", SMALL))
    deep = "a:\n" + "".join(" " * (2 * i) + f"  k{i}:\n" for i in range(40))
    assert "nested deeper than 32 levels" in str(refusal(deep))


def test_aliases_count_once_per_use() -> None:
    assert load_document("a: &a [1, 2]\nb: [*a, *a]\n", CONFIG) == {"a": [1, 2], "b": [[1, 2]] * 2}
    budget = Budget("test document", 1024, 8, 12)
    assert "more than 12 values once aliases are expanded" in str(
        refusal("a: &a [1, 2, 3]\nb: [*a, *a, *a]\n", budget)
    )


def test_the_billion_laughs_is_refused_without_expanding_it() -> None:
    text = laughs(10)  # 9**10 values
    assert len(text) < 400
    assert "more than 1000000 values once aliases are expanded" in str(refusal(text, CONFIG))
    refused = refusal(text, ANNOTATION)
    assert str(refused) == (
        "YAML anchors, aliases and tags are not allowed (found an anchor) at line 1, column 4"
    )


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("a: &x 1", "an anchor) at line 1, column 4"),
        ("a: *x", "an alias) at line 1, column 4"),
        ("a: !!str 1", "a tag) at line 1, column 4"),
        ("- [1, !custom {b: 1}]", "a tag) at line 1, column 7"),
        ("<<: {a: 1}", "no"),  # a merge key alone is fine: nothing is shared or retagged
    ],
)
def test_annotations_take_no_references(text: str, found: str) -> None:
    if found == "no":
        assert load_document(text, ANNOTATION) == {"a": 1}
        return
    assert str(refusal(text, ANNOTATION)).endswith(f"(found {found}")
    assert str(refusal(text, ANNOTATION)).startswith("YAML anchors, aliases and tags are not")


def test_long_inputs_are_quoted_short() -> None:
    name = "k" * 5000
    refused = refusal(f"? {name}\n: 1\n? {name}\n: 2\n")
    assert refused.problem.startswith("found duplicate key 'kkk") and len(str(refused)) < 150
    huge_alias = refusal(f"a: *{'x' * 10000}")
    assert len(str(huge_alias)) <= MAX_QUOTED + 60


def test_the_error_class_is_the_domains() -> None:
    assert issubclass(UnreadableDocument, DocumentError)
    assert issubclass(DocumentError, ValueError)
    assert {b.kind for b in BUDGETS} == {
        "annotation value",
        "policy configuration",
        "machine spec",
        "workload",
    }
