"""Fuzzing the annotation parser and the config loader: whatever the text or bytes, the only
exception is the one error class (bounded: a few hundred examples, no deadline)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.documents import (
    ANNOTATION,
    DocumentError,
    YamlAnnotationParser,
    load_policy_config,
)
from nrirp.domain.config import ConfigError
from nrirp.domain.ports.documents import MAX_QUOTED

FUZZ = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PARSER = YamlAnnotationParser()

# YAML's own punctuation, so that random text often is (nearly) YAML
YAMLISH = st.text(
    alphabet=st.sampled_from([*"-?:,[]{}#&*!|>'\"%@` \n\tab01.<=~", "\x00", "é", "\ud800"]),
    max_size=120,
)
DOCUMENTS = st.one_of(YAMLISH, st.text(max_size=200), st.binary(max_size=200))


def short_enough(error: DocumentError) -> bool:
    """One problem is quoted at most MAX_QUOTED characters, plus its place and headline."""
    return all(len(line) <= MAX_QUOTED + 150 for line in str(error).splitlines())


@FUZZ
@given(YAMLISH | st.text(max_size=200))
def test_the_annotation_parser_raises_only_document_errors(text: str) -> None:
    try:
        PARSER.parse(text)
    except DocumentError as error:
        assert short_enough(error)


@FUZZ
@given(st.lists(YAMLISH, max_size=4).map("\n".join))
def test_annotations_over_budget_are_refused_not_built(text: str) -> None:
    padded = text + "\n#" + "x" * ANNOTATION.max_bytes
    try:
        PARSER.parse(padded)
    except DocumentError as error:
        assert "too large" in str(error) or short_enough(error)
    else:
        raise AssertionError("an annotation over the size budget was accepted")


@FUZZ
@given(DOCUMENTS, st.sampled_from(["template", "topology-aware", "balloons", "none"]))
def test_the_config_loader_raises_only_config_errors(source: str | bytes, policy: str) -> None:
    try:
        load_policy_config(policy, source)
    except ConfigError as error:
        assert short_enough(error)
