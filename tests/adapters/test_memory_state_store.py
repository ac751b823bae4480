"""The in-memory StateStore: saves keep the latest snapshot, encoding happens once per flush."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nrirp.adapters.memory import InMemoryStateStore
from nrirp.domain.ports.state_store import StateStoreError


class CountingDict(dict[str, Any]):
    """A snapshot that counts how often ``json`` walked it."""

    encoded = 0

    def items(self) -> Any:
        CountingDict.encoded += 1
        return super().items()


def test_a_burst_of_saves_is_encoded_once() -> None:
    store = InMemoryStateStore()
    CountingDict.encoded = 0
    for n in range(100):
        store.save(CountingDict(version=1, n=n))
    assert CountingDict.encoded == 0  # saving costs nothing on the pipeline's path
    assert store.saves == 100
    assert json.loads(store.raw or "") == {"version": 1, "n": 99}
    assert CountingDict.encoded == 1
    assert store.load() == {"version": 1, "n": 99}
    assert CountingDict.encoded == 1  # nothing new to encode


def test_state_that_is_not_json_fails_at_flush_and_keeps_the_last_good_one() -> None:
    store = InMemoryStateStore()
    store.save({"version": 1})
    store.flush()
    store.save({"version": 2, "bad": object()})
    with pytest.raises(StateStoreError, match="not JSON-compatible"):
        store.flush()
    assert store.load() == {"version": 1}


def test_initial_and_raw_text_and_failing_saves() -> None:
    assert InMemoryStateStore().load() is None
    store = InMemoryStateStore({"version": 1})
    assert store.load() == {"version": 1}
    store.save({"version": 2})
    store.set_raw("[1, 2]")  # replaces the pending snapshot too
    with pytest.raises(StateStoreError, match="not a JSON object"):
        store.load()
    store.set_raw("{")
    with pytest.raises(StateStoreError, match="not JSON"):
        store.load()
    store.fail_saves = True
    with pytest.raises(StateStoreError, match="set to fail"):
        store.save({"version": 3})
