"""Fuzzing the state loader end to end (issue 9, fuzz tests): a state file that decodes as JSON
but was tampered with anywhere (snapshot fields, containers, tags, policy data, the saved
config) makes ``ResourceManager.start`` either start or refuse with ``StateRestoreError`` or an
ordinary refusal, with a bounded message, never an internal error. Each policy restores from
a real state it wrote, mutated at random (bounded: a few hundred examples, no deadline)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.pipeline import OperationFailedError, StateRestoreError
from tests.domain.policies.balloons.support import make_rig as balloons_rig
from tests.domain.policies.topology_aware.support import anno
from tests.domain.policies.topology_aware.support import make_rig as topology_rig

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
# values that look like what the state holds: cpusets, quantities, names, tags
LIKELY = st.sampled_from(
    ["0-3", "", "0,", "1-0", "99999", "-1", "reserved", "shared", "exclusive", "x[0]", "0-15",
     "1.5", "NaN", "default[0]", "{}", "[]", "kube-system", "a" * 300]
)  # fmt: skip
VALUES = JSON | LIKELY


def written_state(policy: str) -> dict[str, Any]:
    """The state a policy wrote after a few containers of every kind."""
    if policy == "topology-aware":
        rig = topology_rig("box-16")
        rig.run("g", "Guaranteed", cpu=2000)
        rig.run("s", cpu=300, namespace="kube-system")
        rig.run("p", cpu=100, annotations=anno("cpu.preserve", "true"))
        rig.run("b", "BestEffort")
    else:
        rig = balloons_rig("box-16")
        rig.run("g", 2000, qos="Guaranteed")
        rig.run("s", 300, namespace="kube-system")
        rig.run("b", 0, qos="BestEffort")
    data = rig.store.load()
    assert data is not None
    return json.loads(json.dumps(data))


STATES = {policy: written_state(policy) for policy in ("topology-aware", "balloons")}


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON tree (keys of objects, indexes of arrays)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += paths(inner, (*prefix, index))
    return found


def mutate(state: dict[str, Any], edits: list[tuple[int, str, Any]]) -> dict[str, Any]:
    data = copy.deepcopy(state)
    for choice, how, value in edits:
        places = [p for p in paths(data) if p]
        place = places[choice % len(places)]
        parent = data
        for step in place[:-1]:
            parent = parent[step]
        last = place[-1]
        if how == "drop" and isinstance(parent, dict):
            del parent[last]
        elif how == "add" and isinstance(parent, dict):
            parent[f"extra{choice}"] = value
        else:
            parent[last] = value
    return data


EDITS = st.lists(
    st.tuples(st.integers(0, 10**6), st.sampled_from(["set", "set", "drop", "add"]), VALUES),
    min_size=1,
    max_size=4,
)


@pytest.mark.parametrize("policy", sorted(STATES))
@FUZZ
@given(edits=EDITS)
def test_a_tampered_state_is_restored_or_refused_never_an_internal_error(
    policy: str, edits: list[tuple[int, str, Any]]
) -> None:
    store = InMemoryStateStore(mutate(STATES[policy], edits))
    make = topology_rig if policy == "topology-aware" else balloons_rig
    rig = make("box-16", store=store, start=False)
    try:
        rig.manager.start(None)
    except StateRestoreError as exc:
        assert len(str(exc).splitlines()[0]) < 600
    except OperationFailedError as exc:
        assert not exc.internal, f"an internal error on tampered state: {exc}"
