"""Property tests: CPUSet behaves like a set of ints and round-trips through list syntax."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from nrirp.domain.cpuset import CPUSet

id_sets = st.frozensets(st.integers(min_value=0, max_value=9000), max_size=300)
dense_sets = st.builds(
    lambda lo, n: frozenset(range(lo, lo + n)),
    st.integers(min_value=0, max_value=5000),
    st.integers(min_value=0, max_value=5000),
)
any_sets = st.one_of(id_sets, dense_sets, st.builds(frozenset.union, id_sets, dense_sets))


@given(any_sets)
def test_text_round_trip(ids: frozenset[int]) -> None:
    s = CPUSet.from_ids(ids)
    assert CPUSet.parse(str(s)) == s
    assert s.ids() == sorted(ids)
    assert list(s) == sorted(ids)
    assert len(s) == len(ids)


@given(any_sets)
def test_ranges_are_maximal_and_cover_the_set(ids: frozenset[int]) -> None:
    ranges = CPUSet.from_ids(ids).ranges()
    covered = [i for lo, hi in ranges for i in range(lo, hi + 1)]
    assert covered == sorted(ids)
    for (_, hi), (lo, _) in itertools.pairwise(ranges):
        assert lo > hi + 1  # a gap separates consecutive runs


@given(any_sets, any_sets)
def test_algebra_matches_python_sets(a: frozenset[int], b: frozenset[int]) -> None:
    x, y = CPUSet.from_ids(a), CPUSet.from_ids(b)
    assert (x | y).ids() == sorted(a | b)
    assert (x & y).ids() == sorted(a & b)
    assert (x - y).ids() == sorted(a - b)
    assert (x ^ y).ids() == sorted(a ^ b)
    assert (x <= y) == (a <= b)
    assert (x < y) == (a < b)
    assert x.isdisjoint(y) == a.isdisjoint(b)
    assert (x == y) == (a == b)


@given(any_sets, st.integers(min_value=0, max_value=400))
def test_first_takes_the_smallest_ids(ids: frozenset[int], n: int) -> None:
    assert CPUSet.from_ids(ids).first(n).ids() == sorted(ids)[:n]


@given(st.lists(st.tuples(st.integers(0, 3000), st.integers(0, 60)), max_size=40))
def test_parse_accepts_unsorted_overlapping_ranges(spans: list[tuple[int, int]]) -> None:
    text = ",".join(f"{lo}-{lo + n}" if n else f"{lo}" for lo, n in spans)
    expected = {i for lo, n in spans for i in range(lo, lo + n + 1)}
    assert CPUSet.parse(text).ids() == sorted(expected)


@given(
    st.integers(0, 200),
    st.integers(0, 200),
    st.integers(1, 10).flatmap(lambda g: st.tuples(st.integers(1, g), st.just(g))),
)
def test_grouped_ranges_follow_the_kernel(lo: int, n: int, used_group: tuple[int, int]) -> None:
    used, group = used_group
    hi = lo + n
    expected = [i for i in range(lo, hi + 1) if (i - lo) % group < used]
    assert CPUSet.parse(f"{lo}-{hi}:{used}/{group}").ids() == expected


@given(any_sets)
def test_ids_are_a_fresh_list_every_time(ids: frozenset[int]) -> None:
    """Big sets keep their ids and text (shared by every set with the same ids); what callers
    get must still be theirs to change."""
    s = CPUSet.from_ids(ids)
    first = s.ids()
    first.append(-1)
    assert s.ids() == sorted(ids) == CPUSet(s.bits).ids()
    assert (
        str(s)
        == str(CPUSet(s.bits))
        == ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in s.ranges())
    )
    assert [i for i in s] == sorted(ids)
