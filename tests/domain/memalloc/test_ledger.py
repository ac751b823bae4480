"""The overcommit search against brute force over every node set (Hall's condition)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from nrirp.domain.memalloc.hall import overcommitted_set
from nrirp.domain.memalloc.ledger import DemandLedger, Overcommit


def _demand(usage: dict[int, int], nodes: int) -> int:
    return sum(b for z, b in usage.items() if z & ~nodes == 0)


def _capacity(caps: list[int], nodes: int) -> int:
    return sum(c for i, c in enumerate(caps) if nodes >> i & 1)


def _violated(usage: dict[int, int], caps: list[int]) -> list[int]:
    return [s for s in range(1, 1 << len(caps)) if _demand(usage, s) > _capacity(caps, s)]


@st.composite
def families(draw: st.DrawFn) -> tuple[list[int], dict[int, int]]:
    """Node capacities and per-zone demand over 2..7 nodes."""
    size = draw(st.integers(2, 7))
    caps = draw(st.lists(st.integers(0, 10), min_size=size, max_size=size))
    zones = draw(st.lists(st.integers(1, (1 << size) - 1), min_size=1, max_size=10, unique=True))
    usage = {z: draw(st.integers(0, 15)) for z in zones}
    return caps, usage


def _ledger(usage: dict[int, int], caps: list[int], union_limit: int) -> DemandLedger:
    ledger = DemandLedger(dict(enumerate(caps)), union_limit=union_limit)
    for i, (zone, size) in enumerate(usage.items()):
        ledger.add(zone, f"o{i}", size)
    return ledger


def _search(ledger: DemandLedger, touched: int = 0) -> Overcommit | None:
    return ledger.overcommit(touched)


@settings(max_examples=300, deadline=None)
@given(families())
def test_the_union_search_finds_a_smallest_overcommitted_set_iff_there_is_one(
    family: tuple[list[int], dict[int, int]],
) -> None:
    caps, usage = family
    violated = _violated(usage, caps)
    found = _search(_ledger(usage, caps, union_limit=1 << 20))
    if not violated:
        assert found is None
        return
    assert found is not None
    assert found.demand == _demand(usage, found.nodes) > found.capacity
    assert found.capacity == _capacity(caps, found.nodes)
    assert found.nodes.bit_count() == min(s.bit_count() for s in violated)


@settings(max_examples=300, deadline=None)
@given(families())
def test_the_flow_fallback_finds_an_overcommitted_set_iff_there_is_one(
    family: tuple[list[int], dict[int, int]],
) -> None:
    caps, usage = family
    violated = _violated(usage, caps)
    direct = overcommitted_set(usage, dict(enumerate(caps)))
    via_ledger = _search(_ledger(usage, caps, union_limit=0))
    if not violated:
        assert direct is None and via_ledger is None
        return
    assert direct in violated
    assert via_ledger is not None and via_ledger.nodes in violated


@settings(max_examples=300, deadline=None)
@given(families(), st.data())
def test_after_one_zone_grows_only_its_supersets_need_testing(
    family: tuple[list[int], dict[int, int]], data: st.DataObject
) -> None:
    caps, usage = family
    # make the family fit first, by giving every node all the capacity it could need
    caps = [c + sum(usage.values()) for c in caps]
    assert not _violated(usage, caps)
    zone = data.draw(st.sampled_from(sorted(usage)))
    grow = data.draw(st.integers(0, 4 * max(caps)))
    ledger = _ledger(usage, caps, union_limit=1 << 20)
    ledger.add(zone, "newcomer", grow)
    usage[zone] += grow
    found = _search(ledger, touched=zone)
    violated = _violated(usage, caps)
    assert (found is None) == (not violated)
    if found is not None:
        assert found.nodes & zone == zone and found.nodes in violated


def test_a_laminar_family_tests_only_its_zones() -> None:
    ledger = _ledger({0b0001: 1, 0b0011: 1, 0b1111: 1, 0b0100: 1}, [1, 1, 1, 1], union_limit=0)
    assert _search(ledger) is None
    ledger.add(0b0011, "x", 5)
    assert _search(ledger) == Overcommit(nodes=0b0011, demand=7, capacity=2)
    # the smallest overcommitted set that holds the touched zone
    assert _search(ledger, touched=0b0100) == Overcommit(nodes=0b1111, demand=9, capacity=4)


def test_a_crossing_family_is_tested_on_the_union_of_its_zones() -> None:
    # zones {0,1} and {1,2} each fit their nodes, but together they need more than 0-2 hold
    usage = {0b011: 2, 0b110: 2}
    caps = [1, 1, 1]
    assert _search(_ledger(usage, caps, union_limit=8)) == Overcommit(0b111, 4, 3)
    assert _search(_ledger(usage, caps, union_limit=0)) == Overcommit(0b111, 4, 3)


def test_the_ledger_forgets_empty_zones() -> None:
    ledger = DemandLedger({0: 4, 1: 4})
    ledger.add(0b01, "a", 3)
    ledger.add(0b01, "b", 0)
    ledger.remove(0b01, "a", 3)
    assert ledger.usage == {0b01: 0} and list(ledger.members) == [0b01]
    ledger.remove(0b01, "b", 0)
    assert ledger.usage == {} and ledger.members == {}
    assert ledger.demand(0b11) == 0
    assert ledger.capacity(0b11) == 8 and ledger.capacity(0b110) == 4


@settings(max_examples=300, deadline=None)
@given(families(), st.data())
def test_narrowing_fits_agrees_with_brute_force_after_the_move(
    family: tuple[list[int], dict[int, int]], data: st.DataObject
) -> None:
    caps, usage = family
    caps = [c + sum(usage.values()) // 2 for c in caps]
    zone = data.draw(st.sampled_from(sorted(usage)))
    narrower = data.draw(st.sampled_from([z for z in range(1, zone + 1) if z & ~zone == 0]))
    size = data.draw(st.integers(0, 12))
    ledger = _ledger(usage, caps, union_limit=1 << 20)
    ledger.add(zone, "mover", size)
    usage[zone] += size
    if _violated(usage, caps):
        return  # the premise: everything fits before the move
    verdict = ledger.narrowing_fits(zone, narrower, size)
    after = dict(usage)
    after[zone] -= size
    after[narrower] = after.get(narrower, 0) + size
    fits = not _violated(after, caps)
    if verdict is None:
        assert narrower not in usage  # only a zone not in use needs a trial move
    else:
        assert verdict == fits
    if not fits:
        assert verdict is not True
