"""Property tests: generated configs round trip; arbitrary damage gives only ConfigError."""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.documents import load_policy_config
from nrirp.domain.config import (
    ConfigError,
    PolicyConfig,
    unstructure_policy_config,
)
from tests.domain.config.strategies import DOCUMENTS

policies = st.sampled_from(sorted(DOCUMENTS))
documents = policies.flatmap(lambda p: st.tuples(st.just(p), DOCUMENTS[p]))
_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(documents)
def test_generated_configs_load_and_round_trip(case: tuple[str, dict[str, Any]]) -> None:
    policy, document = case
    config = load_policy_config(policy, document)
    data = unstructure_policy_config(config)
    again = load_policy_config(policy, json.loads(json.dumps(data)))
    assert again == config
    assert unstructure_policy_config(again) == data  # the written form is stable
    as_document = unstructure_policy_config(config, as_document=True)
    assert load_policy_config(policy, as_document) == config


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False)
    | st.text(max_size=6),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)


def _containers(data: Any) -> list[Any]:
    """Every dict and list inside ``data`` (including itself)."""
    found = [data] if isinstance(data, dict | list) else []
    children = data.values() if isinstance(data, dict) else data if isinstance(data, list) else []
    for child in children:
        found += _containers(child)
    return found


@_SETTINGS
@given(documents, st.data())
def test_damaged_configs_fail_only_with_config_error(
    case: tuple[str, dict[str, Any]], data: st.DataObject
) -> None:
    policy, document = case
    damaged = copy.deepcopy(document)
    target = data.draw(st.sampled_from(_containers(damaged)))
    replacement = data.draw(json_values)
    if isinstance(target, dict):
        key = data.draw(st.sampled_from([*target, "unexpected"]) if target else st.just("x"))
        target[key] = replacement
    elif target:
        target[data.draw(st.integers(0, len(target) - 1))] = replacement
    else:
        target.append(replacement)
    try:
        config = load_policy_config(policy, damaged)
    except ConfigError as error:
        assert error.problems
        for problem in error.problems:
            assert problem.path and problem.message
    else:
        assert isinstance(config, PolicyConfig)
        assert load_policy_config(policy, unstructure_policy_config(config)) == config
