"""CPUSet: Linux list syntax, algebra, conversions and the cattrs hooks."""

from __future__ import annotations

import pickle

import pytest

from nrirp.domain.cpuset import (
    EMPTY,
    CPUSet,
    CPUSetError,
    structure_cpuset,
    unstructure_cpuset,
)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("", []),
        ("\n", []),
        ("0", [0]),
        ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
        ("0-3\n", [0, 1, 2, 3]),
        (" 1 - 3 , 5 ", [1, 2, 3, 5]),
        ("8,0-1", [0, 1, 8]),
        ("0-3,2-5", [0, 1, 2, 3, 4, 5]),
        ("0-7:2/4", [0, 1, 4, 5]),
        ("1-9:1/3", [1, 4, 7]),
        ("0-5:3/3", [0, 1, 2, 3, 4, 5]),
        ("4095", [4095]),
    ],
)
def test_parse(text: str, ids: list[int]) -> None:
    assert CPUSet.parse(text).ids() == ids


@pytest.mark.parametrize(
    ("ids", "text"),
    [
        ([], ""),
        ([0], "0"),
        ([0, 1], "0-1"),
        ([0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11"),
        ([5, 7, 9], "5,7,9"),
        ([4096, 4097, 8191], "4096-4097,8191"),
    ],
)
def test_str_is_canonical_list_syntax(ids: list[int], text: str) -> None:
    assert str(CPUSet.from_ids(ids)) == text


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1,,2", "empty element"),
        (",", "empty element"),
        ("a", "bad element 'a'"),
        ("3-1", "reversed range '3-1'"),
        ("-1", "bad element '-1'"),
        ("+1", "bad element '+1'"),
        ("1_0", "bad element '1_0'"),
        ("\u0663", "bad element"),  # an Arabic-Indic digit: int() would accept it
        ("0-", "bad element"),
        ("0-3-5", "bad element"),
        ("0x3", "bad element"),
        ("0-7:0/4", "bad group"),
        ("0-7:5/4", "bad group"),
        ("0-7:2/0", "bad group"),
        ("0-9999999999", "too large"),
    ],
)
def test_malformed_text_raises_and_quotes_it(text: str, fragment: str) -> None:
    with pytest.raises(CPUSetError) as info:
        CPUSet.parse(text)
    assert repr(text) in str(info.value)
    assert fragment in str(info.value)


def test_error_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid cpu list"):
        CPUSet.parse("x")


def test_set_algebra() -> None:
    a, b = CPUSet.parse("0-7"), CPUSet.parse("4-11")
    assert str(a | b) == "0-11"
    assert str(a & b) == "4-7"
    assert str(a - b) == "0-3"
    assert str(a ^ b) == "0-3,8-11"
    assert a.union(b, CPUSet.of(20)) == CPUSet.parse("0-11,20")
    assert a.intersection(b, CPUSet.parse("5")) == CPUSet.of(5)
    assert a.difference(b, CPUSet.of(0)) == CPUSet.parse("1-3")
    assert a.add(9, 10) == CPUSet.parse("0-7,9-10")
    assert a.remove(0, 100) == CPUSet.parse("1-7")


def test_comparisons_are_subset_relations() -> None:
    small, big = CPUSet.parse("1-2"), CPUSet.parse("0-3")
    assert small <= big and small < big and big >= small and big > small
    assert not big <= small
    assert small <= small and not small < small
    assert small.issubset(big) and big.issuperset(small)
    assert CPUSet.of(9).isdisjoint(big) and not small.isdisjoint(big)


def test_container_protocol() -> None:
    s = CPUSet.parse("3,1,2048")
    assert list(s) == [1, 3, 2048]
    assert len(s) == 3 and bool(s) and not bool(EMPTY)
    assert 2048 in s and 2 not in s and -1 not in s and "1" not in s


def test_min_max_first_ranges() -> None:
    s = CPUSet.parse("4-6,9,100-101")
    assert (s.min(), s.max()) == (4, 101)
    assert s.first(0) == EMPTY
    assert s.first(4) == CPUSet.parse("4-6,9")
    assert s.first(99) == s
    assert s.ranges() == [(4, 6), (9, 9), (100, 101)]
    with pytest.raises(ValueError):
        EMPTY.min()
    with pytest.raises(ValueError):
        EMPTY.max()


def test_range_constructor() -> None:
    assert CPUSet.range(2, 5) == CPUSet.parse("2-4")
    assert CPUSet.range(5, 5) == EMPTY
    assert CPUSet.range(5, 2) == EMPTY


def test_negative_ids_are_rejected() -> None:
    with pytest.raises(CPUSetError, match="negative id -1"):
        CPUSet.from_ids([0, -1])


def test_values_are_hashable_immutable_and_picklable() -> None:
    a, b = CPUSet.parse("0-3"), CPUSet.from_ids([3, 2, 1, 0])
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    with pytest.raises(AttributeError):
        a.bits = 0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(a)) == a
    assert repr(a) == "CPUSet('0-3')"


def test_big_sparse_sets() -> None:
    ids = list(range(0, 8192, 2))
    s = CPUSet.from_ids(ids)
    assert len(s) == 4096 and s.ids() == ids
    assert CPUSet.parse(str(s)) == s
    assert len(s | CPUSet.from_ids(range(1, 8192, 2))) == 8192


def test_cattrs_hooks() -> None:
    assert structure_cpuset("0-2") == CPUSet.parse("0-2")
    assert structure_cpuset(5) == CPUSet.of(5)
    assert structure_cpuset([3, 1]) == CPUSet.of(1, 3)
    assert structure_cpuset(CPUSet.of(1)) == CPUSet.of(1)
    assert unstructure_cpuset(CPUSet.parse("1,3-4")) == "1,3-4"
    for bad in (True, 1.5, [1, "2"], [True], {"a": 1}, "x"):
        with pytest.raises(CPUSetError):
            structure_cpuset(bad)
