from __future__ import annotations

import pytest

from nrirp.domain.config.duration import Duration
from nrirp.domain.cpuset import CPUSet
from nrirp.domain.model import AnnotationReader, effective_annotation, parse_bool, policy_key

KEY = policy_key("prefer-isolated-cpus")


def test_policy_key_is_under_resource_policy_domain() -> None:
    assert KEY == "prefer-isolated-cpus.resource-policy.nri.io"


@pytest.mark.parametrize(
    ("annotations", "expected"),
    [
        ({}, None),
        ({KEY: "a"}, (KEY, "a")),
        ({KEY: "a", f"{KEY}/pod": "b"}, (f"{KEY}/pod", "b")),
        (
            {KEY: "a", f"{KEY}/pod": "b", f"{KEY}/container.ctr1": "c"},
            (f"{KEY}/container.ctr1", "c"),
        ),
        ({KEY: "a", f"{KEY}/container.other": "c"}, (KEY, "a")),
        ({f"{KEY}/container.ctr1": "c"}, (f"{KEY}/container.ctr1", "c")),
    ],
)
def test_precedence(annotations: dict[str, str], expected: tuple[str, str] | None) -> None:
    assert effective_annotation(annotations, KEY, "ctr1") == expected


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_go_true(text: str) -> None:
    assert parse_bool(text) is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_go_false(text: str) -> None:
    assert parse_bool(text) is False


@pytest.mark.parametrize("text", ["yes", "", "tRuE", "2"])
def test_go_bool_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="invalid boolean"):
        parse_bool(text)


def test_typed_readers_and_problems() -> None:
    reader = AnnotationReader(
        {
            f"{KEY}/container.c": "false",
            policy_key("cpu-count"): "4",
            policy_key("cpus"): "0-3,8",
            policy_key("cold-start") + "/pod": "1m30s",
            policy_key("bad-int"): "four",
            policy_key("bad-cpus"): "3-1",
            policy_key("bad-bool"): "maybe",
            policy_key("bad-duration"): "10",
        },
        "c",
    )
    assert reader.get_bool(KEY, default=True) is False
    assert reader.get_int(policy_key("cpu-count")) == 4
    assert reader.get_cpuset(policy_key("cpus")) == CPUSet.parse("0-3,8")
    assert reader.get_duration(policy_key("cold-start")) == Duration.parse("90s")
    assert reader.get_string(policy_key("missing"), "dflt") == "dflt"
    assert reader.problems == []

    assert reader.get_int(policy_key("bad-int"), 7) == 7
    assert reader.get_cpuset(policy_key("bad-cpus")) is None
    assert reader.get_bool(policy_key("bad-bool"), default=True) is True
    assert reader.get_optional_bool(policy_key("bad-bool")) is None
    assert reader.get_duration(policy_key("bad-duration")) is None
    keys = [p.key for p in reader.problems]
    assert keys == [
        policy_key("bad-int"),
        policy_key("bad-cpus"),
        policy_key("bad-bool"),
        policy_key("bad-bool"),
        policy_key("bad-duration"),
    ]
    text = str(reader.problems[0])
    assert "bad-int" in text and "'four'" in text and "invalid integer" in text
