"""Error reports stay small however long the input (issue 9: the input budget)."""

from __future__ import annotations

import pytest

from nrirp.domain.config import ConfigError, load_policy_config
from nrirp.domain.config.converter import MAX_CHECKED_PROBLEMS
from nrirp.domain.config.errors import MAX_SHOWN_PROBLEMS


def test_two_million_wrong_items_give_a_capped_report() -> None:
    items = 2_000_000
    data = {"reservedResources": {"cpu": "1"}, "reservedPoolNamespaces": list(range(items))}
    with pytest.raises(ConfigError) as caught:
        load_policy_config("topology-aware", data)
    problems = caught.value.problems
    assert len(problems) == MAX_CHECKED_PROBLEMS + 1
    assert problems[0] == ("reservedPoolNamespaces[0]", "invalid value 0: expected a string")
    assert problems[-1] == (
        "reservedPoolNamespaces",
        f"{items - MAX_CHECKED_PROBLEMS} more items not checked"
        f" (checking stops after {MAX_CHECKED_PROBLEMS} problems)",
    )
    lines = str(caught.value).splitlines()
    assert len(lines) == 1 + MAX_SHOWN_PROBLEMS + 1
    assert lines[0] == f"invalid topology-aware policy configuration ({len(problems)} problems):"
    assert lines[-1] == f"  ... and {len(problems) - MAX_SHOWN_PROBLEMS} more"
    assert caught.value.shown_problems()[-1] == lines[-1].strip()


def test_the_budget_spans_lists_and_mappings_of_one_document() -> None:
    data = {
        "reservedResources": {"cpu": "1"},
        "namespaceSchedulingClasses": {f"ns{i}": i for i in range(80)},
        "reservedPoolNamespaces": [1] * 80,
    }
    with pytest.raises(ConfigError) as caught:
        load_policy_config("topology-aware", data)
    problems = caught.value.problems
    stopped = [p for p in problems if "not checked" in p.message]
    assert len(problems) == MAX_CHECKED_PROBLEMS + 1 and len(stopped) == 1
    unchecked = int(stopped[0].message.split()[0])
    assert len(problems) - 1 + unchecked == 160  # every bad item is shown or counted


def test_a_few_problems_are_all_shown() -> None:
    with pytest.raises(ConfigError) as caught:
        load_policy_config("topology-aware", {"reservedPoolNamespaces": [1, 2]})
    assert str(caught.value).splitlines()[1:] == [
        "  reservedPoolNamespaces[0]: invalid value 1: expected a string",
        "  reservedPoolNamespaces[1]: invalid value 2: expected a string",
        "  reservedResources: required field missing",
    ]


def test_data_no_document_gives_is_still_a_config_error() -> None:
    class Hostile(dict[str, object]):
        def items(self):  # type: ignore[override]
            raise RuntimeError("boom")

    with pytest.raises(ConfigError, match=r"cannot load it \(RuntimeError: boom\)"):
        load_policy_config("topology-aware", Hostile(a=1))
